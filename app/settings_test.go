package app

import (
	"strings"
	"testing"

	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

func TestSettingsFormDefaultsBuildTheModelsCache(t *testing.T) {
	m := inspect(t, fixtures.PTE(fixtures.Gemma3))
	f := NewSettingsForm(DefaultSettings("auto"), m)
	if !f.CacheEditable() || f.Capacity != "" || f.InitialCapacity != "" || f.StorageDType != "bf16" {
		t.Fatalf("form %+v", f)
	}
	r := f.Evaluate()
	if !r.OK() {
		t.Fatalf("defaults invalid: %v", r.Errors)
	}
	want, err := kvcache.Build(*m.Layout, kvcache.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if r.Cache.Summary() != want.Summary() {
		t.Errorf("summary\n%s\nwant\n%s", r.Cache.Summary(), want.Summary())
	}
	if s := r.Summary(); !strings.HasPrefix(s, "4 layers: 1 flat + 3 ring(window 8) — KV memory ") {
		t.Errorf("sheet summary %q", s)
	}
	if r.Settings != DefaultSettings("auto") {
		t.Errorf("round trip %+v", r.Settings)
	}
}

func TestSettingsFormMessagesComeFromTheCacheRules(t *testing.T) {
	m := inspect(t, fixtures.PTE(fixtures.Gemma3))
	cases := []struct {
		edit  func(*SettingsForm)
		field string
		msg   string
	}{
		{func(f *SettingsForm) { f.Capacity = "lots" }, "Capacity", `"lots" is not a whole number`},
		{func(f *SettingsForm) { f.Capacity = "0" }, "Capacity", "must be at least 1"},
		{func(f *SettingsForm) { f.Capacity = "99999999" }, "Capacity", "at most 128, the model was exported for 128 tokens"},
		{func(f *SettingsForm) { f.Capacity = "200" }, "Capacity", "at most 128"},
		{func(f *SettingsForm) { f.InitialCapacity = "-4" }, "InitialCapacity", "must be at least 0"},
		{func(f *SettingsForm) { f.StorageDType = "int8" }, "StorageDType", `"int8" is unknown: choose bf16, fp16 or fp32`},
		{func(f *SettingsForm) { f.Windows = "8,x" }, "Windows", `"8,x": "x" is not a window size`},
		{func(f *SettingsForm) { f.Engine = "gpu" }, "Engine", "choose auto, cpu, mlx"},
		{func(f *SettingsForm) { f.Temperature = "hot" }, "Temperature", "not a number"},
		{func(f *SettingsForm) { f.Temperature = "-1" }, "Temperature", "between 0 and 10"},
		{func(f *SettingsForm) { f.TopP = "1.5" }, "TopP", "between 0 and 1"},
		{func(f *SettingsForm) { f.TopK = "-1" }, "TopK", "at least 0"},
		{func(f *SettingsForm) { f.Seed = "1.5" }, "Seed", "not a whole number"},
		{func(f *SettingsForm) { f.MaxNewTokens = "0" }, "MaxNewTokens", "at least 1"},
		{func(f *SettingsForm) { f.Capacity = "32"; f.MaxNewTokens = "64" }, "MaxNewTokens", "more than the cache holds (32 tokens)"},
	}
	for _, c := range cases {
		f := NewSettingsForm(DefaultSettings("cpu"), m)
		c.edit(f)
		r := f.Evaluate()
		if r.OK() {
			t.Errorf("%s: accepted", c.field)
			continue
		}
		if got := r.ErrorFor(c.field); !strings.Contains(got, c.msg) {
			t.Errorf("%s: message %q, want %q (all: %v)", c.field, got, c.msg, r.Errors)
		}
		if len(r.Errors) != 1 {
			t.Errorf("%s: %d errors %v", c.field, len(r.Errors), r.Errors)
		}
		for _, e := range r.Errors {
			if strings.Contains(e.Msg, "--") {
				t.Errorf("%s: message quotes a command-line flag: %q", e.Field, e.Msg)
			}
		}
	}
	// Three wrong cache fields: three messages, each under its field.
	f := NewSettingsForm(DefaultSettings("cpu"), m)
	f.Capacity, f.StorageDType, f.Windows = "4000", "int8", "x"
	if r := f.Evaluate(); len(r.Errors) != 3 || r.ErrorFor("Capacity") == "" || r.ErrorFor("StorageDType") == "" || r.ErrorFor("Windows") == "" {
		t.Errorf("three wrong fields: %v", r.Errors)
	}
	// A combination only the builder refuses is still named.
	f = NewSettingsForm(DefaultSettings("cpu"), m)
	f.InitialCapacity = "99999999"
	if r := f.Evaluate(); r.ErrorFor("InitialCapacity") == "" {
		t.Errorf("initial capacity above the limit: %v", r.Errors)
	}
}

func TestSettingsFormAppliesChoices(t *testing.T) {
	m := inspect(t, fixtures.PTE(fixtures.Gemma3))
	f := NewSettingsForm(DefaultSettings("cpu"), m)
	f.Capacity, f.StorageDType, f.InitialCapacity, f.Windows = "64", "fp16", "16", "0"
	f.Temperature, f.TopK, f.TopP, f.Seed, f.MaxNewTokens, f.SystemPrompt = "0.7", "40", "0.9", "42", "20", "Be brief."
	r := f.Evaluate()
	if !r.OK() {
		t.Fatal(r.Errors)
	}
	want := Settings{Engine: "cpu", Capacity: 64, StorageDType: "fp16", InitialCapacity: 16, Windows: "0",
		Temperature: 0.7, TopK: 40, TopP: 0.9, Seed: 42, MaxNewTokens: 20, SystemPrompt: "Be brief."}
	if r.Settings != want {
		t.Errorf("settings %+v\nwant %+v", r.Settings, want)
	}
	// windows "0" makes every layer flat
	if got := r.Cache.LayersSummary(); got != "4 layers: 4 flat" || r.Cache.Capacity != 64 || r.Cache.InitialCapacity != 16 {
		t.Errorf("cache %q capacity %d initial %d", got, r.Cache.Capacity, r.Cache.InitialCapacity)
	}
	// the form reopens with what was applied
	g := NewSettingsForm(r.Settings, m)
	if g.Capacity != "64" || g.InitialCapacity != "16" || g.Temperature != "0.7" || g.Seed != "42" {
		t.Errorf("reopened form %+v", g)
	}
}

func TestSettingsFormInGraphFixesTheCache(t *testing.T) {
	m := inspect(t, fixtures.PTE(fixtures.InGraph))
	f := NewSettingsForm(DefaultSettings("cpu"), m)
	if f.CacheEditable() {
		t.Fatal("in-graph cache editable")
	}
	f.Temperature = "0.5"
	r := f.Evaluate()
	if !r.OK() || r.Cache != nil || r.Summary() != "" {
		t.Errorf("in-graph: ok %v cache %v", r.OK(), r.Cache)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 8296196: "7.9 MiB", 3 << 30: "3.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
