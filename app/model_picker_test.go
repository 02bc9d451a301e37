package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// Issue 40 item 3: the chat's picker gives each model its size,
// quantization, context and cache kind, and leaves out the models that
// cannot chat, each with why: no tokenizer, an unusable one, no chat
// template (it could only continue raw text), an in-graph program without
// a tokenizer.
func TestModelChoicesInformAndLeaveOut(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	llama := modelCopy(t, fixtures.Llama3, true)
	q4 := modelCopy(t, fixtures.Llama3Q4, true)
	noTok := modelCopy(t, fixtures.Gemma3, false)
	inGraph := modelCopy(t, fixtures.InGraph, false)
	broken := modelCopy(t, fixtures.Qwen3, true)
	brokenTok := filepath.Join(filepath.Dir(broken), "tokenizer.json")
	os.Remove(brokenTok)
	if err := os.WriteFile(brokenTok, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A tokenizer_config.json without its chat template, and no
	// config.json: nothing to render a chat with.
	raw := modelCopy(t, fixtures.Llama3, true)
	cfgPath := filepath.Join(filepath.Dir(raw), "tokenizer_config.json")
	var cfg map[string]any
	data, err := os.ReadFile(cfgPath)
	if err != nil || json.Unmarshal(data, &cfg) != nil {
		t.Fatalf("tokenizer_config.json: %v", err)
	}
	delete(cfg, "chat_template")
	data, _ = json.Marshal(cfg)
	os.Remove(cfgPath)
	os.Remove(filepath.Join(filepath.Dir(raw), "config.json"))
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	lib := NewLibrary(b.Inspector, b.Library)
	lib.Add(ctx, llama, q4, noTok, inGraph, broken, raw)

	chat, left := ModelChoices(lib.Entries())
	got := map[string]ModelChoice{}
	for _, c := range append(chat, left...) {
		got[c.Entry.Path] = c
	}
	if len(chat) != 2 || len(left) != 4 {
		t.Fatalf("%d choices, %d left out; want 2 and 4", len(chat), len(left))
	}
	for _, p := range []string{llama, q4} {
		c, e := got[p], got[p].Entry
		if c.Why != "" || !CanChat(e) {
			t.Errorf("%s left out: %s", p, c.Why)
		}
		want := []string{FormatBytes(e.Info.SizeBytes), e.Info.Quantization.Summary, "context 128", "off-graph cache: "}
		for _, w := range want {
			if !strings.Contains(c.Facts, w) {
				t.Errorf("%s: facts %q lack %q", p, c.Facts, w)
			}
		}
	}
	if !strings.Contains(got[q4].Facts, "4-bit") {
		t.Errorf("q4 facts %q", got[q4].Facts)
	}
	whys := map[string]string{noTok: "no tokenizer.json next to the .pte", inGraph: "tokenizer.json", broken: brokenTok, raw: "no chat template"}
	for p, w := range whys {
		if c := got[p]; !strings.Contains(c.Why, w) || CanChat(c.Entry) {
			t.Errorf("%s: why %q, want it to say %q", p, c.Why, w)
		}
	}
}
