package inference

import (
	"math"
	"slices"
	"testing"

	"etchat/internal/fixtures"
)

// logSoftmax64 is the reference: the row's log-softmax in float64.
func logSoftmax64(row []float32) []float64 {
	out := make([]float64, len(row))
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, float64(x))
	}
	var s float64
	for _, x := range row {
		s += math.Exp(float64(x) - m)
	}
	for i, x := range row {
		out[i] = float64(x) - m - math.Log(s)
	}
	return out
}

// TestLogprobsOfFixtureLogits: on PyTorch's last-prefill logits of the
// llama3 fixture's first case, the logprob of every top token equals the
// float64 log-softmax, the top five are the reference's top five in
// order, and the row is left as it was.
func TestLogprobsOfFixtureLogits(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	row := fixtures.Logits(t, fixtures.Llama3, "chat0_prefill_last_logits.bin")
	keep := slices.Clone(row)
	want := logSoftmax64(row)
	lp, top := logprobs(row, ref.Cases[0].GreedyIDs[0], 5)
	if d := math.Abs(lp - want[ref.Cases[0].GreedyIDs[0]]); d > 1e-12 {
		t.Errorf("logprob %v, reference %v", lp, want[ref.Cases[0].GreedyIDs[0]])
	}
	var ids []int
	for _, c := range top {
		ids = append(ids, c.ID)
		if d := math.Abs(c.Logprob - want[c.ID]); d > 1e-12 {
			t.Errorf("token %d: logprob %v, reference %v", c.ID, c.Logprob, want[c.ID])
		}
	}
	var top5 struct {
		Cases []struct {
			Top5 []int `json:"prefill_last_top5"`
		} `json:"cases"`
	}
	fixtures.Reference(t, fixtures.Llama3, &top5)
	if !slices.Equal(ids, top5.Cases[0].Top5) {
		t.Errorf("top 5 %v, reference %v", ids, top5.Cases[0].Top5)
	}
	if !slices.Equal(row, keep) {
		t.Error("the logits row was written")
	}
	if _, top := logprobs(row, 0, 100); len(top) != MaxTopLogprobs {
		t.Errorf("%d top logprobs, at most %d", len(top), MaxTopLogprobs)
	}
}

// TestGenerateLogprobs: the engine's own generation reports, for each
// greedy token, the top candidate's logprob (the token itself), close to
// PyTorch's float64 log-softmax for the first one.
func TestGenerateLogprobs(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	sess, _, _ := openFixture(t, fixtures.Llama3)
	c := ref.Cases[0]
	var toks []Token
	_, err := Generate(bg, sess, c.InputIDs, Options{MaxNewTokens: 4, IgnoreEOS: true, Logprobs: true, TopLogprobs: 3,
		OnToken: func(tk Token) error { toks = append(toks, tk); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	want := logSoftmax64(fixtures.Logits(t, fixtures.Llama3, "chat0_prefill_last_logits.bin"))
	if len(toks) != 4 || toks[0].ID != c.GreedyIDs[0] || math.Abs(toks[0].Logprob-want[c.GreedyIDs[0]]) > 1e-3 {
		t.Fatalf("tokens %+v; first logprob want %v", toks, want[c.GreedyIDs[0]])
	}
	for i, tk := range toks {
		if len(tk.TopLogprobs) != 3 || tk.TopLogprobs[0].ID != tk.ID || tk.TopLogprobs[0].Logprob != tk.Logprob ||
			tk.Logprob > 0 || tk.TopLogprobs[1].Logprob > tk.TopLogprobs[0].Logprob {
			t.Errorf("token %d: %+v", i, tk)
		}
	}
}
