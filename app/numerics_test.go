package app

import "testing"

// The numerics setting: fast by default, exact when set, none for the
// native engine (which has no modes); the header's engine line says when
// the fast mode ran.
func TestNumericsSetting(t *testing.T) {
	for _, c := range []struct{ engine, numerics, want string }{
		{"auto", "", "fast"}, {"cpu", "exact", "exact"}, {"cpu", "fast", "fast"}, {"mlx", "", ""}, {"metal", "exact", ""},
	} {
		s := DefaultSettings(c.engine)
		s.Numerics = c.numerics
		if got := s.LoadNumerics(); got != c.want {
			t.Errorf("engine %s numerics %q: loads %q, want %q", c.engine, c.numerics, got, c.want)
		}
		f := NewSettingsForm(s, nil)
		if r := f.Evaluate(); r.Settings.Numerics != c.numerics {
			t.Errorf("the form lost the setting: %q, want %q", r.Settings.Numerics, c.numerics)
		}
	}
	st := ChatState{Loaded: true, Engine: EngineInfo{Name: "cpu", Device: "cpu", Numerics: "fast"}}
	if got := EngineLine(st); got != "engine: cpu on cpu, numerics fast" {
		t.Errorf("engine line %q", got)
	}
	st.Engine.Numerics = ""
	if got := EngineLine(st); got != "engine: cpu on cpu" {
		t.Errorf("exact engine line %q", got)
	}
}
