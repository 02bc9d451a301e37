package app

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// Settings is one conversation's configuration: engine, cache policy and
// sampling. The zero value is not valid; use DefaultSettings.
type Settings struct {
	Engine          string  `json:"engine"` // auto | cpu | metal
	Capacity        int     `json:"capacity"`
	StorageDType    string  `json:"storage_dtype"`
	InitialCapacity int     `json:"initial_capacity"`
	Windows         string  `json:"windows"`
	Temperature     float64 `json:"temperature"`
	TopK            int     `json:"top_k"`
	TopP            float64 `json:"top_p"`
	Seed            int64   `json:"seed"`
	MaxNewTokens    int     `json:"max_new_tokens"`
	SystemPrompt    string  `json:"system_prompt"`
	// Numerics is the CPU engine's numerics mode: "" = fast (the default
	// for quantized weights), "exact" = fp32, the reference (issue 38).
	Numerics string `json:"numerics,omitempty"`
}

// LoadNumerics is the loader's numerics mode for s: none for the native
// engine (it has no modes), else s.Numerics, fast by default.
func (s Settings) LoadNumerics() string {
	if c, _ := engine.Canonical(s.Engine); c == engine.MLX {
		return ""
	}
	if s.Numerics == "" {
		return engine.NumericsFast
	}
	return s.Numerics
}

// Chat's sampling when the model says nothing (generation_config.json
// without sampling fields): varied replies, so Regenerate gives another
// one. Greedy is one click away (ChatState.Greedy, Chat.SetGreedy).
const (
	DefaultTemperature = 0.7
	DefaultTopP        = 0.9
)

// DefaultSettings are the runner's cache defaults with chat sampling
// (temperature 0.7, top-p 0.9).
func DefaultSettings(engine string) Settings {
	if engine == "" {
		engine = "auto"
	}
	return Settings{Engine: engine, StorageDType: "bf16", InitialCapacity: -1, Temperature: DefaultTemperature,
		TopP: DefaultTopP, MaxNewTokens: 64}
}

// genConfig is the sampling part of a Hugging Face generation_config.json.
type genConfig struct {
	DoSample    *bool    `json:"do_sample"`
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	TopK        *int     `json:"top_k"`
}

// ModelDefaults are DefaultSettings with the KV storage dtype of the
// model's get_activation_dtype where it publishes one, and the sampling the model's
// generation_config.json (next to the .pte) asks for, when it has sampling
// fields: a field it leaves out takes Hugging Face's default (temperature
// 1, top-p 1, no top-k); do_sample false is greedy.
func ModelDefaults(m *ModelInfo, engine string) Settings {
	s := DefaultSettings(engine)
	if m == nil {
		return s
	}
	if dt := m.Metadata.ActivationDType; dt != 0 {
		// A newer export names its activation dtype; its runner stores the
		// KV cache in it unless told otherwise (docs/inspect.md).
		s.StorageDType = dt.Flag()
	}
	return withGenConfig(s, m)
}

// withGenConfig is s with the sampling of m's generation_config.json, when
// it has sampling fields.
func withGenConfig(s Settings, m *ModelInfo) Settings {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(m.Path), "generation_config.json"))
	if err != nil {
		return s
	}
	var g genConfig
	if json.Unmarshal(b, &g) != nil || g.DoSample == nil && g.Temperature == nil && g.TopP == nil && g.TopK == nil {
		return s
	}
	s.Temperature, s.TopP, s.TopK = 1, 1, 0
	if g.Temperature != nil && *g.Temperature >= 0 && *g.Temperature <= 10 {
		s.Temperature = *g.Temperature
	}
	if g.TopP != nil && *g.TopP > 0 && *g.TopP <= 1 {
		s.TopP = *g.TopP
	}
	if g.TopK != nil && *g.TopK >= 0 {
		s.TopK = *g.TopK
	}
	if g.DoSample != nil && !*g.DoSample {
		s.Temperature, s.TopP, s.TopK = 0, 1, 0
	}
	return s
}

// Policy is the cache part of the settings.
func (s Settings) Policy() kvcache.Policy {
	return kvcache.Policy{Capacity: s.Capacity, StorageDType: s.StorageDType, InitialCapacity: s.InitialCapacity, Windows: s.Windows}
}

// Engines are the choices of the engine selector (the engine registry's).
func Engines() []string { return engine.Choices() }

// DTypes are the choices of the storage dtype selector.
var DTypes = []string{"bf16", "fp16", "fp32"}

// SettingsForm is the settings sheet's state: the text of each field as the
// user typed it, and what is wrong with it. Widgets bind to the fields; the
// form never holds a value the sheet does not show.
type SettingsForm struct {
	Engine          string
	Capacity        string // "" = the model's maximum
	StorageDType    string
	InitialCapacity string // "" = 512
	Windows         string // "" = the model's own
	Temperature     string
	TopK            string
	TopP            string
	Seed            string
	MaxNewTokens    string
	SystemPrompt    string
	Numerics        string // fast | exact (the CPU engine's); "" is fast, the sheet shows it so

	// Holds is how many tokens the open conversation holds: a capacity
	// that cannot take them and one more is refused here, not after the
	// reload (where the history would silently not fit).
	Holds int

	model *ModelInfo
}

// NewSettingsForm fills a form from s for model (whose cache fields are
// fixed unless it is off-graph). model may be nil before one is chosen.
func NewSettingsForm(s Settings, model *ModelInfo) *SettingsForm {
	f := &SettingsForm{
		Engine:       s.Engine,
		StorageDType: s.StorageDType,
		Windows:      s.Windows,
		Temperature:  strconv.FormatFloat(s.Temperature, 'g', -1, 64),
		TopK:         strconv.Itoa(s.TopK),
		TopP:         strconv.FormatFloat(s.TopP, 'g', -1, 64),
		Seed:         strconv.FormatInt(s.Seed, 10),
		MaxNewTokens: strconv.Itoa(s.MaxNewTokens),
		SystemPrompt: s.SystemPrompt,
		Numerics:     s.Numerics,
		model:        model,
	}
	if s.Capacity > 0 {
		f.Capacity = strconv.Itoa(s.Capacity)
	}
	if s.InitialCapacity >= 0 {
		f.InitialCapacity = strconv.Itoa(s.InitialCapacity)
	}
	if f.StorageDType == "" {
		f.StorageDType = "bf16"
	}
	return f
}

// CacheEditable reports whether the model lets the user shape its cache.
func (f *SettingsForm) CacheEditable() bool { return f.model != nil && f.model.Layout != nil }

// FieldError is a message about one field of the form.
type FieldError struct {
	Field string // the form field's name, e.g. "Capacity"
	Msg   string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// Result is what the form means now: the settings, the cache config they
// build (nil for in-graph models or when invalid) and every problem.
type Result struct {
	Settings Settings
	Cache    *kvcache.Config
	Errors   []FieldError
}

// OK reports whether the form can be applied.
func (r Result) OK() bool { return len(r.Errors) == 0 }

// ErrorFor returns the message for field, or "".
func (r Result) ErrorFor(field string) string {
	for _, e := range r.Errors {
		if e.Field == field {
			return e.Msg
		}
	}
	return ""
}

// Summary is the cache line the sheet shows under the fields.
func (r Result) Summary() string {
	if r.Cache == nil {
		return ""
	}
	_, initial, full := r.Cache.Memory()
	return fmt.Sprintf("%s — KV memory %s at start, %s at capacity", r.Cache.LayersSummary(), FormatBytes(initial), FormatBytes(full))
}

// Evaluate parses every field and builds the cache config with the one
// builder the engines use, so the messages are the engine's own rules.
func (f *SettingsForm) Evaluate() Result {
	var r Result
	s := &r.Settings
	fp := fieldParser{r: &r}

	s.Engine = strings.TrimSpace(f.Engine)
	if s.Engine == "" {
		s.Engine = "auto"
	}
	if _, err := engine.Canonical(s.Engine); err != nil {
		fp.bad("Engine", fmt.Sprintf("%q is not an engine; choose %s", s.Engine, strings.Join(Engines(), ", ")))
	}

	// Cache policy: kvcache.Build has the final word; the int parsing here
	// only turns text into numbers.
	s.Capacity = fp.int("Capacity", f.Capacity, 0, 1)
	s.StorageDType = strings.TrimSpace(f.StorageDType)
	s.InitialCapacity = fp.int("InitialCapacity", f.InitialCapacity, -1, 0)
	s.Windows = strings.TrimSpace(f.Windows)
	if f.CacheEditable() {
		reported := func(field string) bool { return r.ErrorFor(field) != "" }
		r.Cache = f.evaluateCache(s.Policy(), fp.bad, reported, reported("Capacity") || reported("InitialCapacity"))
	}

	s.Temperature = fp.float("Temperature", f.Temperature, 0, 0, 10)
	s.TopK = fp.int("TopK", f.TopK, 0, 0)
	s.TopP = fp.float("TopP", f.TopP, 1, 0, 1)
	s.Seed = fp.int64("Seed", f.Seed)
	if r.Cache != nil && f.Holds > 0 && r.Cache.Capacity <= f.Holds {
		fp.bad("Capacity", f.holdsMessage())
	}
	s.MaxNewTokens = fp.int("MaxNewTokens", f.MaxNewTokens, 64, 1)
	if r.Cache != nil && s.MaxNewTokens > r.Cache.Capacity {
		fp.bad("MaxNewTokens", fmt.Sprintf("%d is more than the cache holds (%d tokens)", s.MaxNewTokens, r.Cache.Capacity))
	}
	s.SystemPrompt, s.Numerics = f.SystemPrompt, strings.TrimSpace(f.Numerics)
	if s.Numerics != "" && !contains(engine.NumericsModes(), s.Numerics) {
		fp.bad("Numerics", fmt.Sprintf("%q is not a numerics mode; choose %s", s.Numerics, strings.Join(engine.NumericsModes(), " or ")))
	}
	return r
}

// holdsMessage says why the capacity cannot hold the conversation, and
// what does: a larger capacity, or, when the conversation fills the
// model's whole context, an undo first.
func (f *SettingsForm) holdsMessage() string {
	if f.model != nil && f.model.MaxCtxLen > 0 && f.Holds+1 > f.model.MaxCtxLen {
		return fmt.Sprintf("the conversation holds %d tokens, the model's whole context (%d): undo turns or reset first to apply settings", f.Holds, f.model.MaxCtxLen)
	}
	return fmt.Sprintf("at least %d: the conversation holds %d tokens (undo turns or reset first to go lower)", f.Holds+1, f.Holds)
}

// fieldParser turns the sheet's texts into numbers, recording a message
// for each field that does not parse or is out of range (the default is
// used then). An empty field is its default.
type fieldParser struct{ r *Result }

func (p fieldParser) bad(field, msg string) { p.r.Errors = append(p.r.Errors, FieldError{field, msg}) }

func (p fieldParser) int(field, text string, def, lo int) int {
	text = strings.TrimSpace(text)
	if text == "" {
		return def
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		p.bad(field, fmt.Sprintf("%q is not a whole number", text))
		return def
	}
	if v < lo {
		p.bad(field, fmt.Sprintf("must be at least %d", lo))
		return def
	}
	return v
}

func (p fieldParser) int64(field, text string) int64 {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		p.bad(field, fmt.Sprintf("%q is not a whole number", text))
	}
	return v
}

func (p fieldParser) float(field, text string, def, lo, hi float64) float64 {
	text = strings.TrimSpace(text)
	if text == "" {
		return def
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.bad(field, fmt.Sprintf("%q is not a number", text))
		return def
	}
	if v < lo || v > hi {
		p.bad(field, fmt.Sprintf("must be between %g and %g", lo, hi))
		return def
	}
	return v
}

// evaluateCache builds the config with the one builder the engines use,
// which names every wrong field (the model's context bounds the capacity
// there too). parseFailed: a number did not parse (already reported, and
// the config is not built from a guess).
func (f *SettingsForm) evaluateCache(p kvcache.Policy, bad func(field, msg string), reported func(field string) bool, parseFailed bool) *kvcache.Config {
	cfg, err := f.model.CacheConfig(p)
	if err == nil {
		if parseFailed {
			return nil
		}
		return cfg
	}
	fes := kvcache.FieldErrors(err)
	for _, fe := range fes {
		if field := settingsField[fe.Field]; !reported(field) {
			bad(field, fe.Msg)
		}
	}
	if len(fes) == 0 { // the file's layout, not a field
		bad("Capacity", err.Error())
	}
	return nil
}

// settingsField is the sheet's field of each cache policy field.
var settingsField = map[kvcache.Field]string{
	kvcache.FieldCapacity: "Capacity", kvcache.FieldStorageDType: "StorageDType",
	kvcache.FieldWindows: "Windows", kvcache.FieldInitialCapacity: "InitialCapacity",
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FormatBytes prints a byte count the way the library does: 1.5 MiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
