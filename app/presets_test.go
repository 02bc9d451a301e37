package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// Issue 40 item 2: a model's preset, saved from the library's editor form
// into the real store, is what New uses (over generation_config.json's
// sampling, over the app's defaults): system prompt, sampling, capacity,
// KV dtype and numerics reach the loaded conversation; a form with a wrong
// field is refused; Clear goes back to generation_config.json.
func TestPresetIsWhatNewUses(t *testing.T) {
	ctx := context.Background()
	path := modelCopy(t, fixtures.Llama3Q4, true)
	gc := filepath.Join(filepath.Dir(path), "generation_config.json")
	os.Remove(gc)
	if err := os.WriteFile(gc, []byte(`{"temperature": 0.6, "top_p": 0.95, "top_k": 20}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := testBackend(t)
	NewLibrary(b.Inspector, b.Library).Add(ctx, path)
	m := inspect(t, path)
	c, errs := newTestChat(t, b, m)
	if s := c.Defaults(m, "cpu"); s != ModelDefaults(m, "cpu") || s.Temperature != 0.6 || s.TopK != 20 {
		t.Fatalf("no preset: %+v, want generation_config.json's sampling", s)
	}

	ps := c.presets
	f := ps.Form(ctx, m, "cpu")
	if f.Temperature != "0.6" || f.Numerics != "" {
		t.Fatalf("the editor starts from %+v, want what New uses now", f)
	}
	f.SystemPrompt, f.Temperature, f.Capacity, f.StorageDType, f.Numerics, f.MaxNewTokens = "Answer in one word.", "0", "64", "fp32", "exact", "5"
	bad := *f
	bad.Temperature = "hot"
	if err := ps.Save(ctx, m, &bad); err == nil || !strings.Contains(err.Error(), "Temperature") {
		t.Errorf("a wrong field saved: %v", err)
	}
	if _, ok, _ := ps.Get(ctx, m); ok {
		t.Fatal("the refused form left a preset")
	}
	if err := ps.Save(ctx, m, f); err != nil {
		t.Fatal(err)
	}
	p, ok, err := ps.Get(ctx, m)
	if !ok || err != nil || !strings.Contains(PresetLine(p, ok), "greedy · capacity 64 · KV fp32") {
		t.Fatalf("preset %+v %v %v", p, ok, err)
	}
	s := c.Defaults(m, "cpu")
	if s.Engine != "cpu" || s.SystemPrompt != "Answer in one word." || s.Temperature != 0 || s.Capacity != 64 || s.StorageDType != "fp32" ||
		s.Numerics != "exact" || s.MaxNewTokens != 5 || s.TopK != 20 {
		t.Errorf("New's settings %+v", s)
	}
	// The chat picks it up when the model is chosen (Send without New).
	if err := c.SetModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := c.State().Settings; got != s {
		t.Errorf("chosen model's settings %+v, want the preset's %+v", got, s)
	}
	st := run(t, c, errs, c.Send("Hello"))
	if st.Capacity != 64 || st.Engine.Numerics != "" || len(st.Messages) != 3 || st.Messages[0].Role != "system" ||
		st.Messages[0].Text != s.SystemPrompt || st.Messages[2].Stats.NumGeneratedTokens > 5 {
		t.Fatalf("conversation from the preset: capacity %d, numerics %q, messages %d", st.Capacity, st.Engine.Numerics, len(st.Messages))
	}
	if err := ps.Clear(ctx, m); err != nil {
		t.Fatal(err)
	}
	if s := c.Defaults(m, "cpu"); s != ModelDefaults(m, "cpu") {
		t.Errorf("after Clear: %+v", s)
	}
}
