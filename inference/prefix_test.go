package inference

import (
	"slices"
	"testing"

	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

func prefixOpts(chat *Chat, cfg *kvcache.Config, n int) Options {
	return Options{MaxNewTokens: n, StopIDs: chat.StopIDs, TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite, Decoder: chat.Tokenizer}
}

func renderIDs(t *testing.T, chat *Chat, msgs ...Message) []int {
	t.Helper()
	text, err := chat.Template.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := chat.Tokenizer.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestPrefixCacheReusesAndMatchesFresh: on the llama3 fixture (flat
// cache), a second request that resends the first with its reply keeps
// exactly the shared token prefix, and every reply equals the one a fresh
// session gives the same prompt.
func TestPrefixCacheReusesAndMatchesFresh(t *testing.T) {
	sess, chat, cfg := openFixture(t, fixtures.Llama3)
	freshSess, _, _ := openFixture(t, fixtures.Llama3)
	pc, err := NewPrefixCache(sess, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(prompt []int) []int {
		t.Helper()
		if err := freshSess.Clear(); err != nil {
			t.Fatal(err)
		}
		r, err := Generate(bg, freshSess, prompt, prefixOpts(chat, cfg, 6))
		if err != nil {
			t.Fatal(err)
		}
		return r.GeneratedIDs
	}
	a := renderIDs(t, chat, Message{Role: RoleUser, Text: "Hello there"})
	ra, err := pc.Generate(bg, a, prefixOpts(chat, cfg, 6))
	if err != nil {
		t.Fatal(err)
	}
	if ra.Cached != 0 || !slices.Equal(ra.GeneratedIDs, fresh(a)) {
		t.Fatalf("first request: cached %d, ids %v, fresh %v", ra.Cached, ra.GeneratedIDs, fresh(a))
	}
	held := append(slices.Clone(a), ra.GeneratedIDs...)
	if ra.TurnEnd {
		held = append(held, ra.StopID)
	}
	if pc.Len() != len(held) || sess.Len() != len(held) {
		t.Fatalf("cache holds %d (session %d), want %d", pc.Len(), sess.Len(), len(held))
	}
	b := renderIDs(t, chat, Message{Role: RoleUser, Text: "Hello there"},
		Message{Role: RoleAssistant, Text: chat.Tokenizer.Decode(ra.GeneratedIDs, true)}, Message{Role: RoleUser, Text: "And more?"})
	rb, err := pc.Generate(bg, b, prefixOpts(chat, cfg, 6))
	if err != nil {
		t.Fatal(err)
	}
	if want := commonPrefix(held, b); rb.Cached != want || rb.Cached < len(a) || rb.Reprefilled {
		t.Errorf("second request cached %d (reprefilled %v), want the shared prefix %d ≥ the first prompt %d", rb.Cached, rb.Reprefilled, want, len(a))
	}
	if len(rb.PromptIDs) != len(b)-rb.Cached {
		t.Errorf("fed %d prompt tokens, want %d", len(rb.PromptIDs), len(b)-rb.Cached)
	}
	if f := fresh(b); !slices.Equal(rb.GeneratedIDs, f) {
		t.Errorf("second reply %v, fresh %v", rb.GeneratedIDs, f)
	}
	// Going back to the first prompt, a prefix of the second, rewinds to
	// it (its last token fed again for the logits) and repeats the reply.
	ra2, err := pc.Generate(bg, a, prefixOpts(chat, cfg, 6))
	if err != nil || ra2.Cached != len(a)-1 || !slices.Equal(ra2.GeneratedIDs, ra.GeneratedIDs) {
		t.Errorf("first prompt again: cached %d of %d, ids %v (%v), first %v", ra2.Cached, len(a), ra2.GeneratedIDs, err, ra.GeneratedIDs)
	}
}

// TestPrefixCacheReprefillsWhereRingEvicted: on gemma3 (every layer a
// sliding window of 8), keeping a prefix that ends more than a window
// behind the cache's end needs overwritten cells; the cache is cleared and
// the prefix prefilled again, and the reply still equals a fresh one.
func TestPrefixCacheReprefillsWhereRingEvicted(t *testing.T) {
	sess, chat, cfg := openFixture(t, fixtures.Gemma3)
	freshSess, _, _ := openFixture(t, fixtures.Gemma3)
	pc, err := NewPrefixCache(sess, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := renderIDs(t, chat, Message{Role: RoleUser, Text: "Tell me a long story about the sea"})
	if _, err := pc.Generate(bg, a, Options{MaxNewTokens: 12, PrefillChunk: cfg.MaxWrite, IgnoreEOS: true}); err != nil {
		t.Fatal(err)
	}
	// Shares the template's opening but diverges in the user's text, more
	// than a window before the cache's end.
	b := renderIDs(t, chat, Message{Role: RoleUser, Text: "Tell me a short one"})
	shared := commonPrefix(a, b)
	if shared == 0 || pc.Len()-shared <= 8 {
		t.Fatalf("test setup: shared %d of a cache of %d", shared, pc.Len())
	}
	rb, err := pc.Generate(bg, b, Options{MaxNewTokens: 4, PrefillChunk: cfg.MaxWrite, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rb.Reprefilled || rb.Cached != 0 || len(rb.PromptIDs) != len(b)-shared {
		t.Errorf("reprefilled %v cached %d fed %d, want a re-prefill of %d and %d fed", rb.Reprefilled, rb.Cached, len(rb.PromptIDs), shared, len(b)-shared)
	}
	want, err := Generate(bg, freshSess, b, Options{MaxNewTokens: 4, PrefillChunk: cfg.MaxWrite, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rb.GeneratedIDs, want.GeneratedIDs) {
		t.Errorf("after re-prefill %v, fresh %v", rb.GeneratedIDs, want.GeneratedIDs)
	}
}
