package app

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

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
}

// DefaultSettings are the runner's defaults with greedy sampling.
func DefaultSettings(engine string) Settings {
	if engine == "" {
		engine = "auto"
	}
	return Settings{Engine: engine, StorageDType: "bf16", InitialCapacity: -1, TopP: 1, MaxNewTokens: 64}
}

// Policy is the cache part of the settings.
func (s Settings) Policy() kvcache.Policy {
	return kvcache.Policy{Capacity: s.Capacity, StorageDType: s.StorageDType, InitialCapacity: s.InitialCapacity, Windows: s.Windows}
}

// Engines are the choices of the engine selector.
var Engines = []string{"auto", "cpu", "metal"}

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
	bad := func(field, msg string) { r.Errors = append(r.Errors, FieldError{field, msg}) }

	s.Engine = strings.TrimSpace(f.Engine)
	if s.Engine == "" {
		s.Engine = "auto"
	}
	if !contains(Engines, s.Engine) {
		bad("Engine", fmt.Sprintf("%q is not an engine; choose auto, cpu or metal", s.Engine))
	}

	intField := func(field, text string, def, lo int) int {
		text = strings.TrimSpace(text)
		if text == "" {
			return def
		}
		v, err := strconv.Atoi(text)
		if err != nil {
			bad(field, fmt.Sprintf("%q is not a whole number", text))
			return def
		}
		if v < lo {
			bad(field, fmt.Sprintf("must be at least %d", lo))
			return def
		}
		return v
	}
	floatField := func(field, text string, def, lo, hi float64) float64 {
		text = strings.TrimSpace(text)
		if text == "" {
			return def
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			bad(field, fmt.Sprintf("%q is not a number", text))
			return def
		}
		if v < lo || v > hi {
			bad(field, fmt.Sprintf("must be between %g and %g", lo, hi))
			return def
		}
		return v
	}

	// Cache policy: kvcache.Build has the final word; the int parsing here
	// only turns text into numbers.
	s.Capacity = intField("Capacity", f.Capacity, 0, 1)
	s.StorageDType = strings.TrimSpace(f.StorageDType)
	s.InitialCapacity = intField("InitialCapacity", f.InitialCapacity, -1, 0)
	s.Windows = strings.TrimSpace(f.Windows)
	if f.CacheEditable() && r.ErrorFor("Capacity") == "" && r.ErrorFor("InitialCapacity") == "" {
		cfg, err := f.model.CacheConfig(s.Policy())
		if err != nil {
			bad(cacheField(err), err.Error())
		} else {
			r.Cache = cfg
		}
	}

	s.Temperature = floatField("Temperature", f.Temperature, 0, 0, 10)
	s.TopK = intField("TopK", f.TopK, 0, 0)
	s.TopP = floatField("TopP", f.TopP, 1, 0, 1)
	if t := strings.TrimSpace(f.Seed); t != "" {
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			bad("Seed", fmt.Sprintf("%q is not a whole number", t))
		}
		s.Seed = v
	}
	s.MaxNewTokens = intField("MaxNewTokens", f.MaxNewTokens, 64, 1)
	if r.Cache != nil && s.MaxNewTokens > r.Cache.Capacity {
		bad("MaxNewTokens", fmt.Sprintf("%d is more than the cache holds (%d tokens)", s.MaxNewTokens, r.Cache.Capacity))
	}
	s.SystemPrompt = f.SystemPrompt
	return r
}

// cacheField says which field a kvcache.Build error is about.
func cacheField(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "initial capacity"):
		return "InitialCapacity"
	case strings.Contains(msg, "dtype"):
		return "StorageDType"
	case strings.Contains(msg, "windows"):
		return "Windows"
	}
	if errors.Is(err, kvcache.ErrCacheFull) {
		return "Capacity"
	}
	return "Capacity"
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
