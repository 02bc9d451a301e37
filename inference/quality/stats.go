package quality

import (
	"fmt"
	"math"
	"slices"
)

// KLD is what llama-perplexity's --kl-divergence reports, against a base.
// KLDs are in nats; Δp (the scored token's probability here minus in the
// base) and SameTop are percentages, as llama-perplexity prints them.
type KLD struct {
	Base BaseInfo `json:"base"`
	// Mean ± MeanErr (the standard error of the mean), the median,
	// percentiles (linear between the closest ranks) and extremes of the
	// per-token KL divergence from the base's distribution to this one's.
	Mean    float64 `json:"kld_mean"`
	MeanErr float64 `json:"kld_mean_err"`
	Max     float64 `json:"kld_max"`
	P999    float64 `json:"kld_p99_9"`
	P99     float64 `json:"kld_p99"`
	P90     float64 `json:"kld_p90"`
	Median  float64 `json:"kld_median"`
	P10     float64 `json:"kld_p10"`
	P1      float64 `json:"kld_p1"`
	Min     float64 `json:"kld_min"`
	// SameTop is how often both put the same token first, ± its binomial
	// standard error.
	SameTop    float64 `json:"same_top_pct"`
	SameTopErr float64 `json:"same_top_pct_err"`
	// Δp of the scored token, in percentage points.
	DeltaPMean    float64 `json:"delta_p_mean_pct"`
	DeltaPMeanErr float64 `json:"delta_p_mean_pct_err"`
	DeltaPRMS     float64 `json:"delta_p_rms_pct"`
	DeltaPRMSErr  float64 `json:"delta_p_rms_pct_err"`
	// The base's own perplexity over the same tokens, and the mean of
	// ln(PPL/PPL_base) per token ± its standard error.
	BasePPL    float64 `json:"base_ppl"`
	BasePPLErr float64 `json:"base_ppl_err"`
	LnRatio    float64 `json:"ln_ppl_ratio"`
	LnRatioErr float64 `json:"ln_ppl_ratio_err"`
	// Agree is, per scored token in order, 1 where both put the same token
	// first.
	Agree []int `json:"top1_agree"`
}

// BaseInfo is what made a base.
type BaseInfo struct {
	Path        string `json:"path"`
	Model       string `json:"model"`
	ModelSHA256 string `json:"model_sha256"`
	Engine      string `json:"engine"`
	Mode        string `json:"mode,omitempty"`
	// TopK: the base kept only each row's k most likely tokens (0: every
	// token). Its KLD then treats the rest as one outcome, which can only
	// lower it (a lower bound of the full KLD); the other statistics are
	// exact.
	TopK int `json:"top_k"`
	// SameTokenizer: the tokenizer.json files' sha256 are equal; false with
	// equal ids means the tokens were checked one by one instead.
	SameTokenizer bool `json:"same_tokenizer"`
}

// moments accumulates a value's mean and standard error.
type moments struct{ n, sum, sum2 float64 }

func (m *moments) add(v float64) { m.n++; m.sum += v; m.sum2 += v * v }
func (m *moments) mean() float64 { return m.sum / m.n }

// err is the standard error of the mean (0 below two values).
func (m *moments) err() float64 {
	if m.n < 2 {
		return 0
	}
	mu := m.mean()
	v := m.sum2/m.n - mu*mu
	if v <= 0 {
		return 0
	}
	return math.Sqrt(v / (m.n - 1))
}

// accum gathers the statistics row by row.
type accum struct {
	nll  moments
	lp   []float64
	save *logitsWriter
	base *logitsReader
	brow baseRow

	kld           []float64
	kldM          moments
	same          int
	dp, dp2       moments // Δp and Δp²
	baseNLL, lnRt moments
	agree         []int
}

// add scores one row of logits predicting target.
func (a *accum) add(w, pos int, logits []float32, target int) error {
	if target < 0 || target >= len(logits) {
		return fmt.Errorf("token id %d outside the %d-token vocabulary", target, len(logits))
	}
	for _, x := range logits {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 1) {
			return fmt.Errorf("window %d, position %d: the logits hold %v", w+1, pos, x)
		}
	}
	var arg int
	a.lp, arg = logSoftmax(a.lp[:cap(a.lp)], logits)
	nll := -a.lp[target]
	a.nll.add(nll)
	if a.save != nil {
		if err := a.save.row(a.lp, arg, target); err != nil {
			return err
		}
	}
	if a.base == nil {
		return nil
	}
	if err := a.base.next(&a.brow); err != nil {
		return err
	}
	a.compare(arg, target, nll)
	return nil
}

// compare adds one token's KLD statistics against the base row just read.
func (a *accum) compare(arg, target int, nll float64) {
	b := &a.brow
	var kld float64
	if b.lp != nil && a.base.h.TopK == 0 {
		for i, lb := range b.lp {
			kld += math.Exp(lb) * (lb - a.lp[i])
		}
	} else {
		restB, restN := 1.0, 1.0
		for i, id := range b.ids {
			pb := math.Exp(b.topLP[i])
			kld += pb * (b.topLP[i] - a.lp[id])
			restB -= pb
			restN -= math.Exp(a.lp[id])
		}
		if restB > 1e-12 {
			kld += restB * (math.Log(restB) - math.Log(max(restN, 1e-30)))
		}
	}
	kld = max(kld, 0) // rounding can leave a hair below zero
	a.kld = append(a.kld, kld)
	a.kldM.add(kld)
	var ag int
	if arg == b.argmax {
		a.same++
		ag = 1
	}
	a.agree = append(a.agree, ag)
	dp := math.Exp(-nll) - math.Exp(b.target)
	a.dp.add(dp)
	a.dp2.add(dp * dp)
	a.baseNLL.add(-b.target)
	a.lnRt.add(nll + b.target)
}

// ppl is the perplexity and its ± estimate (llama-perplexity's: PPL times
// the standard error of the mean NLL).
func ppl(m *moments) (float64, float64) {
	p := math.Exp(m.mean())
	return p, p * m.err()
}

// percentile of sorted v, linear between the closest ranks.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	x := p * float64(len(v)-1)
	i := int(x)
	if i >= len(v)-1 {
		return v[len(v)-1]
	}
	return v[i] + (x-float64(i))*(v[i+1]-v[i])
}

// kldResult is the KLD statistics gathered.
func (a *accum) kldResult(info BaseInfo) *KLD {
	n := float64(len(a.kld))
	if n == 0 {
		return nil
	}
	v := slices.Clone(a.kld)
	slices.Sort(v)
	k := &KLD{Base: info, Mean: a.kldM.mean(), MeanErr: a.kldM.err(), Max: v[len(v)-1], Min: v[0],
		P999: percentile(v, 0.999), P99: percentile(v, 0.99), P90: percentile(v, 0.9), Median: percentile(v, 0.5),
		P10: percentile(v, 0.1), P1: percentile(v, 0.01), Agree: a.agree}
	p := float64(a.same) / n
	k.SameTop = 100 * p
	if n > 1 {
		k.SameTopErr = 100 * math.Sqrt(p*(1-p)/(n-1))
	}
	k.DeltaPMean, k.DeltaPMeanErr = 100*a.dp.mean(), 100*a.dp.err()
	if ms := a.dp2.mean(); ms > 0 {
		rms := math.Sqrt(ms)
		k.DeltaPRMS, k.DeltaPRMSErr = 100*rms, 100*0.5/rms*a.dp2.err()
	}
	k.BasePPL, k.BasePPLErr = ppl(&a.baseNLL)
	k.LnRatio, k.LnRatioErr = a.lnRt.mean(), a.lnRt.err()
	return k
}
