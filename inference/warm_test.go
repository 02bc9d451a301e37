package inference

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"etchat/inference/kvcache"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

// warmFixture loads a fixture with the CPU engine (fp32 KV storage, the
// pools at full capacity) for the warm tests.
func warmFixture(t *testing.T, name string) *Model {
	t.Helper()
	dir := fixtures.Unpacked(t, name)
	m, err := Load(bg, filepath.Join(dir, "model.pte"), LoadOptions{Engine: "cpu", Policy: kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// warmHistory is a stored two-turn conversation of the fixture (its
// reference prompts, greedy replies of 8 tokens), as the store keeps it.
func warmHistory(t *testing.T, name string, gen Options) []Message {
	t.Helper()
	var ref reference
	fixtures.Reference(t, name, &ref)
	m := warmFixture(t, name)
	c, err := m.NewConversation("", gen)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{ref.Multiturn.Turn1.Messages[0].Content, ref.Multiturn.Turn2.Messages[2].Content} {
		if _, err := c.Send(bg, text, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c.Messages()
}

func tokensOf(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.IDs)
	}
	return n
}

// checkOwned fails unless the messages own exactly the tokens the cache
// holds, in order (what every operation of a conversation relies on).
func checkOwned(t *testing.T, c *Conversation) {
	t.Helper()
	var owned []int
	for i, m := range c.Messages() {
		if m.Start != len(owned) {
			t.Fatalf("message %d starts at %d, after %d tokens", i, m.Start, len(owned))
		}
		owned = append(owned, m.IDs...)
	}
	if !slices.Equal(owned, c.CacheIDs()) || c.Len() != c.Session().Len() {
		t.Fatalf("messages own %d tokens, the record holds %d, the session %d", len(owned), c.Len(), c.Session().Len())
	}
}

// After a warm the first send prefills only the new turn and answers
// exactly as a conversation resumed the old way (prefilled before
// returning); without the warm it prefills the whole conversation, and
// a warm cancelled half-way leaves a conversation that still answers the
// same. gemma3 has sliding-window layers.
func TestWarmFirstSendPrefillsOnlyTheNewTurn(t *testing.T) {
	for _, name := range models(fixtures.Llama3, fixtures.Qwen3, fixtures.Gemma3) {
		t.Run(name, func(t *testing.T) {
			probe := warmFixture(t, name)
			gen := probe.Generation(8, sampler.Sampling{})
			gen.IgnoreEOS = true
			probe.Close()
			history := warmHistory(t, name, gen)
			const next = "And one more thing?"

			// The old way: Resume prefills the history before it returns.
			m := warmFixture(t, name)
			c, err := m.ResumeConversation(bg, history, gen)
			if err != nil {
				t.Fatal(err)
			}
			_, total, err := c.DraftTokens(next)
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.Send(bg, next, nil)
			if err != nil {
				t.Fatal(err)
			}
			// What a turn after the history must read: the prompt past the
			// part the stored tokens agree with (a reply cut at the budget
			// is re-rendered with its turn end, which it did not hold).
			prompt := c.CacheIDs()[:c.Len()-len(want.Message.IDs)]
			own := len(prompt) - commonPrefix(flatten(history), prompt)
			if len(prompt) != total || own > total-tokensOf(history)+2 || want.Stats.NumPromptTokens != int64(own) {
				t.Fatalf("resumed: prefilled %d of a %d-token prompt, want %d", want.Stats.NumPromptTokens, total, own)
			}
			m.Close()

			// Warmed: the same reply, and only the new turn prefilled.
			m = warmFixture(t, name)
			c, w, err := m.ResumeCold(history, gen)
			if err != nil {
				t.Fatal(err)
			}
			if held, all := w.Remaining(); held != 0 || all != tokensOf(history) || c.Len() != 0 {
				t.Fatalf("cold: %d of %d, cache %d; want 0 of %d", held, all, c.Len(), tokensOf(history))
			}
			if got := w.Messages(); !slices.EqualFunc(got, history, func(a, b Message) bool { return slices.Equal(a.IDs, b.IDs) }) {
				t.Error("before the warm, Messages does not hold the stored tokens")
			}
			var steps []int
			if err := w.Run(bg, func(held, all int) { steps = append(steps, held) }); err != nil {
				t.Fatal(err)
			}
			checkOwned(t, c)
			if c.Len() != tokensOf(history) || len(steps) < 2 || steps[len(steps)-1] != tokensOf(history) {
				t.Fatalf("warmed %d of %d tokens in steps %v", c.Len(), tokensOf(history), steps)
			}
			got, err := c.Send(bg, next, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.GeneratedIDs, want.GeneratedIDs) || got.Stats.NumPromptTokens != int64(own) {
				t.Errorf("warmed: %v prefilling %d, want %v prefilling %d", got.GeneratedIDs, got.Stats.NumPromptTokens, want.GeneratedIDs, own)
			}
			if _, all := w.Remaining(); all != c.Len() {
				t.Errorf("after a turn the warm still wants %d tokens (cache %d)", all, c.Len())
			}
			m.Close()

			// Cold: the first send reads the whole conversation.
			m = warmFixture(t, name)
			c, _, err = m.ResumeCold(history, gen)
			if err != nil {
				t.Fatal(err)
			}
			got, err = c.Send(bg, next, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.GeneratedIDs, want.GeneratedIDs) || got.Stats.NumPromptTokens != int64(total) {
				t.Errorf("cold: %v prefilling %d, want %v prefilling %d", got.GeneratedIDs, got.Stats.NumPromptTokens, want.GeneratedIDs, total)
			}
			m.Close()

			// Cancelled after its first chunk: consistent, and the send
			// prefills the rest with the same reply.
			m = warmFixture(t, name)
			c, w, err = m.ResumeCold(history, gen)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(bg)
			err = w.Run(ctx, func(held, all int) { cancel() })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled warm: %v", err)
			}
			checkOwned(t, c)
			if c.Len() == 0 || c.Len() >= tokensOf(history) {
				t.Fatalf("cancelled after one chunk, the cache holds %d of %d", c.Len(), tokensOf(history))
			}
			if got := w.Messages(); !slices.EqualFunc(got, history, func(a, b Message) bool { return slices.Equal(a.IDs, b.IDs) && a.Text == b.Text }) {
				t.Error("a half-read history lost its stored tokens in Messages")
			}
			half := c.Len()
			got, err = c.Send(bg, next, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.GeneratedIDs, want.GeneratedIDs) || got.Stats.NumPromptTokens != int64(total-min(half, total-own)) {
				t.Errorf("after a cancelled warm: %v prefilling %d, want %v prefilling %d", got.GeneratedIDs, got.Stats.NumPromptTokens, want.GeneratedIDs, total-min(half, total-own))
			}
		})
	}
}

// A warm stopped by an undo goes on, after it, with what is left of the
// history; one stopped by a reset has nothing left to read.
func TestWarmResumesAfterUndoAndStopsAfterReset(t *testing.T) {
	name := fixtures.Llama3
	probe := warmFixture(t, name)
	gen := probe.Generation(8, sampler.Sampling{})
	gen.IgnoreEOS = true
	probe.Close()
	history := warmHistory(t, name, gen)
	m := warmFixture(t, name)
	c, w, err := m.ResumeCold(history, gen)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	_ = w.Run(ctx, func(int, int) { cancel() })
	if _, err := c.UndoTurn(bg); err != nil {
		t.Fatal(err)
	}
	checkOwned(t, c)
	firstTurn := tokensOf(history[:2])
	if _, all := w.Remaining(); all != firstTurn {
		t.Fatalf("after undoing the second turn the warm wants %d tokens, want the first turn's %d", all, firstTurn)
	}
	if err := w.Run(bg, nil); err != nil {
		t.Fatal(err)
	}
	checkOwned(t, c)
	if c.Len() != firstTurn {
		t.Fatalf("warmed %d, want %d", c.Len(), firstTurn)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if held, all := w.Remaining(); held != 0 || all != 0 {
		t.Errorf("after a reset the warm wants %d of %d", held, all)
	}
}

// Bad stored messages are refused, as Resume refuses them.
func TestResumeColdRefusesBadHistory(t *testing.T) {
	m := warmFixture(t, fixtures.Llama3)
	gen := m.Generation(8, sampler.Sampling{})
	for _, msgs := range [][]Message{
		{{Role: "tool", Text: "x"}},
		{{Role: RoleUser, Text: "x", IDs: []int{-1}}},
		{{Role: RoleUser, Text: "x", IDs: []int{m.Session.Vocab()}}},
	} {
		if _, _, err := m.ResumeCold(msgs, gen); err == nil {
			t.Errorf("%+v accepted", msgs)
		}
	}
	// A history longer than the cache is kept as text, with nothing to warm.
	long := []Message{{Role: RoleUser, Text: "x", IDs: make([]int, m.Capacity()+1)}}
	c, w, err := m.ResumeCold(long, gen)
	if err != nil {
		t.Fatal(err)
	}
	if _, all := w.Remaining(); all != 0 || len(c.Messages()[0].IDs) != 0 {
		t.Errorf("an oversized history wants %d tokens", all)
	}
}

// idTokenizer is a test double for the bench fixture, which has no text
// vocabulary: a text is its token ids in decimal, each followed by a
// space, so the concatenated messages encode to their ids in order.
type idTokenizer struct{}

func (idTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	var ids []int
	for _, f := range strings.Fields(text) {
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("not a token id: %q", f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (idTokenizer) Decode(ids []int, skipSpecial bool) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(' ')
	}
	return b.String()
}

// The time to first token of the first send after opening a long stored
// conversation (about 1,180 tokens on the 2048-context bench model),
// cold and warmed, interleaved. It asserts what the warm changes (the
// tokens prefilled) and logs the times: run with -v to see them.
func TestWarmFirstSendTTFT(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing on the 32M-parameter bench model")
	}
	var history []Message
	id := 1
	for i, n := range []int{300, 290, 310, 280} { // user, reply, user, reply
		msg := Message{Role: RoleUser}
		if i%2 == 1 {
			msg.Role = RoleAssistant
		}
		for range n {
			msg.IDs = append(msg.IDs, 100+id)
			id = (id*7 + 3) % 16000
		}
		msg.Text = idTokenizer{}.Decode(msg.IDs, true)
		history = append(history, msg)
	}
	next := idTokenizer{}.Decode([]int{11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}, true)
	m, err := Load(bg, fixtures.PTE(fixtures.BenchBF16), LoadOptions{Engine: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gen := m.Generation(4, sampler.Sampling{})
	gen.IgnoreEOS = true
	opts := ConversationOptions{Tokenizer: idTokenizer{}, Generation: gen, Cache: m.Cache}
	var cold, warm []time.Duration
	var coldIDs []int
	for round := range 3 {
		for _, warmed := range []bool{false, true} {
			c, w, err := ResumeCold(m.Session, opts, history)
			if err != nil {
				t.Fatal(err)
			}
			if warmed {
				if err := w.Run(bg, nil); err != nil {
					t.Fatal(err)
				}
			}
			r, err := c.Send(bg, next, nil)
			if err != nil {
				t.Fatal(err)
			}
			ttft := time.Duration(r.Stats.TTFTSeconds * float64(time.Second))
			wantPrefill := int64(20)
			if !warmed {
				wantPrefill += int64(tokensOf(history))
				cold = append(cold, ttft)
				coldIDs = r.GeneratedIDs
			} else {
				warm = append(warm, ttft)
				if !slices.Equal(r.GeneratedIDs, coldIDs) {
					t.Errorf("round %d: warmed reply %v, cold %v", round, r.GeneratedIDs, coldIDs)
				}
			}
			if r.Stats.NumPromptTokens != wantPrefill {
				t.Errorf("round %d warmed=%v: prefilled %d, want %d", round, warmed, r.Stats.NumPromptTokens, wantPrefill)
			}
		}
	}
	t.Logf("history %d tokens, new turn 20: first-send TTFT cold %v, warmed %v", tokensOf(history), cold, warm)
}
