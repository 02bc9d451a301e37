package inference

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// Continue on the fake engine: a reply cut at the budget and continued
// twice is, token for token, the reply one generation with three times the
// budget gives, and the cache holds what the uncut conversation's does; on
// a flat cache and on a ring cache that refuses the rewind (re-prefill).
func TestConversationContinueIsTheUncutReply(t *testing.T) {
	tok := newByteTok()
	for _, cfg := range []*kvcache.Config{flatConfig(400, 8), ringConfig(400, 4, 6)} {
		e := &zeroEngine{vocab: tok.vocab(), boost: func(h uint64, n int) int { return 'a' + int(h%26) }}
		refSess := openZero(e, cfg)
		ref, _ := NewConversation(refSess, chatOpts(tok, cfg, 18))
		want, err := ref.Send(bg, "hello", nil)
		if err != nil || len(want.GeneratedIDs) != 18 {
			t.Fatalf("uncut reply %v (%v)", want.GeneratedIDs, err)
		}

		s := openZero(e, cfg)
		c, _ := NewConversation(s, chatOpts(tok, cfg, 6))
		if _, err := c.Send(bg, "hello", nil); err != nil {
			t.Fatal(err)
		}
		for k := 2; k <= 3; k++ {
			if err := c.CanContinue(); err != nil {
				t.Fatalf("cut reply: %v", err)
			}
			var streamed []int
			r, err := c.Continue(bg, func(tk Token) error {
				msgs, n, ok := c.Pending()
				last := msgs[len(msgs)-1]
				if !ok || n != s.Len()+1 || !slices.Equal(last.IDs, want.GeneratedIDs[:len(last.IDs)]) {
					t.Errorf("pending reply %v (%d tokens)", last.IDs, n)
				}
				streamed = append(streamed, tk.ID)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, s)
			if !slices.Equal(streamed, want.GeneratedIDs[6*(k-1):6*k]) || r.Reused != s.Len()-7 || r.Prefilled != 1 {
				t.Errorf("continuation %d streamed %v reused %d", k, streamed, r.Reused)
			}
			msgs := c.Messages()
			if len(msgs) != 2 || !slices.Equal(msgs[1].Generated, want.GeneratedIDs[:6*k]) || msgs[1].Stats.NumGeneratedTokens != int64(6*k) {
				t.Fatalf("after continuation %d: %d messages, reply %v", k, len(msgs), msgs[1].Generated)
			}
		}
		if got := c.Messages()[1]; got.Text != want.Message.Text || got.StopReason != StopLength || !slices.Equal(c.CacheIDs(), ref.CacheIDs()) {
			t.Errorf("continued reply %q (%s), uncut %q", got.Text, got.StopReason, want.Message.Text)
		}
	}
}

// A cut reply followed by a turn holds that turn's closing markup (the
// template's turn end); once the turn is undone, Continue rewinds it first.
func TestConversationContinueRewindsTheTurnEnd(t *testing.T) {
	tok := newByteTok()
	eot := tok.special("<e>")
	cfg := flatConfig(400, 8)
	e := &zeroEngine{vocab: tok.vocab(), boost: func(h uint64, n int) int { return 'a' + int(h%26) }}
	ref, _ := NewConversation(openZero(e, cfg), chatOpts(tok, cfg, 12))
	want, _ := ref.Send(bg, "hello", nil)

	s := openZero(e, cfg)
	c, _ := NewConversation(s, chatOpts(tok, cfg, 6))
	if _, err := c.Send(bg, "hello", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(bg, "go on", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UndoTurn(bg); err != nil {
		t.Fatal(err)
	}
	reply := c.Messages()[1]
	if n := len(reply.IDs); n != 7 || reply.IDs[n-1] != eot {
		t.Fatalf("the cut reply holds %v, want its 6 tokens and the turn end", reply.IDs)
	}
	r, err := c.Continue(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, c, s)
	if !slices.Equal(r.Message.Generated, want.GeneratedIDs) || !slices.Equal(c.CacheIDs(), ref.CacheIDs()) {
		t.Errorf("continued %v, uncut %v", r.Message.Generated, want.GeneratedIDs)
	}
}

// What cannot be continued says why, typed, and changes nothing.
func TestConversationContinueRefusals(t *testing.T) {
	tok := newByteTok()
	eot := tok.special("<e>")
	cfg := flatConfig(40, 8)
	e := &zeroEngine{vocab: tok.vocab(), boost: func(h uint64, n int) int {
		if n == 12 {
			return eot
		}
		return 'a' + int(h%26)
	}}
	s := openZero(e, cfg)
	c, _ := NewConversation(s, chatOpts(tok, cfg, 40))
	if _, err := c.Continue(bg, nil); !errors.Is(err, ErrNothingToContinue) {
		t.Errorf("empty conversation: %v", err)
	}
	r, err := c.Send(bg, "hi", nil) // closes its turn after a few tokens
	if err != nil || r.StopReason != StopEOS {
		t.Fatalf("reply %v (%v)", r.StopReason, err)
	}
	before := c.CacheIDs()
	var ce *ContinueError
	if _, err := c.Continue(bg, nil); !errors.As(err, &ce) || !slices.Equal(before, c.CacheIDs()) {
		t.Errorf("closed reply: %v", err)
	}
	// A reply cut by the cache's capacity: the conversation is full.
	e.boost = func(h uint64, n int) int { return 'a' + int(h%26) }
	if _, err := c.Send(bg, "more", nil); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 40 {
		t.Fatalf("cache holds %d, want it full", c.Len())
	}
	var long *PromptTooLongError
	if _, err := c.Continue(bg, nil); !errors.As(err, &long) || c.Len() != 40 {
		t.Errorf("full cache: %v, %d tokens", err, c.Len())
	}
	checkInvariants(t, c, s)
}

// Continue on the fixtures, on both engines: turn 1 of the multiturn
// reference cut at 3 tokens and continued to 8 is PyTorch's greedy reply
// (gemma3's sliding windows included).
func TestContinueOnFixtures(t *testing.T) {
	for _, name := range models(fixtures.Llama3, fixtures.Gemma3) {
		t.Run(name, func(t *testing.T) {
			var ref reference
			fixtures.Reference(t, name, &ref)
			mt := ref.Multiturn
			dir := fixtures.Unpacked(t, name)
			info, _ := fixtureConfig(t, name, "fp32")
			chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", info.EOSIDs)
			if err != nil {
				t.Fatal(err)
			}
			forEachEngine(t, func(t *testing.T, e engine.Engine) {
				s, cfg := openOn(t, e, name, "fp32")
				gen := Options{MaxNewTokens: 3, IgnoreEOS: true, StopIDs: chat.StopIDs, TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite}
				c, err := NewConversation(s, ConversationOptions{Tokenizer: chat.Tokenizer, Template: chat.Template, Cache: cfg, Generation: gen})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Send(bg, mt.Turn1.Messages[0].Content, nil); err != nil {
					t.Fatal(err)
				}
				gen.MaxNewTokens = 5
				if err := c.SetGeneration(gen); err != nil {
					t.Fatal(err)
				}
				r, err := c.Continue(bg, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(r.Message.Generated, mt.Turn1.GeneratedIDs) || r.Message.Start+len(r.Message.IDs) != s.Len() {
					t.Errorf("continued reply %v, want %v", r.Message.Generated, mt.Turn1.GeneratedIDs)
				}
			})
		})
	}
}
