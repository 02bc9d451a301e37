package cpu

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	g "etchat/inference/mlxgraph"
)

// floatsRef is tensor.floats as it was before the typed loops: a closure
// per element over iterate, the reference the fast paths must match bit
// for bit.
func floatsRef(t *tensor) []float32 {
	dst := make([]float32, 0, t.numel())
	switch {
	case t.f != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, t.f[k]) })
	case t.h != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, t.halfAt(k)) })
	case t.u != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, float32(t.u[k])) })
	default:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, float32(t.i[k])) })
	}
	return dst
}

// randFloat is mostly ordinary values, sometimes the special ones.
func randFloat(r *rand.Rand) float32 {
	switch r.Intn(40) {
	case 0:
		return float32(math.NaN())
	case 1:
		return float32(math.Inf(1 - 2*r.Intn(2)))
	case 2:
		return float32(math.Copysign(0, float64(1-2*r.Intn(2))))
	case 3:
		return float32(r.NormFloat64() * 1e4)
	}
	return float32(r.NormFloat64() * 3)
}

// randView is a random strided view (sliced with steps, permuted, offset)
// of shape, over fresh fp32, bf16 or fp16 storage (kind 0, 1, 2).
func randView(r *rand.Rand, shape []int, kind int) *tensor {
	rank := len(shape)
	parent := make([]int, rank)
	steps := make([]int, rank)
	starts := make([]int, rank)
	perm := r.Perm(rank)
	if r.Intn(3) == 0 { // contiguous
		for i := range perm {
			perm[i] = i
		}
	}
	for i := range parent {
		d := shape[perm[i]]
		steps[i] = 1
		if r.Intn(3) == 0 {
			steps[i] = 1 + r.Intn(3)
		}
		starts[i] = r.Intn(2)
		parent[i] = starts[i] + (max(d, 1)-1)*steps[i] + 1 + r.Intn(2)
	}
	ps := contiguousStrides(parent)
	n := 1
	for _, d := range parent {
		n *= d
	}
	base := r.Intn(3)
	t := &tensor{shape: make([]int, rank), strides: make([]int, rank), off: base}
	for i := range parent {
		t.off += starts[i] * ps[i]
	}
	for i := range parent {
		t.shape[perm[i]] = shape[perm[i]]
		t.strides[perm[i]] = ps[i] * steps[i]
	}
	switch kind {
	case 0:
		t.dt, t.f = stF32, make([]float32, base+n)
		for i := range t.f {
			t.f[i] = randFloat(r)
		}
	case 1:
		t.dt, t.h = stBF16, make([]uint16, base+n)
		for i := range t.h {
			t.h[i] = f32ToBF16(randFloat(r))
		}
	default:
		t.dt, t.h = stF16, make([]uint16, base+n)
		for i := range t.h {
			t.h[i] = f32ToF16(randFloat(r))
		}
	}
	return t
}

func randShape(r *rand.Rand) []int {
	s := make([]int, r.Intn(5))
	for i := range s {
		s[i] = 1 + r.Intn(6)
		if r.Intn(4) == 0 {
			s[i] = 1
		}
	}
	if len(s) > 0 && r.Intn(6) == 0 {
		s[len(s)-1] = 17 + r.Intn(40) // past the 16-wide conversion kernel, odd
	}
	return s
}

// broadcastFrom is a shape that broadcasts to s: some dimensions set to 1,
// some leading ones dropped.
func broadcastFrom(r *rand.Rand, s []int) []int {
	b := append([]int(nil), s[r.Intn(len(s)+1):]...)
	for i := range b {
		if r.Intn(3) == 0 {
			b[i] = 1
		}
	}
	return b
}

func elemBitsEqual(a, b []float32) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i, false
		}
	}
	return 0, true
}

func TestForRowsFloatsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for c := 0; c < 3000; c++ {
		x := randView(r, randShape(r), r.Intn(3))
		if r.Intn(4) == 0 && len(x.shape) > 0 { // a broadcast: a stride 0
			d := r.Intn(len(x.shape))
			x.strides[d] = 0
		}
		got, want := x.floats(nil), floatsRef(x)
		if i, ok := elemBitsEqual(got, want); !ok {
			t.Fatalf("case %d: shape %v strides %v off %d dt %d: element %d: %v, want %v", c, x.shape, x.strides, x.off, x.dt, i, got, want)
		}
	}
}

// The closures exec used before the typed loops: the generic path.
var genericBinary = map[binOp]func(a, b float32) float32{
	opAdd: func(a, b float32) float32 { return a + b },
	opSub: func(a, b float32) float32 { return a - b },
	opMul: func(a, b float32) float32 { return a * b },
	opDiv: func(a, b float32) float32 { return a / b },
	opMax: func(a, b float32) float32 { return max(a, b) },
	opMin: func(a, b float32) float32 { return min(a, b) },
}

var genericUnary = map[unOp]func(float32) float32{
	opSilu:    func(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) },
	opNeg:     func(x float32) float32 { return -x },
	opSquare:  func(x float32) float32 { return x * x },
	opRsqrt:   func(x float32) float32 { return float32(1 / math.Sqrt(float64(x))) },
	opExp:     func(x float32) float32 { return float32(math.Exp(float64(x))) },
	opSigmoid: func(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) },
}

func elemSession(in ...*tensor) *session {
	s := &session{m: &model{graph: &g.Graph{}}, threads: 1, slots: make([]*tensor, 16), vals: make([]value, 4)}
	copy(s.slots, in)
	return s
}

// refBinary is the generic path: both operands broadcast, gathered by
// floatsRef, ff per element.
func refBinary(a, b *tensor, ff func(a, b float32) float32) ([]float32, error) {
	shape, err := broadcastShapesInto(nil, a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	s := elemSession()
	av, _ := s.broadcastView(a, shape)
	bv, _ := s.broadcastView(b, shape)
	x, y := floatsRef(av), floatsRef(bv)
	o := make([]float32, len(x))
	for i := range o {
		o[i] = ff(x[i], y[i])
	}
	return o, nil
}

func TestElementwiseBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for c := 0; c < 4000; c++ {
		op := binOp(r.Intn(int(opMin) + 1))
		out := randShape(r)
		as, bs := out, broadcastFrom(r, out)
		if r.Intn(2) == 0 {
			as, bs = bs, as
		}
		// contiguous fp32 operands half the time: the typed fast paths
		a, b := randView(r, as, r.Intn(3)), randView(r, bs, r.Intn(3))
		if r.Intn(2) == 0 {
			a = randView(r, as, 0)
			a.strides, a.off = contiguousStrides(as), 0
		}
		if r.Intn(2) == 0 {
			b = randView(r, bs, 0)
			b.strides, b.off = contiguousStrides(bs), 0
		}
		want, err := refBinary(a, b, genericBinary[op])
		if err != nil {
			t.Fatal(err)
		}
		s := elemSession(a, b)
		if err := s.binaryOp(bin(0, 1, out0), op); err != nil {
			t.Fatal(err)
		}
		got := floatsRef(s.slots[out0])
		if i, ok := elemBitsEqual(got, want); !ok {
			t.Fatalf("case %d: op %d, %v (strides %v, dt %d) with %v (strides %v, dt %d): element %d\n got %v\nwant %v",
				c, op, a.shape, a.strides, a.dt, b.shape, b.strides, b.dt, i, got, want)
		}
	}
	for c := 0; c < 2000; c++ {
		op := unOp(1 + r.Intn(int(opSigmoid)))
		x := randView(r, randShape(r), r.Intn(3))
		s := elemSession(x)
		if err := s.unaryOp(0, out0, op); err != nil {
			t.Fatal(err)
		}
		got := floatsRef(s.slots[out0])
		want := floatsRef(x)
		for i, v := range want {
			want[i] = genericUnary[op](v)
		}
		if i, ok := elemBitsEqual(got, want); !ok {
			t.Fatalf("case %d: op %d of %v: element %d: %v, want %v", c, op, x.shape, i, got[i], want[i])
		}
	}
}

// TestElementwiseOpsCovered: every typed op has its generic closure here,
// and the typed op is the one named (a swapped case would fail).
func TestElementwiseOpsCovered(t *testing.T) {
	x, y := []float32{3, -2, 0.5}, []float32{1.5, 4, -0.25}
	for op := opAdd; op <= opMin; op++ {
		ff := genericBinary[op]
		if ff == nil {
			t.Fatalf("binary op %d has no generic closure", op)
		}
		o := make([]float32, len(x))
		binVV(op, o, x, y)
		for i := range o {
			if o[i] != ff(x[i], y[i]) || o[i] != op.f32(x[i], y[i]) {
				t.Fatalf("op %d: %v %v -> %v", op, x[i], y[i], o[i])
			}
		}
	}
	for op := opSilu; op <= opSigmoid; op++ {
		if genericUnary[op] == nil {
			t.Fatalf("unary op %d has no generic closure", op)
		}
	}
}

// attendRef is attendHeads as it was: widened rows, dotF32 and one axpy
// per key.
func attendRef(out, q, k, v []float32, hq, hkv, T, S, D, qBase, kBase, window int, scale float32) {
	group := hq / hkv
	scores := make([]float32, S)
	for h := 0; h < hq; h++ {
		kh := h / group
		kk := k[kh*S*D : (kh+1)*S*D]
		vv := v[kh*S*D : (kh+1)*S*D]
		for t := 0; t < T; t++ {
			qp := qBase + t
			qv := q[(h*T+t)*D : (h*T+t+1)*D]
			o := out[(h*T+t)*D : (h*T+t+1)*D]
			lo := 0
			if window > 0 {
				lo = max(0, qp-window+1-kBase)
			}
			hi := min(S, qp-kBase+1)
			for i := range o {
				o[i] = 0
			}
			if hi <= lo {
				continue
			}
			m := float32(math.Inf(-1))
			for j := lo; j < hi; j++ {
				sc := dotF32(qv, kk[j*D:(j+1)*D]) * scale
				scores[j] = sc
				m = max(m, sc)
			}
			var sum float32
			for j := lo; j < hi; j++ {
				e := float32(math.Exp(float64(scores[j] - m)))
				scores[j] = e
				sum += e
			}
			inv := 1 / sum
			for j := lo; j < hi; j++ {
				axpy(o, vv[j*D:(j+1)*D], scores[j]*inv)
			}
		}
	}
}

// TestAttendBitIdentical: attend reading fp32 or bf16 rows in place, with
// a head stride of a larger pool, equals the old path over widened copies.
func TestAttendBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	shared := 0 // cases whose heads the workers share at threads 3
	for c := 0; c < 300; c++ {
		D := []int{8, 16, 40, 64, 72, 12, 5}[r.Intn(7)]
		hkv := 1 + r.Intn(3)
		hq := hkv * (1 + r.Intn(4))
		T := 1 + r.Intn(3)
		S := T + r.Intn(40)
		rows := S + r.Intn(5) // the pool's rows per head
		start := r.Intn(rows - S + 1)
		window := 0
		if r.Intn(3) == 0 {
			window = 1 + r.Intn(S)
		}
		bf := r.Intn(2) == 0
		q := make([]float32, hq*T*D)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		// pool [hkv][rows][D], and the widened copy [hkv][S][D] the old path read
		n := hkv * rows * D
		pk, pv := make([]float32, n), make([]float32, n)
		hk, hv := make([]uint16, n), make([]uint16, n)
		for i := 0; i < n; i++ {
			hk[i], hv[i] = f32ToBF16(float32(r.NormFloat64()*2)), f32ToBF16(float32(r.NormFloat64()))
			pk[i], pv[i] = float32(r.NormFloat64()*2), float32(r.NormFloat64())
			if bf {
				pk[i], pv[i] = bf16ToF32(hk[i]), bf16ToF32(hv[i])
			}
		}
		kc, vc := make([]float32, hkv*S*D), make([]float32, hkv*S*D)
		for h := 0; h < hkv; h++ {
			copy(kc[h*S*D:(h+1)*S*D], pk[(h*rows+start)*D:])
			copy(vc[h*S*D:(h+1)*S*D], pv[(h*rows+start)*D:])
		}
		kBase := r.Intn(3)
		qBase := kBase + S - T
		scale := float32(1 / math.Sqrt(float64(D)))
		want := make([]float32, hq*T*D)
		attendRef(want, q, kc, vc, hq, hkv, T, S, D, qBase, kBase, window, scale)

		kr, vr := kvRows{f: pk[start*D:], hs: rows * D}, kvRows{f: pv[start*D:], hs: rows * D}
		if bf && attendDirect(D) {
			kr, vr = kvRows{h: hk[start*D:], hs: rows * D}, kvRows{h: hv[start*D:], hs: rows * D}
		}
		if hq > 1 && hq*T*S*D >= attnParallelMin {
			shared++
		}
		for _, threads := range []int{1, 3} {
			got := make([]float32, len(want))
			attend(nil, got, q, kr, vr, hq, hkv, T, S, D, qBase, kBase, window, scale, threads, nil)
			if i, ok := elemBitsEqual(got, want); !ok {
				t.Fatalf("case %d (D %d, hq %d, hkv %d, T %d, S %d, window %d, bf16 %v, threads %d): element %d: %v, want %v",
					c, D, hq, hkv, T, S, window, bf, threads, i, got[i], want[i])
			}
		}
	}
	if shared < 30 {
		t.Errorf("only %d of 300 cases shared their heads with the workers", shared)
	}
}

// TestWsumRows: the weighted row sum equals one axpy per row, bit for bit,
// at lengths with and without a tail, from fp32 and bf16 rows.
func TestWsumRows(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for c := 0; c < 500; c++ {
		n := 1 + r.Intn(80)
		ld := n + r.Intn(5)
		rows := r.Intn(20)
		p := make([]float32, rows)
		for i := range p {
			p[i] = randFloat(r)
		}
		vf := make([]float32, rows*ld+n)
		vh := make([]uint16, len(vf))
		for i := range vf {
			vh[i] = f32ToBF16(randFloat(r))
			vf[i] = randFloat(r)
		}
		o0 := make([]float32, n)
		for i := range o0 {
			o0[i] = randFloat(r)
		}
		for _, bf := range []bool{false, true} {
			want := append([]float32(nil), o0...)
			row := make([]float32, n)
			for j, a := range p {
				if bf {
					widenBF16(row, vh[j*ld:j*ld+n])
				} else {
					copy(row, vf[j*ld:])
				}
				axpy(want, row, a)
			}
			got := append([]float32(nil), o0...)
			if bf {
				wsumRows(got, nil, vh, ld, p)
			} else {
				wsumRows(got, vf, nil, ld, p)
			}
			if i, ok := elemBitsEqual(got, want); !ok {
				t.Fatalf("case %d (n %d, rows %d, bf16 %v): element %d: %v, want %v", c, n, rows, bf, i, got[i], want[i])
			}
		}
	}
}

// TestExpF32: the vector exp equals float32(math.Exp(float64(x))) bit for
// bit over a sweep of every 4099th float32 bit pattern (all signs,
// exponents, NaNs, infinities, subnormals) and around the kernel's bounds.
func TestExpF32(t *testing.T) {
	var src []float32
	for b := uint64(0); b < 1<<32; b += 4099 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 200000; i++ {
		src = append(src, float32(r.NormFloat64()*30), float32((r.Float64()*2-1)*720))
	}
	for _, v := range []float64{700, -700, 88.72, -87.3, -103.97, -104, 89, 709.7, -745} {
		f := float32(v)
		src = append(src, f, math.Nextafter32(f, 0), math.Nextafter32(f, float32(math.Inf(1))))
	}
	for _, off := range []int{0, 1, 3} { // tails and unaligned starts
		s := src[off:]
		got := make([]float32, len(s))
		expF32(got, s)
		for i, v := range s {
			if want := float32(math.Exp(float64(v))); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("exp(%v) (bits %#x) = %v, want %v", v, math.Float32bits(v), got[i], want)
			}
		}
	}
}

// BenchmarkAttendDecode is one decode step's attention in one layer of
// llama-bench (8 query heads, 2 KV heads, head dim 64) over S cached bf16
// positions, read in place, on one thread and shared with the workers.
func BenchmarkAttendDecode(b *testing.B) {
	const hq, hkv, D = 8, 2, 64
	for _, S := range []int{32, 64, 160, 1024} {
		r := rand.New(rand.NewSource(6))
		q := make([]float32, hq*D)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		kh, vh := make([]uint16, hkv*S*D), make([]uint16, hkv*S*D)
		for i := range kh {
			kh[i], vh[i] = f32ToBF16(float32(r.NormFloat64())), f32ToBF16(float32(r.NormFloat64()))
		}
		out, scores := make([]float32, hq*D), make([]float32, hq*S)
		k, v := kvRows{h: kh, hs: S * D}, kvRows{h: vh, hs: S * D}
		if !attendDirect(D) {
			kf, vf := make([]float32, len(kh)), make([]float32, len(vh))
			widenBF16(kf, kh)
			widenBF16(vf, vh)
			k, v = kvRows{f: kf, hs: S * D}, kvRows{f: vf, hs: S * D}
		}
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("S=%d/threads=%d", S, threads), func(b *testing.B) {
				var job mmJob
				for i := 0; i < b.N; i++ {
					attend(&job, out, q, k, v, hq, hkv, 1, S, D, S-1, 0, 0, 0.125, threads, scores)
				}
			})
		}
	}
}

// TestMaxF32 against the in-order fold, on random lengths with ±0, ±Inf
// and NaNs (distinct payloads) mixed in.
func TestMaxF32(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for c := 0; c < 20000; c++ {
		x := make([]float32, r.Intn(30))
		for i := range x {
			x[i] = randFloat(r)
			if r.Intn(50) == 0 {
				x[i] = math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)) | uint32(r.Intn(2))<<31)
			}
		}
		want := float32(math.Inf(-1))
		for _, v := range x {
			want = max(want, v)
		}
		if got := maxF32(x); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("maxF32(%v) = %v (%#x), want %v (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// BenchmarkSilu is the MLP activation of a 128-token prefill chunk of
// llama-bench (128 × 1536).
func BenchmarkSilu(b *testing.B) {
	r := rand.New(rand.NewSource(8))
	x, o := make([]float32, 128*1536), make([]float32, 128*1536)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
	}
	b.SetBytes(int64(4 * len(x)))
	for i := 0; i < b.N; i++ {
		unaryF32(opSilu, o, x)
	}
}

// SiLU, exp and sigmoid over long rows, shared with the workers, give
// every element's bits of one thread (NaN, ±Inf, exp's overflow and
// underflow included), at lengths off the blocks' eights.
func TestUnaryOnSharedBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	for _, op := range []unOp{opSilu, opExp, opSigmoid} {
		for _, n := range []int{unaryParallelMin, unaryParallelMin + 5, 40099, 128*1536 + 3} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 30)
			}
			x[5], x[n/2], x[n-1] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
			want := make([]float32, n)
			unaryF32(op, want, x)
			for _, threads := range []int{2, 3} {
				got := make([]float32, n)
				unaryOn(nil, &unaryArgs{op: op, o: got, x: x}, threads)
				if i, ok := elemBitsEqual(got, want); !ok {
					t.Fatalf("op %d n %d threads %d: element %d = %v, one thread %v", op, n, threads, i, got[i], want[i])
				}
			}
		}
	}
}

// Decode heads of one KV head taken together, four (AVX-512, head sizes
// of a multiple of 64) or two (AVX2, of 32; NEON, of 16), give the bits of one head at
// a time and of the reference, windows and shared heads included.
func TestAttendGroupsBitIdentical(t *testing.T) {
	if !useAttn2 {
		t.Skip("no two-head attention kernel on this CPU (or build)")
	}
	defer func(a4, a2 bool) { useAttn4, useAttn2 = a4, a2 }(useAttn4, useAttn2)
	has4 := useAttn4
	r := rand.New(rand.NewSource(9))
	for c := 0; c < 160; c++ {
		D := []int{64, 128, 192, 96, 32}[r.Intn(5)]
		hkv := 1 + r.Intn(2)
		group := []int{4, 8, 5, 2, 3}[r.Intn(5)] // 5 and 3: groups, then a head alone
		hq := hkv * group
		S := 1 + r.Intn(300)
		rows := S + r.Intn(5)
		start := r.Intn(rows - S + 1)
		window := 0
		if r.Intn(3) == 0 {
			window = 1 + r.Intn(S)
		}
		q := make([]float32, hq*D)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		n := hkv * rows * D
		hk, hv := make([]uint16, n), make([]uint16, n)
		for i := range hk {
			hk[i], hv[i] = f32ToBF16(float32(r.NormFloat64()*2)), f32ToBF16(float32(r.NormFloat64()))
		}
		kc, vc := make([]float32, hkv*S*D), make([]float32, hkv*S*D)
		for h := 0; h < hkv; h++ {
			widenBF16(kc[h*S*D:(h+1)*S*D], hk[(h*rows+start)*D:(h*rows+start+S)*D])
			widenBF16(vc[h*S*D:(h+1)*S*D], hv[(h*rows+start)*D:(h*rows+start+S)*D])
		}
		kBase := r.Intn(3)
		qBase := kBase + S - 1
		scale := float32(1 / math.Sqrt(float64(D)))
		want := make([]float32, hq*D)
		attendRef(want, q, kc, vc, hq, hkv, 1, S, D, qBase, kBase, window, scale)
		kr, vr := kvRows{h: hk[start*D:], hs: rows * D}, kvRows{h: hv[start*D:], hs: rows * D}
		for _, mode := range []struct {
			four, two bool
			group     int
		}{{true, true, 4}, {false, true, 2}, {false, false, 0}} {
			if mode.four && !has4 {
				continue
			}
			useAttn4, useAttn2 = mode.four, mode.two
			g := mode.group
			if g == 4 && D%64 != 0 {
				g = 2
			}
			if got := attendGroup(kr, vr, D); got != g {
				t.Fatalf("D %d, AVX-512 %v, AVX2 %v: groups of %d, want %d", D, mode.four, mode.two, got, g)
			}
			for _, threads := range []int{1, 3} {
				got := make([]float32, len(want))
				attend(nil, got, q, kr, vr, hq, hkv, 1, S, D, qBase, kBase, window, scale, threads, nil)
				if i, ok := elemBitsEqual(got, want); !ok {
					t.Fatalf("case %d (D %d, hq %d, hkv %d, S %d, window %d, groups of %d, threads %d): element %d: %v, want %v",
						c, D, hq, hkv, S, window, g, threads, i, got[i], want[i])
				}
			}
		}
	}
}

// mulScalar and subScalar give the Go loops' bits, NaN payloads and
// infinities included, at every length.
func TestScalarPassesBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for c := 0; c < 2000; c++ {
		x := make([]float32, r.Intn(80))
		for i := range x {
			x[i] = randFloat(r)
		}
		a := randFloat(r)
		if r.Intn(4) == 0 {
			a = math.Float32frombits(0x7fc00000 | uint32(r.Intn(1<<22)))
		}
		for _, f := range []struct {
			name       string
			fast, twin func([]float32, float32)
		}{{"mul", mulScalar, mulScalarGo}, {"sub", subScalar, subScalarGo}} {
			got, want := slices.Clone(x), slices.Clone(x)
			f.fast(got, a)
			f.twin(want, a)
			if i, ok := elemBitsEqual(got, want); !ok {
				t.Fatalf("%s by %v, length %d: element %d = %v, want %v", f.name, a, len(x), i, got[i], want[i])
			}
		}
	}
}
