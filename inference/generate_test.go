package inference

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

// naiveGreedy runs the model the obvious way on a fresh session: the whole
// prompt in one forward, then one token at a time.
func naiveGreedy(t *testing.T, e *zeroEngine, prompt []int, n int) []int {
	t.Helper()
	s := openZero(e, flatConfig(512, 0))
	in := make([]int64, len(prompt))
	pos := make([]int64, len(prompt))
	for i, id := range prompt {
		in[i], pos[i] = int64(id), int64(i)
	}
	logits, err := s.Forward(context.Background(), in, pos)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := 0; i < n; i++ {
		best := 0
		for v := range logits {
			if logits[v] > logits[best] {
				best = v
			}
		}
		out = append(out, best)
		if logits, err = s.Forward(context.Background(), []int64{int64(best)}, []int64{int64(len(prompt) + i)}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestGenerateGreedyChunked(t *testing.T) {
	e := &zeroEngine{vocab: 300}
	prompt := []int{5, 17, 99, 3, 250, 7, 7, 1, 42, 11}
	want := naiveGreedy(t, e, prompt, 12)
	for _, chunk := range []int{0, 1, 3, 4, 10} {
		s := openZero(e, flatConfig(64, chunk))
		var progress [][2]int
		res, err := Generate(context.Background(), s, prompt, Options{MaxNewTokens: 12, PrefillChunk: chunk,
			OnPrefill: func(done, total int) { progress = append(progress, [2]int{done, total}) }})
		if err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		if !slices.Equal(res.GeneratedIDs, want) {
			t.Errorf("chunk %d: generated %v, want %v", chunk, res.GeneratedIDs, want)
		}
		if s.Len() != len(prompt)+12 || res.StopReason != StopLength || res.Capped {
			t.Errorf("chunk %d: cache %d, stop %q, capped %v", chunk, s.Len(), res.StopReason, res.Capped)
		}
		c := chunk
		if c == 0 {
			c = len(prompt)
		}
		if wantCalls := (len(prompt) + c - 1) / c; len(progress) != wantCalls || progress[len(progress)-1] != [2]int{10, 10} {
			t.Errorf("chunk %d: progress %v", chunk, progress)
		}
		// One forward per prefill chunk, then one per generated token.
		if s.forwards != len(progress)+12 {
			t.Errorf("chunk %d: %d forwards", chunk, s.forwards)
		}
		st := res.Stats
		if st.NumPromptTokens != 10 || st.NumGeneratedTokens != 12 || st.InferenceStartMs > st.PromptEvalEndMs ||
			st.PromptEvalEndMs > st.FirstTokenMs || st.FirstTokenMs > st.InferenceEndMs || st.PrefillRate <= 0 || st.DecodeRate <= 0 {
			t.Errorf("chunk %d: stats %+v", chunk, st)
		}
	}
}

func TestGenerateStopsAndCommitsTurnEnd(t *testing.T) {
	const stopID, turnEnd = 298, 299
	// The model says turnEnd at cache length 9 (after 4 generated tokens of
	// a 5-token prompt).
	e := &zeroEngine{vocab: 300, boost: func(h uint64, n int) int {
		if n == 9 {
			return turnEnd
		}
		return int(h % 200)
	}}
	prompt := []int{1, 2, 3, 4, 5}

	s := openZero(e, flatConfig(64, 4))
	res, err := Generate(context.Background(), s, prompt, Options{MaxNewTokens: 20, StopIDs: []int{stopID, turnEnd}, TurnEndIDs: []int{turnEnd}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GeneratedIDs) != 4 || res.StopReason != StopEOS || res.StopID != turnEnd || !res.TurnEnd {
		t.Fatalf("got %v stop %q id %d turnEnd %v", res.GeneratedIDs, res.StopReason, res.StopID, res.TurnEnd)
	}
	if s.Len() != 10 || s.ids[9] != turnEnd {
		t.Errorf("cache %d tokens ending %v; want the turn end committed at 9", s.Len(), s.ids)
	}

	// A stop token that is not a turn end is not fed back.
	s = openZero(e, flatConfig(64, 4))
	res, _ = Generate(context.Background(), s, prompt, Options{MaxNewTokens: 20, StopIDs: []int{turnEnd}})
	if res.TurnEnd || s.Len() != 9 {
		t.Errorf("uncommitted stop: turnEnd %v, cache %d", res.TurnEnd, s.Len())
	}

	// IgnoreEOS generates exactly the budget, the stop token included.
	s = openZero(e, flatConfig(64, 4))
	res, _ = Generate(context.Background(), s, prompt, Options{MaxNewTokens: 7, StopIDs: []int{turnEnd}, TurnEndIDs: []int{turnEnd}, IgnoreEOS: true})
	if len(res.GeneratedIDs) != 7 || res.GeneratedIDs[4] != turnEnd || s.Len() != 12 {
		t.Errorf("ignore-eos: %v, cache %d", res.GeneratedIDs, s.Len())
	}

	// The budget ending right where the model closes the turn still commits it.
	s = openZero(e, flatConfig(64, 4))
	res, _ = Generate(context.Background(), s, prompt, Options{MaxNewTokens: 4, StopIDs: []int{turnEnd}, TurnEndIDs: []int{turnEnd}})
	if len(res.GeneratedIDs) != 4 || !res.TurnEnd || s.Len() != 10 {
		t.Errorf("budget at the turn end: %v turnEnd %v cache %d", res.GeneratedIDs, res.TurnEnd, s.Len())
	}
}

func TestGenerateClampsToCapacity(t *testing.T) {
	e := &zeroEngine{vocab: 50}
	s := openZero(e, flatConfig(20, 8))
	prompt := make([]int, 15)
	res, err := Generate(context.Background(), s, prompt, Options{MaxNewTokens: 10, PrefillChunk: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Capped || res.Budget != 5 || len(res.GeneratedIDs) != 5 || res.StopReason != StopCapacity || s.Len() != 20 {
		t.Errorf("capped %v budget %d generated %d stop %q cache %d", res.Capped, res.Budget, len(res.GeneratedIDs), res.StopReason, s.Len())
	}
	// A prompt that leaves no room for one token is refused before any work.
	s = openZero(e, flatConfig(20, 8))
	if _, err := Generate(context.Background(), s, make([]int, 20), Options{MaxNewTokens: 1}); !errors.Is(err, ErrPromptTooLong) || s.forwards != 0 {
		t.Errorf("20-token prompt in 20: err %v after %d forwards", err, s.forwards)
	}
	// 19 tokens + 1 fits: admitted, one token generated.
	s = openZero(e, flatConfig(20, 8))
	if res, err := Generate(context.Background(), s, make([]int, 19), Options{MaxNewTokens: 5, PrefillChunk: 8}); err != nil || len(res.GeneratedIDs) != 1 {
		t.Errorf("19-token prompt in 20: %v", err)
	}
}

func TestGenerateCancelWithinOneStep(t *testing.T) {
	e := &zeroEngine{vocab: 64}
	s := openZero(e, flatConfig(128, 8))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res, err := Generate(ctx, s, []int{1, 2, 3}, Options{MaxNewTokens: 50, OnToken: func(Token) error {
		n++
		if n == 3 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || res == nil || res.StopReason != StopCanceled {
		t.Fatalf("err %v res %+v", err, res)
	}
	if len(res.GeneratedIDs) != 3 || s.forwards > 1+3 {
		t.Errorf("canceled at token 3: %d generated, %d forwards", len(res.GeneratedIDs), s.forwards)
	}
	// A callback error stops generation and is returned.
	boom := errors.New("boom")
	s = openZero(e, flatConfig(128, 8))
	if _, err := Generate(context.Background(), s, []int{1}, Options{MaxNewTokens: 9, OnToken: func(Token) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("callback error: %v", err)
	}
}

func TestGenerateStreamsText(t *testing.T) {
	want := "héllo €!"
	script := []byte(want)
	tok := newByteTok()
	e := &zeroEngine{vocab: tok.vocab(), boost: func(h uint64, n int) int {
		if i := n - 2; i >= 0 && i < len(script) {
			return int(script[i])
		}
		return tok.special("</s>")
	}}
	s := openZero(e, flatConfig(64, 4))
	var b strings.Builder
	var empties int
	res, err := Generate(context.Background(), s, []int{tok.special("<s>"), 'x'}, Options{MaxNewTokens: 40, Decoder: tok,
		StopIDs: []int{tok.special("</s>")}, OnToken: func(t Token) error {
			if t.Text == "" {
				empties++
			}
			b.WriteString(t.Text)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != want || res.Text != want {
		t.Errorf("streamed %q, text %q, want %q", b.String(), res.Text, want)
	}
	// é is 2 bytes and € 3: 1 + 2 tokens held back.
	if empties != 3 {
		t.Errorf("%d tokens streamed no text, want 3", empties)
	}
}

func TestGenerateBadInput(t *testing.T) {
	e := &zeroEngine{vocab: 10}
	s := openZero(e, flatConfig(32, 4))
	if _, err := Generate(context.Background(), s, nil, Options{MaxNewTokens: 3}); err == nil {
		t.Error("empty prompt accepted")
	}
	if _, err := Generate(context.Background(), s, []int{1}, Options{MaxNewTokens: -1}); err == nil {
		t.Error("negative budget accepted")
	}
	if _, err := Generate(context.Background(), s, []int{1}, Options{MaxNewTokens: 1, Sampling: sampler.Sampling{TopP: 2}}); err == nil {
		t.Error("top-p 2 accepted")
	}
	if _, err := Generate(context.Background(), s, []int{1, 99}, Options{MaxNewTokens: 1}); err == nil {
		t.Error("out-of-vocabulary prompt token accepted")
	}
}

func BenchmarkDecodeLoopZeroEngine(b *testing.B) {
	// The loop's own cost per token: a 262,145-wide logits row from an
	// engine that does nothing.
	row := fixtures.Logits(b, fixtures.Gemma3, "chat0_prefill_last_logits.bin")
	s := &constSession{logits: row, capacity: 1 << 20}
	b.ResetTimer()
	for b.Loop() {
		s.n = 0
		if _, err := Generate(context.Background(), s, []int{1}, Options{MaxNewTokens: 64}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64)/1e3, "µs/token")
}

// constSession returns the same logits every step, at no cost.
type constSession struct {
	zeroSession
	logits   []float32
	n        int
	capacity int
}

func (s *constSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	s.n += len(ids)
	return s.logits, nil
}
func (s *constSession) Len() int              { return s.n }
func (s *constSession) Capacity() int         { return s.capacity }
func (s *constSession) CanExtend(n int) bool  { return s.n+n <= s.capacity }
func (s *constSession) Vocab() int            { return len(s.logits) }
func (s *constSession) Memory() engine.Memory { return engine.Memory{} }
