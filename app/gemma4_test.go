package app

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/inference"
	"etchat/inference/cpu"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// The chat view-model on gemma4-tiny (10 layers on 6 caches; the app takes
// the stand-in tokenizer's own template, gemma3's): a greedy reply is what
// the generation loop gives on the rendered prompt, the meter counts the
// cache, and undo N within the rings' reach is instant and exact.
func TestChatGemma4(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("gemma4-tiny is slow under -race/-short; runs without them")
	}
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Gemma4, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	st := run(t, c, errs, c.NewConversation(greedy(8)))
	if st.Capacity != 128 || st.Position != 0 {
		t.Fatalf("capacity %d, position %d", st.Capacity, st.Position)
	}
	prompt := "Hi! My name is Ada. Please remember it."
	st = run(t, c, errs, c.Send(prompt))
	if len(st.Messages) != 2 {
		t.Fatalf("messages %+v", st.Messages)
	}
	user, reply := st.Messages[0], st.Messages[1]

	// The same prompt through the loop on a fresh CPU session.
	dir := filepath.Dir(path)
	chat, err := inference.LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", []int{1})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := chat.Encode(prompt)
	if err != nil || !slices.Equal(ids, user.IDs) {
		t.Fatalf("prompt ids %v (%v), the chat holds %v", ids, err, user.IDs)
	}
	m := inspect(t, path)
	policy := kvcache.DefaultPolicy()
	policy.StorageDType = "fp32"
	cfg, err := m.CacheConfig(policy)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := cpu.New(cpu.Options{}).Open(context.Background(), path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := inference.Generate(context.Background(), sess, ids, inference.Options{MaxNewTokens: 8, StopIDs: chat.StopIDs,
		TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite})
	if err != nil || !slices.Equal(res.GeneratedIDs, reply.IDs[:len(res.GeneratedIDs)]) {
		t.Fatalf("reply %v, the loop gives %v (%v)", reply.IDs, res.GeneratedIDs, err)
	}
	if st.Position != len(user.IDs)+len(reply.IDs) {
		t.Errorf("meter %d, transcript %d tokens", st.Position, len(user.IDs)+len(reply.IDs))
	}
	// Undoing the turn empties the cache, which is always instant.
	if !st.UndoInstant {
		t.Error("undoing the only turn is not instant")
	}
	// 3 tokens back: the five ring caches still hold what the next step
	// needs, and regenerating gives the reply again.
	st = run(t, c, errs, c.UndoTokens(3))
	if st.Position != len(user.IDs)+len(reply.IDs)-3 {
		t.Errorf("after undo 3: position %d", st.Position)
	}
	st = run(t, c, errs, c.Regenerate())
	if got := st.Messages[len(st.Messages)-1].IDs; !slices.Equal(got, reply.IDs) {
		t.Errorf("regenerated %v, want %v", got, reply.IDs)
	}
}

// The settings sheet's cache line for gemma4-tiny counts layers and caches
// apart and sizes the six caches; fp32 doubles it.
func TestSettingsGemma4Summary(t *testing.T) {
	m := inspect(t, fixtures.PTE(fixtures.Gemma4))
	f := NewSettingsForm(DefaultSettings("auto"), m)
	r := f.Evaluate()
	if !r.OK() {
		t.Fatalf("defaults invalid: %v", r.Errors)
	}
	want := "10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16) — KV memory 36.7 KiB at start, 36.7 KiB at capacity"
	if s := r.Summary(); s != want || r.Cache.NLayers() != 10 || len(r.Cache.Layers) != 6 {
		t.Errorf("sheet summary %q\nwant %q", s, want)
	}
	f.StorageDType = "fp32"
	if s := f.Evaluate().Summary(); !strings.HasSuffix(s, "KV memory 73.4 KiB at start, 73.4 KiB at capacity") {
		t.Errorf("fp32: %q", s)
	}
}
