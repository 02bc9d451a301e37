// Per-model presets (issue 40 item 2): the settings New starts a
// conversation with, edited in the library. Precedence: the preset, then
// the model's generation_config.json, then the app's defaults.

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Preset is what a model's preset sets: the system prompt, the sampling,
// the reply budget, the capacity, the KV storage dtype and the CPU
// engine's numerics. The engine (Preferences), the windows and the initial
// capacity stay the model's and the app's.
type Preset struct {
	SystemPrompt string  `json:"system_prompt"`
	Temperature  float64 `json:"temperature"`
	TopK         int     `json:"top_k"`
	TopP         float64 `json:"top_p"`
	Seed         int64   `json:"seed"`
	MaxNewTokens int     `json:"max_new_tokens"`
	Capacity     int     `json:"capacity"` // 0: the model's maximum
	StorageDType string  `json:"storage_dtype"`
	Numerics     string  `json:"numerics,omitempty"`
}

// PresetOf is the preset part of s.
func PresetOf(s Settings) Preset {
	return Preset{SystemPrompt: s.SystemPrompt, Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, Seed: s.Seed,
		MaxNewTokens: s.MaxNewTokens, Capacity: s.Capacity, StorageDType: s.StorageDType, Numerics: s.Numerics}
}

// Apply is s with the preset's fields.
func (p Preset) Apply(s Settings) Settings {
	s.SystemPrompt, s.Temperature, s.TopK, s.TopP, s.Seed = p.SystemPrompt, p.Temperature, p.TopK, p.TopP, p.Seed
	s.MaxNewTokens, s.Capacity, s.StorageDType, s.Numerics = p.MaxNewTokens, p.Capacity, p.StorageDType, p.Numerics
	return s
}

// Summary is the library's line about a preset.
func (p Preset) Summary() string {
	parts := []string{fmt.Sprintf("temperature %g", p.Temperature)}
	if p.Temperature == 0 {
		parts[0] = "greedy"
	}
	if p.Capacity > 0 {
		parts = append(parts, fmt.Sprintf("capacity %d", p.Capacity))
	}
	parts = append(parts, "KV "+p.StorageDType, fmt.Sprintf("max %d new tokens", p.MaxNewTokens))
	if p.Numerics != "" {
		parts = append(parts, "numerics "+p.Numerics)
	}
	if p.SystemPrompt != "" {
		parts = append(parts, "system prompt "+quoteShort(p.SystemPrompt, 40))
	}
	return strings.Join(parts, " · ")
}

// quoteShort is text's first line, at most n runes, quoted.
func quoteShort(text string, n int) string {
	line, _, more := strings.Cut(strings.TrimSpace(text), "\n")
	if r := []rune(line); len(r) > n {
		line, more = string(r[:n]), true
	}
	if more {
		line += "…"
	}
	return "“" + line + "”"
}

// PresetStore keeps the presets (the store adapter has it).
type PresetStore interface {
	Preset(ctx context.Context, modelPath string) (Preset, bool, error)
	SavePreset(ctx context.Context, modelPath string, p Preset) error
	DeletePreset(ctx context.Context, modelPath string) error
}

// PresetFields are the settings sheet's fields a preset editor shows.
var PresetFields = []string{"Capacity", "StorageDType", "Temperature", "TopK", "TopP", "Seed", "MaxNewTokens", "Numerics", "SystemPrompt"}

// Presets is the presets' view-model: the defaults New uses and the
// library's editor.
type Presets struct{ store PresetStore }

// NewPresets returns the presets over store (nil: no database, no presets).
func NewPresets(store PresetStore) *Presets { return &Presets{store: store} }

// presetsOf is the presets a chat store keeps, when it keeps any.
func presetsOf(s ChatStore) *Presets {
	if ps, ok := s.(PresetStore); ok {
		return NewPresets(ps)
	}
	return NewPresets(nil)
}

// Defaults are the settings New starts a conversation with for m: its
// preset over ModelDefaults (generation_config.json over the app's
// defaults). A preset that cannot be read is left out.
func (p *Presets) Defaults(ctx context.Context, m *ModelInfo, engine string) Settings {
	s := ModelDefaults(m, engine)
	if p == nil || p.store == nil || m == nil {
		return s
	}
	if pr, ok, err := p.store.Preset(ctx, m.Path); err == nil && ok {
		return pr.Apply(s)
	}
	return s
}

// Get is m's preset; ok is false when it has none.
func (p *Presets) Get(ctx context.Context, m *ModelInfo) (Preset, bool, error) {
	if p == nil || p.store == nil || m == nil {
		return Preset{}, false, nil
	}
	return p.store.Preset(ctx, m.Path)
}

// Form is the editor's form for m: its preset, or what New would use now.
func (p *Presets) Form(ctx context.Context, m *ModelInfo, engine string) *SettingsForm {
	return NewSettingsForm(p.Defaults(ctx, m, engine), m)
}

// ErrNoPresetStore: presets are kept in the database, which is not open.
var ErrNoPresetStore = errors.New("presets are kept in the database, which is not open: see the banner")

// Save makes the form's preset fields m's preset; a form with fields to fix
// is refused, naming them.
func (p *Presets) Save(ctx context.Context, m *ModelInfo, f *SettingsForm) error {
	if p == nil || p.store == nil {
		return ErrNoPresetStore
	}
	r := f.Evaluate()
	if !r.OK() {
		var msgs []string
		for _, e := range r.Errors {
			msgs = append(msgs, fieldLabel(e.Field)+": "+e.Msg)
		}
		return fmt.Errorf("the preset was not saved: %s", strings.Join(msgs, "; "))
	}
	return p.store.SavePreset(ctx, m.Path, PresetOf(r.Settings))
}

// Clear removes m's preset: New goes back to generation_config.json and
// the app's defaults.
func (p *Presets) Clear(ctx context.Context, m *ModelInfo) error {
	if p == nil || p.store == nil {
		return ErrNoPresetStore
	}
	return p.store.DeletePreset(ctx, m.Path)
}

// The store adapter keeps presets as the store's JSON.

func (s *storeAdapter) Preset(ctx context.Context, path string) (Preset, bool, error) {
	raw, ok, err := s.db.Preset(ctx, path)
	if err != nil || !ok {
		return Preset{}, false, err
	}
	var p Preset
	if err := json.Unmarshal(raw, &p); err != nil {
		return Preset{}, false, fmt.Errorf("the preset of %s cannot be read: %w", ModelName(path), err)
	}
	return p, true, nil
}

func (s *storeAdapter) SavePreset(ctx context.Context, path string, p Preset) error {
	js, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.db.SavePreset(ctx, path, js)
}

func (s *storeAdapter) DeletePreset(ctx context.Context, path string) error {
	return s.db.DeletePreset(ctx, path)
}

// Defaults are the settings New uses for m: its preset, else its
// generation_config.json's sampling, else the app's defaults.
func (c *Chat) Defaults(m *ModelInfo, engine string) Settings {
	return c.presets.Defaults(context.Background(), m, engine)
}
