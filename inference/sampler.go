package inference

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"
)

// Sampling chooses how the next token is picked from a logits row.
type Sampling struct {
	// Temperature divides the logits before the softmax; 0 is greedy argmax
	// (the default, and what makes two runs comparable).
	Temperature float64
	// TopK keeps the K most likely tokens; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// exceeds P (nucleus sampling); 0 or 1 keeps all. ExecuTorch's runner
	// samples with top-p 0.9 whenever the temperature is above 0.
	TopP float64
	// Seed seeds the random source; 0 picks one from the clock (Sampler.Seed
	// reports it, so the run can be repeated).
	Seed uint64
}

// DefaultTopP is ExecuTorch's sampler's nucleus (kTopp).
const DefaultTopP = 0.9

// Greedy reports whether the sampling is plain argmax.
func (s Sampling) Greedy() bool { return s.Temperature == 0 }

// Validate checks the values are usable.
func (s Sampling) Validate() error {
	switch {
	case math.IsNaN(s.Temperature) || s.Temperature < 0 || math.IsInf(s.Temperature, 0):
		return fmt.Errorf("temperature %v must be a finite number ≥ 0", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top-k %d must be ≥ 0", s.TopK)
	case math.IsNaN(s.TopP) || s.TopP < 0 || s.TopP > 1:
		return fmt.Errorf("top-p %v must be in [0, 1]", s.TopP)
	}
	return nil
}

// ErrBadLogits: the logits row has no usable value (all NaN, or empty).
var ErrBadLogits = errors.New("logits have no finite value")

// Sampler picks tokens from logits rows. It keeps its scratch buffers and
// random state across calls; it is not safe for concurrent use.
type Sampler struct {
	cfg  Sampling
	seed uint64
	rng  *rand.Rand

	idx   []int32   // candidate token ids, ascending
	w     []float32 // candidate weights exp((l - max)/T)
	vals  []float32 // scratch for selection
	hist  []float64 // the nucleus histogram (see histKey)
	hist2 []float64 // the second goroutine's
}

// NewSampler validates cfg and makes a sampler.
func NewSampler(cfg Sampling) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) | 1
	}
	return &Sampler{cfg: cfg, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// Seed is the seed in use (the clock's when Sampling.Seed was 0).
func (s *Sampler) Seed() uint64 { return s.seed }

// Config is the sampling the sampler was made with.
func (s *Sampler) Config() Sampling { return s.cfg }

// Sample picks the next token from one logits row.
func (s *Sampler) Sample(logits []float32) (int, error) {
	if s.cfg.Greedy() {
		return Argmax(logits)
	}
	best, err := Argmax(logits)
	if err != nil {
		return 0, err
	}
	maxv := logits[best]
	if math.IsInf(float64(maxv), 1) {
		return best, nil // an infinite logit takes all the probability
	}
	invT := float32(1 / s.cfg.Temperature)
	coin := s.rng.Float64()

	p := s.cfg.TopP
	nucleus := p > 0 && p < 1
	var total float64
	if k := s.cfg.TopK; k > 0 && k < len(logits) {
		s.topKCandidates(logits, k)
		for i, id := range s.idx {
			s.w[i] = expNeg((logits[id] - maxv) * invT)
		}
		total = s.weigh(0, len(s.w), s.hist0(nucleus))
	} else {
		total = s.allCandidates(logits, maxv, invT, nucleus)
	}
	theta, ties := float32(-1), 0
	if nucleus {
		theta, ties, total = s.nucleus(p, total)
	}
	return s.pick(coin*total, theta, ties), nil
}

// Argmax is the index of the largest logit, the first on ties (as
// ExecuTorch's sampler). NaN entries are skipped; a row with no number is
// ErrBadLogits.
func Argmax(x []float32) (int, error) {
	n := len(x)
	if n == 0 {
		return 0, fmt.Errorf("%w: empty row", ErrBadLogits)
	}
	if n >= parallelMin && runtime.GOMAXPROCS(0) > 1 {
		// Two halves on two goroutines; the first half wins ties.
		mid := n / 2
		var hi int
		done := make(chan struct{})
		go func() { hi = argmax4(x[mid:]); close(done) }()
		lo := argmax4(x[:mid])
		<-done
		switch {
		case hi >= 0 && (lo < 0 || x[mid+hi] > x[lo]):
			return mid + hi, nil
		case lo >= 0:
			return lo, nil
		}
	} else if i := argmax4(x); i >= 0 {
		return i, nil
	}
	// Nothing above -Inf: the first -Inf if any, else the row is all NaN.
	for j, v := range x {
		if !math.IsNaN(float64(v)) {
			return j, nil
		}
	}
	return 0, fmt.Errorf("%w: all %d values are NaN", ErrBadLogits, n)
}

// argmax4 is the first index of the largest value above -Inf, or -1.
func argmax4(x []float32) int {
	n := len(x)
	// Four independent lanes keep the comparisons off one dependency chain;
	// the first index among equal maxima is recovered below.
	b0, b1, b2, b3 := float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))
	i0, i1, i2, i3 := -1, -1, -1, -1
	i := 0
	for ; i+4 <= n; i += 4 {
		v := x[i : i+4 : i+4]
		if v[0] > b0 {
			b0, i0 = v[0], i
		}
		if v[1] > b1 {
			b1, i1 = v[1], i+1
		}
		if v[2] > b2 {
			b2, i2 = v[2], i+2
		}
		if v[3] > b3 {
			b3, i3 = v[3], i+3
		}
	}
	for ; i < n; i++ {
		if x[i] > b0 {
			b0, i0 = x[i], i
		}
	}
	best, bi := b0, i0
	for _, c := range [3]struct {
		v float32
		i int
	}{{b1, i1}, {b2, i2}, {b3, i3}} {
		if c.i >= 0 && (c.v > best || (c.v == best && (bi < 0 || c.i < bi))) {
			best, bi = c.v, c.i
		}
	}
	return bi
}

// negligible is how far below the maximum (after the temperature) a logit
// may be and still count: e^-30 ≈ 1e-13 of the top token's weight.
const negligible = 30

func (s *Sampler) grow(n int) {
	if cap(s.idx) < n {
		s.idx = make([]int32, 0, n)
		s.w = make([]float32, 0, n)
	}
	s.idx, s.w = s.idx[:0], s.w[:0]
}

// allCandidates keeps every token whose weight is not negligible and
// returns the weights' total; with hist it also fills the nucleus
// histogram. A large vocabulary is split between two goroutines.
func (s *Sampler) allCandidates(logits []float32, maxv, invT float32, hist bool) float64 {
	n := len(logits)
	if cap(s.idx) < n {
		s.idx, s.w = make([]int32, n), make([]float32, n)
	}
	s.idx, s.w = s.idx[:n], s.w[:n]
	floor := maxv - negligible/invT
	fill := func(lo, hi int) int {
		idx, w, out := s.idx[lo:hi], s.w[lo:hi], 0
		for i, l := range logits[lo:hi] {
			if l >= floor { // false for NaN
				idx[out], w[out] = int32(lo+i), expNeg((l-maxv)*invT)
				out++
			}
		}
		return out
	}
	if n < parallelMin || runtime.GOMAXPROCS(0) < 2 {
		m := fill(0, n)
		s.idx, s.w = s.idx[:m], s.w[:m]
		return s.weigh(0, m, s.hist0(hist))
	}
	mid := n / 2
	var m2 int
	var total2 float64
	done := make(chan struct{})
	go func() {
		m2 = fill(mid, n)
		total2 = s.weigh(mid, mid+m2, s.hist1(hist))
		close(done)
	}()
	m1 := fill(0, mid)
	total := s.weigh(0, m1, s.hist0(hist))
	<-done
	copy(s.idx[m1:], s.idx[mid:mid+m2])
	copy(s.w[m1:], s.w[mid:mid+m2])
	s.idx, s.w = s.idx[:m1+m2], s.w[:m1+m2]
	if hist {
		for i, v := range s.hist2 {
			s.hist[i] += v
		}
	}
	return total + total2
}

// parallelMin is the vocabulary size from which candidates are weighed by
// two goroutines.
const parallelMin = 1 << 16

// The nucleus histogram: 8 mantissa bits per power of two, weights below
// 2^-64 sharing the lowest bucket. Float bits are monotone for positive
// floats, so buckets are ordered by weight.
const (
	histMantBits = 8
	histLowExp   = 127 - 64
	histBuckets  = (128 - histLowExp + 1) << histMantBits
)

func histKey(w float32) int {
	b := math.Float32bits(w)
	e := int(b>>23) - histLowExp
	if e < 0 {
		return 0
	}
	return e<<histMantBits | int(b>>(23-histMantBits))&(1<<histMantBits-1)
}

func (s *Sampler) hist0(want bool) []float64 {
	if !want {
		return nil
	}
	if s.hist == nil {
		s.hist = make([]float64, histBuckets)
	}
	clear(s.hist)
	return s.hist
}

func (s *Sampler) hist1(want bool) []float64 {
	if !want {
		return nil
	}
	if s.hist2 == nil {
		s.hist2 = make([]float64, histBuckets)
	}
	clear(s.hist2)
	return s.hist2
}

// weigh sums s.w[lo:hi], adding each weight to its bucket when hist is
// not nil.
func (s *Sampler) weigh(lo, hi int, hist []float64) float64 {
	var total float64
	if hist == nil {
		for _, w := range s.w[lo:hi] {
			total += float64(w)
		}
		return total
	}
	for _, w := range s.w[lo:hi] {
		hist[histKey(w)] += float64(w)
		total += float64(w)
	}
	return total
}

// topKCandidates keeps the k largest logits (lowest ids first on ties), in
// ascending id order. A size-k min-heap sees each logit once; most fail the
// comparison with its root, a well-predicted branch.
func (s *Sampler) topKCandidates(logits []float32, k int) {
	s.grow(k)
	h := s.idx[:0]
	less := func(a, b int32) bool { // heap order: smaller value, then larger id, at the root
		va, vb := logits[a], logits[b]
		return va < vb || (va == vb && a > b)
	}
	for i, l := range logits {
		if l != l { // NaN never enters
			continue
		}
		if len(h) < k {
			h = append(h, int32(i))
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !less(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			continue
		}
		if l <= logits[h[0]] {
			continue
		}
		h[0] = int32(i)
		for j := 0; ; {
			c := 2*j + 1
			if c >= len(h) {
				break
			}
			if c+1 < len(h) && less(h[c+1], h[c]) {
				c++
			}
			if !less(h[c], h[j]) {
				break
			}
			h[j], h[c] = h[c], h[j]
			j = c
		}
	}
	slices.Sort(h)
	s.idx = h
	s.w = s.w[:len(h)]
}

// nucleus finds the smallest set of largest weights whose sum exceeds p of
// the total: the weights above theta and the first ties of those equal to
// it (lowest ids first), and their sum. The threshold is found by a histogram over the
// weights' float bits (monotone for positive floats), then an exact
// selection inside the one bucket that holds it.
func (s *Sampler) nucleus(p, total float64) (theta float32, ties int, sum float64) {
	if len(s.w) == 0 {
		return -1, 0, 0
	}
	hist := s.hist
	key := histKey
	target := p * total
	var acc float64
	kb := -1
	for k := len(hist) - 1; k >= 0; k-- {
		if acc+hist[k] > target {
			kb = k
			break
		}
		acc += hist[k]
	}
	if kb < 0 { // rounding: everything is in
		return -1, 0, total
	}
	// Refine inside the threshold bucket with two more histograms over the
	// remaining 15 mantissa bits; what is left are equal weights.
	v := s.vals[:0]
	for _, w := range s.w {
		if key(w) == kb {
			v = append(v, w)
		}
	}
	s.vals = v
	var sub [256]float64
	for _, lvl := range [2]struct{ shift, mask uint32 }{{7, 0xff}, {0, 0x7f}} {
		clear(sub[:])
		for _, w := range v {
			sub[math.Float32bits(w)>>lvl.shift&lvl.mask] += float64(w)
		}
		k := int(lvl.mask)
		for ; k > 0 && acc+sub[k] <= target; k-- {
			acc += sub[k]
		}
		out := v[:0]
		for _, w := range v {
			if int(math.Float32bits(w)>>lvl.shift&lvl.mask) == k {
				out = append(out, w)
			}
		}
		v = out
	}
	if len(v) == 0 {
		return -1, 0, total
	}
	theta = v[0]
	ties = int(math.Floor((target-acc)/float64(theta))) + 1
	ties = min(max(ties, 1), len(v))
	return theta, ties, acc + float64(ties)*float64(theta)
}

// pick walks the included candidates (weights above theta, and the first
// ties equal to it) to the cumulative weight r.
func (s *Sampler) pick(r float64, theta float32, ties int) int {
	var cdf float64
	last := -1
	for i, w := range s.w {
		if w <= theta {
			if w < theta || ties == 0 {
				continue
			}
			ties--
		}
		cdf += float64(w)
		last = i
		if r < cdf {
			return int(s.idx[i])
		}
	}
	if last < 0 {
		return int(s.idx[0])
	}
	return int(s.idx[last]) // rounding
}

// expNeg is e^x for x ≤ 0 to about 2e-7 relative error (0 below -87), a
// fraction of math.Exp's cost: x·log2(e) splits into an integer power of two
// and a remainder in [-0.5, 0.5] whose 2^f is a short polynomial.
func expNeg(x float32) float32 {
	if x < -87 {
		return 0
	}
	t := float64(x) * math.Log2E
	const shifter = 6755399441055744.0 // 1.5·2^52: adding it rounds to an integer
	k := t + shifter
	n := int64(math.Float64bits(k)) - int64(math.Float64bits(shifter))
	f := (t - (k - shifter)) * math.Ln2 // |f| ≤ ln2/2
	// e^f, Taylor to degree 6 (error < 2e-7 on |f| ≤ 0.35)
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24+f*(1.0/120+f*(1.0/720))))))
	return float32(math.Float64frombits(math.Float64bits(p) + uint64(n)<<52))
}
