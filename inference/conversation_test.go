package inference

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

var bg = context.Background()

func chatOpts(tok *byteTok, cfg *kvcache.Config, maxNew int) ConversationOptions {
	return ConversationOptions{Tokenizer: tok, Template: tagTemplate{}, Cache: cfg,
		Generation: Options{MaxNewTokens: maxNew, PrefillChunk: cfg.MaxWrite,
			StopIDs: []int{tok.special("<e>"), tok.special("</s>")}, TurnEndIDs: []int{tok.special("<e>")}}}
}

// checkInvariants: the messages' ids, concatenated, are the conversation's
// record of the cache and exactly what the session holds.
func checkInvariants(t *testing.T, c *Conversation, s *zeroSession) {
	t.Helper()
	var ids []int
	pos := 0
	for i, m := range c.Messages() {
		if m.Start != pos {
			t.Fatalf("message %d starts at %d, want %d", i, m.Start, pos)
		}
		ids = append(ids, m.IDs...)
		pos += len(m.IDs)
	}
	got := c.CacheIDs()
	if !slices.Equal(ids, got) || len(got) != s.Len() {
		t.Fatalf("messages hold %d ids, record %d, session %d", len(ids), len(got), s.Len())
	}
	for i, id := range got {
		if int(s.ids[i]) != id {
			t.Fatalf("cache position %d: record %d, session %d", i, id, s.ids[i])
		}
	}
}

// fresh answers msgs (ending with a user message) from an empty cache.
func fresh(t *testing.T, e *zeroEngine, opts ConversationOptions, msgs []Message) *Reply {
	t.Helper()
	s := openZero(e, opts.Cache)
	stripped := cloneMessages(msgs)
	for i := range stripped {
		stripped[i].IDs = nil
	}
	c, err := Resume(bg, s, opts, stripped)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Regenerate(bg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reused != 0 {
		t.Fatalf("fresh conversation reused %d tokens", r.Reused)
	}
	return r
}

// keptMsgs are msgs without their cache positions: role, text and a
// reply's generated ids, which a reply keeps (they are rendered as
// generated, not re-tokenized from the text).
func keptMsgs(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Role: m.Role, Text: m.Text, Generated: m.Generated}
	}
	return out
}

func TestConversationTurnsMatchFreshPrefill(t *testing.T) {
	tok := newByteTok()
	for _, cfg := range []*kvcache.Config{flatConfig(400, 8), ringConfig(400, 4, 6)} {
		e := &zeroEngine{vocab: tok.vocab()}
		opts := chatOpts(tok, cfg, 12)
		s := openZero(e, cfg)
		c, err := NewConversation(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range []string{"hello there", "how are you?", "tell me more"} {
			r, err := c.Send(bg, q, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, s)
			msgs := c.Messages()
			want := fresh(t, e, opts, keptMsgs(msgs[:len(msgs)-1]))
			if !slices.Equal(r.GeneratedIDs, want.GeneratedIDs) {
				t.Errorf("turn %d: %v, fresh prefill %v", i, r.GeneratedIDs, want.GeneratedIDs)
			}
			if i > 0 && r.Reused == 0 && !r.Reprefilled {
				t.Errorf("turn %d reused nothing", i)
			}
		}
	}
}

func TestConversationCommitsTurnEnd(t *testing.T) {
	tok := newByteTok()
	eot := tok.special("<e>")
	// The model closes its turn after 5 tokens, with printable bytes.
	e := &zeroEngine{vocab: tok.vocab(), boost: func(h uint64, n int) int { return 'a' + int(h%26) }}
	var replyStart int
	e.boost = func(h uint64, n int) int {
		if n-replyStart == 5 {
			return eot
		}
		return 'a' + int(h%26)
	}
	cfg := flatConfig(400, 8)
	s := openZero(e, cfg)
	c, _ := NewConversation(s, chatOpts(tok, cfg, 50))
	full, _ := tok.Encode("<s><u>hi<e><a>", false)
	replyStart = len(full)
	r, err := c.Send(bg, "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GeneratedIDs) != 5 || !r.TurnEnd || r.Message.IDs[5] != eot || s.Len() != len(full)+6 {
		t.Fatalf("reply %v turnEnd %v ids %v", r.GeneratedIDs, r.TurnEnd, r.Message.IDs)
	}
	// The next turn finds the whole closed reply in the cache and prefills
	// only the new user turn.
	replyStart = -100
	r2, err := c.Send(bg, "ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Reused != len(full)+6 || r2.Prefilled != len("<u>ok<e><a>")-6 {
		t.Errorf("second turn reused %d prefilled %d", r2.Reused, r2.Prefilled)
	}
	checkInvariants(t, c, s)
}

func TestConversationUndoRegenerateEdit(t *testing.T) {
	tok := newByteTok()
	for _, cfg := range []*kvcache.Config{flatConfig(400, 8), ringConfig(400, 4, 5)} {
		e := &zeroEngine{vocab: tok.vocab()}
		opts := chatOpts(tok, cfg, 10)
		s := openZero(e, cfg)
		c, _ := NewConversation(s, opts)
		for _, q := range []string{"one", "two", "three"} {
			if _, err := c.Send(bg, q, nil); err != nil {
				t.Fatal(err)
			}
		}
		ring := cfg.Layers[1].Kind == kvcache.Ring
		instant := c.CanUndoInstantly()
		if instant == ring {
			t.Errorf("ring %v: CanUndoInstantly %v", ring, instant)
		}
		u, err := c.UndoTurn(bg)
		if err != nil {
			t.Fatal(err)
		}
		if u.Reprefilled == instant || u.Messages != 2 {
			t.Errorf("ring %v: undo %+v, predicted instant %v", ring, u, instant)
		}
		checkInvariants(t, c, s)
		if n := len(c.Messages()); n != 4 {
			t.Fatalf("%d messages after undo", n)
		}
		// Sending after the undo is the fresh conversation of those messages.
		r, err := c.Send(bg, "three again", nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs := c.Messages()
		if want := fresh(t, e, opts, keptMsgs(msgs[:5])); !slices.Equal(r.GeneratedIDs, want.GeneratedIDs) {
			t.Errorf("after undo: %v, fresh %v", r.GeneratedIDs, want.GeneratedIDs)
		}
		// Greedy regeneration repeats the reply.
		regenInstant := c.CanRegenerateInstantly()
		r2, err := c.Regenerate(bg, nil)
		if err == nil && r2.Reprefilled == regenInstant {
			t.Errorf("ring %v: regenerate reprefilled %v, predicted instant %v", ring, r2.Reprefilled, regenInstant)
		}
		if err != nil || !slices.Equal(r2.GeneratedIDs, r.GeneratedIDs) {
			t.Errorf("regenerate: %v (%v), first %v", r2.GeneratedIDs, err, r.GeneratedIDs)
		}
		checkInvariants(t, c, s)
		// Editing equals a fresh conversation with the edited message.
		r3, err := c.EditLast(bg, "edited", nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs = c.Messages()
		if msgs[4].Text != "edited" || len(msgs) != 6 {
			t.Fatalf("after edit: %+v", msgs)
		}
		if want := fresh(t, e, opts, keptMsgs(msgs[:5])); !slices.Equal(r3.GeneratedIDs, want.GeneratedIDs) {
			t.Errorf("edit: %v, fresh %v", r3.GeneratedIDs, want.GeneratedIDs)
		}
		checkInvariants(t, c, s)
	}
}

func TestConversationUndoTokens(t *testing.T) {
	tok := newByteTok()
	e := &zeroEngine{vocab: tok.vocab()}
	cfg := flatConfig(400, 8)
	s := openZero(e, cfg)
	c, _ := NewConversation(s, chatOpts(tok, cfg, 10))
	c.Send(bg, "first", nil)
	c.Send(bg, "second", nil)
	n0 := c.Len()
	reply := c.Messages()[3]
	// Three tokens off the reply, counted as the meter counts them (its
	// committed turn end is one of them): the cache loses exactly three,
	// the reply is shortened, and its stats follow.
	hidden := len(reply.IDs) - len(reply.Generated)
	u, err := c.UndoTokens(bg, 3)
	if err != nil || u.Len != n0-3 || u.Dropped != 3 || u.Messages != 0 {
		t.Fatalf("undo 3: %+v %v (hidden %d)", u, err, hidden)
	}
	m := c.Messages()[3]
	if len(m.IDs) != len(reply.IDs)-3 || !slices.Equal(m.IDs, reply.IDs[:len(m.IDs)]) ||
		m.Text != tok.Decode(reply.IDs[:len(reply.IDs)-3], true) {
		t.Errorf("shortened reply %q ids %d", m.Text, len(m.IDs))
	}
	if m.Stats.NumGeneratedTokens != int64(len(m.Generated)) || m.StopReason != StopUndone {
		t.Errorf("shortened reply's stats %d generated, stop %q", m.Stats.NumGeneratedTokens, m.StopReason)
	}
	checkInvariants(t, c, s)
	// Cutting into the user message removes the whole turn.
	u, err = c.UndoTokens(bg, len(m.IDs)+2)
	if err != nil || u.Messages != 2 || u.Len != c.Messages()[1].End() || len(c.Messages()) != 2 {
		t.Fatalf("undo into the user turn: %+v %v, %d messages", u, err, len(c.Messages()))
	}
	checkInvariants(t, c, s)
	// More than everything: empty.
	if u, err = c.UndoTokens(bg, 1000); err != nil || u.Len != 0 || len(c.Messages()) != 0 {
		t.Errorf("undo all: %+v %v", u, err)
	}
	if _, err := c.UndoTokens(bg, -1); err == nil {
		t.Error("negative undo accepted")
	}
	if _, err := c.UndoTurn(bg); err == nil {
		t.Error("undo on an empty conversation accepted")
	}
}

func TestConversationResumeContinuesExactly(t *testing.T) {
	tok := newByteTok()
	e := &zeroEngine{vocab: tok.vocab()}
	cfg := ringConfig(400, 4, 6)
	opts := chatOpts(tok, cfg, 9)
	opts.System = "be brief"
	s := openZero(e, cfg)
	c, _ := NewConversation(s, opts)
	c.Send(bg, "a question", nil)
	c.Send(bg, "another", nil)
	state := c.Messages()

	r1, err := c.Send(bg, "third", nil)
	if err != nil {
		t.Fatal(err)
	}
	s2 := openZero(e, cfg)
	c2, err := Resume(bg, s2, opts, state)
	if err != nil {
		t.Fatal(err)
	}
	if s2.tokensIn != len(c2.CacheIDs()) || !slices.Equal(c2.CacheIDs(), flatten(state)) {
		t.Errorf("resume prefilled %d tokens for %d", s2.tokensIn, len(c2.CacheIDs()))
	}
	r2, err := c2.Send(bg, "third", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r1.GeneratedIDs, r2.GeneratedIDs) || r1.Reused != r2.Reused {
		t.Errorf("resumed: %v reused %d; original %v reused %d", r2.GeneratedIDs, r2.Reused, r1.GeneratedIDs, r1.Reused)
	}
	checkInvariants(t, c2, s2)

	// Bad stored state is an error, not a panic.
	bad := cloneMessages(state)
	bad[1].Role = "robot"
	if _, err := Resume(bg, openZero(e, cfg), opts, bad); err == nil {
		t.Error("unknown role accepted")
	}
	bad = cloneMessages(state)
	bad[1].IDs = append(bad[1].IDs, 99999)
	if _, err := Resume(bg, openZero(e, cfg), opts, bad); err == nil {
		t.Error("out-of-vocabulary id accepted")
	}
	// Reset keeps the system prompt only.
	if err := c2.Reset(); err != nil || c2.Len() != 0 || len(c2.Messages()) != 1 || s2.Len() != 0 {
		t.Errorf("reset: %v, %d tokens, %d messages", err, c2.Len(), len(c2.Messages()))
	}
}

func flatten(msgs []Message) []int {
	var out []int
	for _, m := range msgs {
		out = append(out, m.IDs...)
	}
	return out
}

func TestConversationTooLong(t *testing.T) {
	tok := newByteTok()
	e := &zeroEngine{vocab: tok.vocab()}
	cfg := flatConfig(40, 8)
	s := openZero(e, cfg)
	opts := chatOpts(tok, cfg, 50)
	opts.Generation.IgnoreEOS = true
	c, _ := NewConversation(s, opts)
	if _, err := c.Send(bg, "a question that is far too long for forty tokens", nil); !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("long prompt: %v", err)
	}
	if len(c.Messages()) != 0 || s.forwards != 0 {
		t.Errorf("refused turn left %d messages, %d forwards", len(c.Messages()), s.forwards)
	}
	// A turn that fits is capped by the room left.
	r, err := c.Send(bg, "short", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Capped || s.Len() != 40 {
		t.Errorf("capped %v, cache %d", r.Capped, s.Len())
	}
	// The next turn no longer fits.
	if _, err := c.Send(bg, "more", nil); !errors.Is(err, ErrPromptTooLong) {
		t.Errorf("full conversation: %v", err)
	}
	checkInvariants(t, c, s)
}

// lenientSession accepts every rewind, as an engine with ExecuTorch's
// floor would after a second rewind.
type lenientSession struct{ *zeroSession }

func (s lenientSession) Rewind(n int) error {
	if n > s.Len() {
		return engine.ErrRewindRefused
	}
	s.seq.Clear()
	for s.seq.Len() < n { // replay the shorter history into the control state
		p, _ := s.seq.Plan(0, s.seq.Len(), 1)
		s.seq.Commit(p)
	}
	s.ids, s.hashes = s.ids[:n], s.hashes[:n]
	return nil
}

func (s lenientSession) CanRewind(n int) bool { return n <= s.Len() }

func TestConversationGuardsAgainstLenientEngines(t *testing.T) {
	tok := newByteTok()
	e := &zeroEngine{vocab: tok.vocab()}
	cfg := ringConfig(400, 4, 5)
	opts := chatOpts(tok, cfg, 10)
	s := openZero(e, cfg)
	c, _ := NewConversation(lenientSession{s}, opts)
	c.Send(bg, "one", nil)
	c.Send(bg, "two", nil)
	u, err := c.UndoTurn(bg)
	if err != nil || !u.Reprefilled {
		t.Errorf("undo past a 5-token window on a lenient engine: %+v %v; want a re-prefill", u, err)
	}
	checkInvariants(t, c, s)
}

// Random operations on conversations over flat and ring caches: the
// messages always describe exactly what the cache holds, and every reply
// equals the reply to the same messages prefilled from scratch.
func TestConversationRandomOperations(t *testing.T) {
	tok := newByteTok()
	r := rand.New(rand.NewPCG(7, 7))
	words := []string{"alpha", "beta gamma", "delta", "a much longer question here", "x"}
	var stats [2]int // re-prefills, turns refused as too long
	for trial := 0; trial < 40; trial++ {
		var cfg *kvcache.Config
		if trial%2 == 0 {
			cfg = flatConfig(40+r.IntN(120), 1+r.IntN(8))
		} else {
			cfg = ringConfig(40+r.IntN(120), 1+r.IntN(6), 6+r.IntN(10))
		}
		e := &zeroEngine{vocab: tok.vocab()}
		opts := chatOpts(tok, cfg, 1+r.IntN(12))
		s := openZero(e, cfg)
		c, err := NewConversation(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		defer func() {
			if t.Failed() {
				t.Logf("trial %d cap %d max_write %d layers %+v ops %v", trial, cfg.Capacity, cfg.MaxWrite, cfg.Layers, ops)
			}
		}()
		for op := 0; op < 40; op++ {
			reprefills := 0
			var rep *Reply
			var err error
			switch k := r.IntN(10); {
			case k < 4:
				ops = append(ops, "send")
				rep, err = c.Send(bg, words[r.IntN(len(words))], nil)
			case k < 5:
				ops = append(ops, "regen")
				rep, err = c.Regenerate(bg, nil)
			case k < 6:
				ops = append(ops, "edit")
				rep, err = c.EditLast(bg, words[r.IntN(len(words))], nil)
			case k < 7:
				ops = append(ops, "undo")
				var u UndoResult
				u, err = c.UndoTurn(bg)
				reprefills += b2i(u.Reprefilled)
			case k < 9:
				n := r.IntN(20)
				ops = append(ops, fmt.Sprintf("undo%d", n))
				_, err = c.UndoTokens(bg, n)
			case k < 10 && r.IntN(3) == 0:
				// A turn canceled after a few tokens, or an engine that fails
				// part way: the records still match the cache.
				ctx, cancel := context.WithCancel(bg)
				stopAfter := r.IntN(4)
				if r.IntN(2) == 0 {
					s.failAt = s.Len() + 1 + r.IntN(12)
					ops = append(ops, fmt.Sprintf("fail@%d", s.failAt))
				} else {
					ops = append(ops, fmt.Sprintf("cancel%d", stopAfter))
				}
				n := 0
				_, _ = c.Send(ctx, words[r.IntN(len(words))], func(Token) error { // fails or is cancelled on purpose
					if n++; n > stopAfter {
						cancel()
					}
					return nil
				})
				cancel()
				s.failAt = 0
				err = nil
				if msgs := c.Messages(); len(msgs) > 0 && msgs[len(msgs)-1].Role == RoleUser {
					if _, err = c.UndoTurn(bg); err != nil {
						t.Fatalf("undo after a failed turn: %v", err)
					}
				}
			default:
				ops = append(ops, "reset")
				err = c.Reset()
			}
			if err != nil && !errors.Is(err, ErrPromptTooLong) && !strings.HasPrefix(err.Error(), "nothing to") && !strings.HasPrefix(err.Error(), "no user message") {
				t.Fatalf("trial %d ops %v: %v", trial, ops, err)
			}
			checkInvariants(t, c, s)
			msgs := c.Messages()
			for i := 1; i < len(msgs); i++ {
				if msgs[i].Role == msgs[i-1].Role {
					t.Fatalf("trial %d ops %v: two %s messages in a row", trial, ops, msgs[i].Role)
				}
			}
			if rep != nil {
				reprefills += b2i(rep.Reprefilled)
			}
			stats[0] += reprefills
			if errors.Is(err, ErrPromptTooLong) {
				stats[1]++
			}
			if rep != nil {
				want := fresh(t, e, opts, keptMsgs(msgs[:len(msgs)-1]))
				if !slices.Equal(rep.GeneratedIDs, want.GeneratedIDs) {
					t.Fatalf("trial %d ops %v: reply %v, fresh %v", trial, ops, rep.GeneratedIDs, want.GeneratedIDs)
				}
			}
		}
	}
	if stats[0] == 0 || stats[1] == 0 {
		t.Errorf("weak coverage: %d re-prefills, %d refused turns", stats[0], stats[1])
	}
	t.Logf("%d re-prefills, %d refused turns", stats[0], stats[1])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// On the real fixtures (the model's own template and tokenizer): random
// send / stop / undo turn / undo N / regenerate / edit / reset, and after
// each step the messages' ids are the cache, and each message's ids render
// its text (what the transcript shows is what the cache holds).
func TestConversationTranscriptIsTheCacheOnFixtures(t *testing.T) {
	words := []string{"Hello there.", "Tell me more.", "What is my name?", "Why?", "Write a long story about the sea and ships."}
	// Both engines (native_test.go): the native one where its library is built.
	for _, eng := range bothEngines {
		for _, name := range models(fixtures.Gemma3, fixtures.Llama3, fixtures.Qwen3, fixtures.Gemma4) {
			t.Run(eng.name+"/"+name, func(t *testing.T) {
				dir := fixtures.Unpacked(t, name)
				info, err := modelinfo.Load(filepath.Join(dir, "model.pte"), modelinfo.Options{})
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := info.CacheConfig(kvcache.DefaultPolicy())
				if err != nil {
					t.Fatal(err)
				}
				sess, err := eng.open(t).Open(bg, filepath.Join(dir, "model.pte"), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, chatFor(name), info.EOSIDs)
				if err != nil {
					t.Fatal(err)
				}
				c, err := NewConversation(sess, ConversationOptions{Tokenizer: chat.Tokenizer, Template: chat.Template, Cache: cfg,
					Generation: Options{MaxNewTokens: 10, Sampling: sampler.Sampling{Temperature: 0.8, TopP: 0.9, Seed: 3},
						StopIDs: chat.StopIDs, TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite}})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(11, uint64(len(name))))
				var ops []string
				for step := 0; step < 30; step++ {
					var err error
					switch k := r.IntN(10); {
					case k < 3:
						ops = append(ops, "send")
						_, err = c.Send(bg, words[r.IntN(len(words))], nil)
					case k < 4:
						ops = append(ops, "stop")
						ctx, cancel := context.WithCancel(bg)
						n := 0
						_, err = c.Send(ctx, words[r.IntN(len(words))], func(Token) error {
							if n++; n == 2 {
								cancel()
							}
							return nil
						})
						cancel()
						if errors.Is(err, context.Canceled) {
							err = nil
						}
						if msgs := c.Messages(); len(msgs) > 0 && msgs[len(msgs)-1].Role == RoleUser {
							_, err = c.UndoTurn(bg)
						}
					case k < 5:
						ops = append(ops, "undo")
						_, err = c.UndoTurn(bg)
					case k < 7:
						n := 1 + r.IntN(12)
						ops = append(ops, fmt.Sprintf("undo%d", n))
						_, err = c.UndoTokens(bg, n)
					case k < 8:
						ops = append(ops, "regen")
						_, err = c.Regenerate(bg, nil)
					case k < 9:
						ops = append(ops, "edit")
						_, err = c.EditLast(bg, words[r.IntN(len(words))], nil)
					default:
						ops = append(ops, "reset")
						err = c.Reset()
					}
					if err != nil && !errors.Is(err, ErrPromptTooLong) && !strings.HasPrefix(err.Error(), "nothing to") && !strings.HasPrefix(err.Error(), "no user message") {
						t.Fatalf("ops %v: %v", ops, err)
					}
					var ids []int
					for i, m := range c.Messages() {
						ids = append(ids, m.IDs...)
						if text := strings.TrimSpace(m.Text); !strings.Contains(chat.Tokenizer.Decode(m.IDs, true), text) {
							t.Fatalf("ops %v: message %d shows %q but holds %q", ops, i, text, chat.Tokenizer.Decode(m.IDs, true))
						}
					}
					if !slices.Equal(ids, c.CacheIDs()) || len(ids) != sess.Len() {
						t.Fatalf("ops %v: messages hold %d ids, record %d, session %d", ops, len(ids), len(c.CacheIDs()), sess.Len())
					}
				}
			})
		}
	}
}

// Restored places stored messages one after another and takes a reply's
// generated tokens from its tokens, turn end excluded, without touching
// its input.
func TestRestored(t *testing.T) {
	in := []Message{
		{Role: RoleUser, Text: "hi", IDs: []int{1, 2, 3}, Start: 40},
		{Role: RoleAssistant, Text: "yo", IDs: []int{4, 5, 99}},
		{Role: RoleUser, Text: "again"},
		{Role: RoleAssistant, Text: "x", IDs: []int{6}, Generated: []int{6, 7}},
	}
	out := Restored(in, []int{99})
	for i, want := range []int{0, 3, 6, 6} {
		if out[i].Start != want {
			t.Errorf("message %d starts at %d, want %d", i, out[i].Start, want)
		}
	}
	if !slices.Equal(out[1].Generated, []int{4, 5}) || !slices.Equal(out[3].Generated, []int{6, 7}) || out[0].Generated != nil {
		t.Errorf("generated: %v, %v, %v", out[0].Generated, out[1].Generated, out[3].Generated)
	}
	out[0].IDs[0] = -1
	if in[0].IDs[0] != 1 || in[0].Start != 40 || in[1].Generated != nil {
		t.Errorf("Restored changed its input: %+v", in)
	}
}
