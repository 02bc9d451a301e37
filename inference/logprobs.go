package inference

import "math"

// TokenLogprob is one candidate token and its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float64
}

// MaxTopLogprobs bounds Options.TopLogprobs (OpenAI's limit is 20).
const MaxTopLogprobs = 20

// LogSumExp is log Σ exp(row[i]) in float64, shifted by the row's maximum
// so that no term overflows: a logits row's log-softmax is row[i] minus it.
// The logprobs the server reports and the perplexity scorer share it.
func LogSumExp(row []float32) float64 {
	maxv := math.Inf(-1)
	for _, x := range row {
		maxv = max(maxv, float64(x))
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x) - maxv)
	}
	return maxv + math.Log(sum)
}

// logprobs is the log-probability of id under the softmax of the raw
// logits row (before temperature, top-k or top-p: the model's own
// distribution, as OpenAI and vLLM report it), and the top most likely
// tokens, most likely first. It is computed in float64 and only reads
// the row (on the native engine it is the library's buffer).
func logprobs(row []float32, id, top int) (float64, []TokenLogprob) {
	if len(row) == 0 {
		return math.NaN(), nil
	}
	lse := LogSumExp(row)
	lp := math.NaN()
	if id >= 0 && id < len(row) {
		lp = float64(row[id]) - lse
	}
	top = min(top, MaxTopLogprobs, len(row))
	if top <= 0 {
		return lp, nil
	}
	// The top few by insertion into a short sorted list: one pass over
	// the row, ties to the lower id (as argmax).
	best := make([]TokenLogprob, 0, top)
	for i, x := range row {
		v := float64(x)
		if len(best) == top && v <= best[top-1].Logprob {
			continue
		}
		j := len(best)
		if j < top {
			best = append(best, TokenLogprob{})
		} else {
			j = top - 1
		}
		for j > 0 && best[j-1].Logprob < v {
			best[j] = best[j-1]
			j--
		}
		best[j] = TokenLogprob{ID: i, Logprob: v}
	}
	for i := range best {
		best[i].Logprob -= lse
	}
	return lp, best
}
