// Package sampler picks the next token from a logits row: greedy argmax
// (NaN skipped, the lower id on ties) or temperature, top-k and top-p
// sampling from a seeded stream, with AVX2 kernels on amd64. It imports
// nothing of etchat's; package inference's generation loop drives it.
package sampler

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

	// Candidates by position: the token id (idx; nil when the position is
	// the id), the weight exp((l - max)/T) and the next member (+1) of the
	// histogram bucket's list.
	idx  []int32
	w    []float32
	next []int32
	topk []int32 // top-k's ids
	// The histogram (see histKey): each bucket's mass and last member
	// (+1); with two, the second goroutine's half has its own lists.
	mass, mass2 []float64
	head, head2 []int32
	two         bool
	klo, khi    int       // the buckets in use
	vals, tmp   []float32 // the boundary bucket's weights, and scratch
	kept, stack []int32   // positions in the bucket walked
	// SampleMasked's compacted row: the allowed ids and their logits.
	mids  []int32
	mvals []float32
}

// New validates cfg and makes a sampler.
func New(cfg Sampling) (*Sampler, error) {
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
//
// Each candidate's weight exp((l - max)/T) is computed once, in a pass that
// also files it into a histogram of the weights' float bits (monotone for
// positive floats, so the buckets are ordered by weight), keeping each
// bucket's mass and the list of its members. Top-p's threshold lies in the
// bucket where the running mass from the top first exceeds p of the total;
// only that bucket's members are examined exactly. The token is picked by
// the same walk, from the heaviest bucket down and by id inside a bucket,
// so a draw costs a pass over the row and then work in the number of
// buckets and the members of one or two of them.
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
	if k := s.cfg.TopK; k > 0 && k < len(logits) {
		s.topKCandidates(logits, k, maxv, invT)
	} else {
		s.allCandidates(logits, maxv, invT)
	}

	// Walk the buckets from the heaviest to the nucleus's boundary bucket.
	mass := s.mass
	var total float64 // summed in the order of the walks below
	for k := s.khi; k >= s.klo; k-- {
		total += mass[k]
	}
	kb, acc := -1, 0.0 // the boundary bucket; the mass above it
	theta, ties := float32(-1), 0
	if p := s.cfg.TopP; p > 0 && p < 1 {
		target := p * total
		for k := s.khi; k >= s.klo; k-- {
			if acc+mass[k] > target {
				kb = k
				break
			}
			acc += mass[k]
		}
		if kb >= 0 {
			s.vals = s.vals[:0]
			s.members(kb, func(i int32) { s.vals = append(s.vals, s.w[i]) })
			theta, ties = s.threshold(acc, target)
		}
	}
	// The kept part of the boundary bucket, in id order.
	var kept float64
	if kb >= 0 {
		s.kept = s.kept[:0]
		t := ties
		s.members(kb, func(i int32) {
			w := s.w[i]
			if w < theta || w == theta && t == 0 {
				return
			}
			if w == theta {
				t--
			}
			s.kept = append(s.kept, i)
			kept += float64(w)
		})
		total = acc + kept
	}

	r := coin * total
	var cum float64
	last := -1 // the lightest bucket with mass, for rounding
	for k := s.khi; k >= s.klo; k-- {
		if k == kb {
			return s.walk(s.kept, cum, r), nil
		}
		if m := mass[k]; m > 0 {
			last = k
			if r < cum+m {
				break
			}
			cum += m
		}
	}
	if last < 0 {
		return best, nil
	}
	s.kept = s.kept[:0]
	s.members(last, func(i int32) {
		if s.w[i] > 0 {
			s.kept = append(s.kept, i)
		}
	})
	return s.walk(s.kept, cum, r), nil
}

// walk returns the token at cumulative weight r among positions from cum,
// the last on rounding.
func (s *Sampler) walk(pos []int32, cum, r float64) int {
	for _, i := range pos {
		cum += float64(s.w[i])
		if r < cum {
			return s.id(i)
		}
	}
	return s.id(pos[len(pos)-1])
}

func (s *Sampler) id(pos int32) int {
	if s.idx == nil {
		return int(pos)
	}
	return int(s.idx[pos])
}

// members calls f with bucket k's members' positions in ascending order.
// Each half's list runs from its last member back.
func (s *Sampler) members(k int, f func(int32)) {
	for h, heads := range [2][]int32{s.head, s.head2} {
		if h == 1 && !s.two {
			break
		}
		st := s.stack[:0]
		for j := heads[k]; j != 0; j = s.next[j-1] {
			st = append(st, j-1)
		}
		for j := len(st) - 1; j >= 0; j-- {
			f(st[j])
		}
		s.stack = st
	}
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
		go func() { hi = argmaxRow(x[mid:]); close(done) }()
		lo := argmaxRow(x[:mid])
		<-done
		switch {
		case hi >= 0 && (lo < 0 || x[mid+hi] > x[lo]):
			return mid + hi, nil
		case lo >= 0:
			return lo, nil
		}
	} else if i := argmaxRow(x); i >= 0 {
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

// allCandidates weighs every token (0 for negligible ones and NaN) and files
// the others into the histogram; a large vocabulary is split between two
// goroutines, each with its own lists. The weights come first, from weigh
// (AVX2 where the CPU has it, the same bits as weighGo), then a scalar pass
// files them.
func (s *Sampler) allCandidates(logits []float32, maxv, invT float32) {
	n := len(logits)
	if cap(s.w) < n {
		s.w, s.next = make([]float32, n), make([]int32, n)
	}
	s.w, s.next, s.idx = s.w[:n], s.next[:n], nil
	s.clearBuckets()
	floor := maxv - negligible/invT
	// (l - max)·invT·128 exactly (a power of two commutes with rounding),
	// finite even for a vanishing temperature.
	scale := min(invT*expSteps, math.MaxFloat32)
	fill := func(lo, hi int, mass []float64, head []int32) {
		weigh(logits[lo:hi], s.w[lo:hi], maxv, floor, scale)
		w, next := s.w[:hi], s.next[:hi]
		for i := lo; i < hi; i++ {
			x := w[i]
			if x == 0 { // below the floor, or NaN
				continue
			}
			k := histKey(x)
			mass[k] += float64(x)
			next[i] = head[k]
			head[k] = int32(i + 1)
		}
	}
	if n < parallelMin || runtime.GOMAXPROCS(0) < 2 {
		s.two = false
		fill(0, n, s.mass, s.head)
		s.setRange()
		return
	}
	s.two = true
	if s.mass2 == nil {
		s.mass2, s.head2 = make([]float64, histBuckets), make([]int32, histBuckets)
	}
	mid := n / 2
	done := make(chan struct{})
	go func() {
		fill(mid, n, s.mass2, s.head2)
		close(done)
	}()
	fill(0, mid, s.mass, s.head)
	<-done
	for k, m := range s.mass2 {
		s.mass[k] += m
	}
	s.setRange()
}

// clearBuckets empties the histogram: the range the last draw used.
func (s *Sampler) clearBuckets() {
	if s.mass == nil {
		s.mass, s.head = make([]float64, histBuckets), make([]int32, histBuckets)
		return
	}
	if s.klo > s.khi {
		return
	}
	clear(s.mass[s.klo : s.khi+1])
	clear(s.head[s.klo : s.khi+1])
	if s.mass2 != nil {
		clear(s.mass2[s.klo : s.khi+1])
		clear(s.head2[s.klo : s.khi+1])
	}
}

// setRange sets the buckets the walks visit (and the next draw clears):
// all for a large row, else those of the candidates' weights.
func (s *Sampler) setRange() {
	if len(s.w) >= 1<<12 {
		s.klo, s.khi = 0, histBuckets-1
		return
	}
	s.klo, s.khi = histBuckets, -1
	for _, w := range s.w {
		if w > 0 {
			k := histKey(w)
			s.klo, s.khi = min(s.klo, k), max(s.khi, k)
		}
	}
}

// parallelMin is the vocabulary size from which candidates are weighed by
// two goroutines.
const parallelMin = 1 << 16

// The histogram: 8 mantissa bits per power of two, weights below 2^-48
// (all negligible; e^-30 ≈ 2^-43.3) sharing the lowest bucket.
const (
	histMantBits = 8
	histLowExp   = 127 - 48
	histBuckets  = (128 - histLowExp + 1) << histMantBits
)

func histKey(w float32) int {
	return max(int(math.Float32bits(w)>>(23-histMantBits))-histLowExp<<histMantBits, 0)
}

// topKCandidates keeps the k largest logits (lowest ids first on ties), in
// ascending id order, weighs them and files them into the histogram. A
// size-k min-heap sees each logit once; most fail the comparison with its
// root, a well-predicted branch.
func (s *Sampler) topKCandidates(logits []float32, k int, maxv, invT float32) {
	if cap(s.topk) < k {
		s.topk = make([]int32, 0, k)
	}
	h := s.topk[:0]
	less := func(a, b int32) bool { // heap order: smaller value, then larger id, at the root
		va, vb := logits[a], logits[b]
		return va < vb || (va == vb && a > b)
	}
	sift := func(h []int32) { // the root moves down to its place
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
	i := 0
	for ; i < len(logits) && len(h) < k; i++ {
		if l := logits[i]; l != l { // NaN never enters
			continue
		}
		h = append(h, int32(i))
		for j := len(h) - 1; j > 0; {
			p := (j - 1) / 2
			if !less(h[j], h[p]) {
				break
			}
			h[j], h[p] = h[p], h[j]
			j = p
		}
	}
	if len(h) > 0 {
		root := logits[h[0]]
		for ; i < len(logits); i++ {
			if l := logits[i]; l > root { // false for NaN; a later equal loses
				h[0] = int32(i)
				sift(h)
				root = logits[h[0]]
			}
		}
	}
	slices.Sort(h)
	s.topk, s.idx = h, h
	if cap(s.w) < len(h) {
		s.w, s.next = make([]float32, len(h)), make([]int32, len(h))
	}
	s.w, s.next = s.w[:len(h)], s.next[:len(h)]
	s.clearBuckets()
	s.two = false
	scale := min(invT*expSteps, math.MaxFloat32)
	for i, id := range h {
		x := weight((logits[id] - maxv) * scale / expSteps) // finite as in allCandidates
		s.w[i] = x
		k := histKey(x)
		s.mass[k] += float64(x)
		s.next[i] = s.head[k]
		s.head[k] = int32(i + 1)
	}
	s.setRange()
}

// threshold finds, among the boundary bucket's weights s.vals, the weight
// theta at which the running sum from acc (the heavier buckets' mass)
// first exceeds target, and how many of the weights equal to it are
// needed. Two more histograms over the remaining 15 mantissa bits leave
// only equal weights.
func (s *Sampler) threshold(acc, target float64) (theta float32, ties int) {
	v := append(s.tmp[:0], s.vals...)
	s.tmp = v
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
	if len(v) == 0 { // rounding: the whole bucket is in
		return 0, len(s.vals)
	}
	theta = v[0]
	ties = int(math.Floor((target-acc)/float64(theta))) + 1
	return theta, min(max(ties, 1), len(v))
}

// weighGo sets w[i] to weightScaled((l[i] - maxv)·scale) where l[i] ≥
// floor, else 0 (NaN too): the portable kernel of weigh.
func weighGo(l, w []float32, maxv, floor, scale float32) {
	w = w[:len(l)]
	for i, l := range l {
		if !(l >= floor) {
			w[i] = 0
			continue
		}
		w[i] = weightScaled(float32((l - maxv) * scale)) // rounded, as the vector kernel's
	}
}

// weightNear is e^x for -30.5 ≤ x ≤ 0 to about 2e-7.
func weightNear(x float32) float32 { return weightScaled(x * expSteps) }

// weightScaled is e^(y/128) for -30.5·128 ≤ y ≤ 0: y rounds to an integer
// j (subtracting it from 1.5·2^23 does it), e^(-j/128) comes from a table
// and e^(d/128), d = y + j in [-0.5, 0.5] (exact), from a quadratic (error
// < 1e-8).
func weightScaled(y float32) float32 {
	const shifter = 12582912.0 // 1.5·2^23
	t := shifter - y
	j := math.Float32bits(t) & (expTabLen - 1)
	d := y + (t - shifter)
	// The conversions keep each product rounded (never fused into an
	// FMA), as the vector kernel computes it.
	p := float32(d*(0.5/(expSteps*expSteps))) + 1.0/expSteps
	p = float32(d*p) + 1
	return expTab[j] * p
}

// weight is e^x for any x ≤ 0 (0 below -87).
func weight(x float32) float32 {
	if x >= -30.5 {
		return weightNear(x)
	}
	return expNeg(x)
}

const (
	expSteps  = 128
	expTabLen = 4096 // > 30.5·128
)

var expTab = func() (t [expTabLen]float32) {
	for j := range t {
		t[j] = float32(math.Exp(-float64(j) / expSteps))
	}
	return
}()

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
