package cpu

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	"etchat/internal/fixtures"
)

// quantizeAffine packs w[rows][cols] the way MLX's affine_quantize lays
// it out (elements LSB first in uint32 words; per group a scale and a
// bias with w ≈ s·Q + b), with a plain min/max choice of s and b: the
// kernels only need some valid packing.
func quantizeAffine(w []float32, rows, cols, bits, gs int) *qMatrix {
	q := &qMatrix{Bits: bits, GroupSize: gs, Rows: rows, Cols: cols,
		Packed: make([]uint32, rows*cols*bits/32), Scales: make([]float32, rows*cols/gs), Biases: make([]float32, rows*cols/gs)}
	per, levels := 32/bits, float32(int(1)<<bits-1)
	for r := 0; r < rows; r++ {
		for g := 0; g < cols/gs; g++ {
			grp := w[r*cols+g*gs : r*cols+(g+1)*gs]
			lo, hi := grp[0], grp[0]
			for _, v := range grp {
				lo, hi = min(lo, v), max(hi, v)
			}
			s := max((hi-lo)/levels, 1e-7)
			q.Scales[r*cols/gs+g], q.Biases[r*cols/gs+g] = s, lo
			for j, v := range grp {
				k := g*gs + j
				Q := uint32(min(levels, max(0, float32(math.Round(float64((v-lo)/s))))))
				q.Packed[(r*cols+k)/per] |= Q << ((k % per) * bits)
			}
		}
	}
	return q
}

// quantizeSymmetric packs w as ExecuTorch's symmetric exports do: Q =
// round(v/s) + 2^(bits−1), bias −2^(bits−1)·s, written out as biases
// (foldBiases takes them back out).
func quantizeSymmetric(w []float32, rows, cols, bits, gs int) *qMatrix {
	q := &qMatrix{Bits: bits, GroupSize: gs, Rows: rows, Cols: cols,
		Packed: make([]uint32, rows*cols*bits/32), Scales: make([]float32, rows*cols/gs), Biases: make([]float32, rows*cols/gs)}
	per, half := 32/bits, float32(int(1)<<(bits-1))
	for r := 0; r < rows; r++ {
		for g := 0; g < cols/gs; g++ {
			grp := w[r*cols+g*gs : r*cols+(g+1)*gs]
			var m float32
			for _, v := range grp {
				m = max(m, float32(math.Abs(float64(v))))
			}
			s := max(m/(half-1), 1e-7)
			q.Scales[r*cols/gs+g], q.Biases[r*cols/gs+g] = s, -half*s
			for j, v := range grp {
				k := g*gs + j
				Q := uint32(min(2*half-1, max(0, float32(math.Round(float64(v/s)))+half)))
				q.Packed[(r*cols+k)/per] |= Q << ((k % per) * bits)
			}
		}
	}
	return q
}

// Symmetric biases are folded (and affine ones kept); folding changes no
// result: every kernel gives the bits it gave with the biases read.
func TestQFoldBiases(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, bits := range []int{4, 8} {
		if w := quantizeAffine(randMat(rng, 16*64), 16, 64, bits, 32); w.foldBiases() || w.Biases == nil {
			t.Fatalf("q%d: min/max biases were folded", bits)
		}
		w := quantizeSymmetric(randMat(rng, 40*128), 40, 128, bits, 32)
		w.Biases[77] = math.Nextafter32(w.Biases[77], 0) // one bias off by an ulp
		if w.foldBiases() {
			t.Fatalf("q%d: folded with one bias not −2^(bits−1)·s", bits)
		}
		w.Biases[77] = -float32(int(1)<<(bits-1)) * w.Scales[77]
		folded := *w
		if !folded.foldBiases() || folded.Biases != nil || folded.BiasMul != -float32(int(1)<<(bits-1)) {
			t.Fatalf("q%d: symmetric biases not folded (BiasMul %v)", bits, folded.BiasMul)
		}
		for i := range w.Biases {
			if folded.bias(i) != w.Biases[i] {
				t.Fatalf("q%d: bias(%d) = %v, want %v", bits, i, folded.bias(i), w.Biases[i])
			}
		}
		for _, n := range []int{1, 3, 7} {
			x := randMat(rng, n*w.Cols)
			want := make([]float32, n*w.Rows)
			qMatMulRangeFast(want, x, n, w, 0, w.Rows)
			got := make([]float32, n*w.Rows)
			qMatMulRangeFast(got, x, n, &folded, 0, w.Rows)
			ref, refFolded := make([]float32, n*w.Rows), make([]float32, n*w.Rows)
			qMatMulRef(ref, x, n, w)
			qMatMulRef(refFolded, x, n, &folded)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(ref[i]) != math.Float32bits(refFolded[i]) {
					t.Fatalf("q%d n=%d: out[%d] folded %v (reference %v), with biases %v (%v)", bits, n, i, got[i], refFolded[i], want[i], ref[i])
				}
			}
		}
	}
}

func randMat(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// A hand-packed word: elements come out least significant bits first.
func TestQDequantRowPacking(t *testing.T) {
	w := &qMatrix{Bits: 4, GroupSize: 8, Rows: 1, Cols: 8, Packed: []uint32{0xF6543210}, Scales: []float32{2}, Biases: []float32{-8}}
	got := make([]float32, 8)
	qDequantRow(got, w, 0)
	want := []float32{-8, -6, -4, -2, 0, 2, 4, 22}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("4-bit row %v, want %v", got, want)
		}
	}
	w8 := &qMatrix{Bits: 8, GroupSize: 4, Rows: 1, Cols: 8, Packed: []uint32{0x80FF0100, 0x04030201}, Scales: []float32{0.5, 1}, Biases: []float32{-64, 0}}
	qDequantRow(got, w8, 0)
	want = []float32{-64, -63.5, 63.5, 0, 1, 2, 3, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("8-bit row %v, want %v", got, want)
		}
	}
}

// The kernel against the definition, for every format the engine takes.
func TestQMatMulAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ rows, cols, gs int }{{48, 64, 32}, {40, 128, 64}, {33, 256, 128}, {17, 64, 64}, {8, 128, 128}} {
			for _, n := range []int{1, 3, 5} {
				t.Run(fmt.Sprintf("q%d_g%d_%dx%d_n%d", bits, c.gs, c.rows, c.cols, n), func(t *testing.T) {
					w := quantizeAffine(randMat(rng, c.rows*c.cols), c.rows, c.cols, bits, c.gs)
					x := randMat(rng, n*c.cols)
					want := make([]float32, n*c.rows)
					qMatMulRef(want, x, n, w)
					got := make([]float32, n*c.rows)
					qMatMulRange(got, x, n, w, 0, w.Rows)
					for i := 0; i < n; i++ {
						for r := 0; r < w.Rows; r++ {
							// tolerance: 1e-5 of Σ|x·W|
							row := make([]float32, w.Cols)
							qDequantRow(row, w, r)
							var mag float64
							for k, v := range row {
								mag += math.Abs(float64(x[i*w.Cols+k] * v))
							}
							if d := math.Abs(float64(got[i*w.Rows+r] - want[i*w.Rows+r])); d > 1e-5*mag+1e-6 {
								t.Fatalf("out[%d][%d] = %v, reference %v (Σ|xw| %.3g)", i, r, got[i*w.Rows+r], want[i*w.Rows+r], mag)
							}
						}
					}
				})
			}
		}
	}
}

// Threads split rows; every row's result is the same bits whatever the
// split.
func TestQMatMulThreadsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols, n := 512, 512, 4
	w := quantizeAffine(randMat(rng, rows*cols), rows, cols, 4, 32)
	x := randMat(rng, n*cols)
	one := make([]float32, n*rows)
	qMatMul(one, x, n, w, 1)
	for _, th := range []int{2, 3, 8} {
		got := make([]float32, n*rows)
		qMatMul(got, x, n, w, th)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(one[i]) {
				t.Fatalf("threads %d: out[%d] %v, 1 thread %v", th, i, got[i], one[i])
			}
		}
	}
}

// transpose=false: W stored [K][N], out = x · W.
func TestQMatMulNoTrans(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	K, N, n := 24, 64, 3
	w := quantizeAffine(randMat(rng, K*N), K, N, 8, 32)
	x := randMat(rng, n*K)
	dense := make([]float32, K*N)
	for k := 0; k < K; k++ {
		qDequantRow(dense[k*N:(k+1)*N], w, k)
	}
	got := make([]float32, n*N)
	qMatMulNoTrans(got, x, n, w, make([]float32, N))
	for i := 0; i < n; i++ {
		for j := 0; j < N; j++ {
			var want float64
			for k := 0; k < K; k++ {
				want += float64(x[i*K+k]) * float64(dense[k*N+j])
			}
			if math.Abs(float64(got[i*N+j])-want) > 1e-4 {
				t.Fatalf("out[%d][%d] %v, want %v", i, j, got[i*N+j], want)
			}
		}
	}
}

// The fast kernels (AVX-512 and AVX2 where the machine has them) and their
// Go twins give the same bits, for decode (one input: eight rows per pass
// with AVX-512, four with AVX2, the last rows one at a time) and prefill
// (four inputs per pass), every format the fast path takes (groups of 32,
// 64, 128 and per-channel), odd row counts and splits over rows, and all
// agree with the definition to rounding.
func TestQKernelsBitIdentical(t *testing.T) {
	defer func(a2, a512 bool) { useAVX2, useAVX512 = a2, a512 }(useAVX2, useAVX512)
	hasAVX2, hasAVX512 := useAVX2, useAVX512
	for _, k := range []struct {
		name         string
		avx2, avx512 bool
		missing      string
	}{
		{"avx512", true, true, "AVX-512F"},
		{"avx2", true, false, "AVX2+FMA"},
		{"go", false, false, ""},
	} {
		t.Run(k.name, func(t *testing.T) {
			if k.avx512 && !hasAVX512 || k.avx2 && !hasAVX2 {
				t.Skipf("this CPU (or build: -tags purego, not amd64) has no %s kernels", k.missing)
			}
			checkQKernels(t, k.avx2, k.avx512)
		})
	}
}

// checkQKernels compares the kernels chosen by avx2 and avx512 with the Go
// twins (both off), bit for bit, and with the definition.
func checkQKernels(t *testing.T, avx2, avx512 bool) {
	checkQKernelsSet(t, func(on bool) { useAVX2, useAVX512 = on && avx2, on && avx512 })
}

// checkQKernelsSet is checkQKernels for the kernels that set(true) turns
// on and set(false) off (arm64's NEON: qkernel_arm64_test.go).
func checkQKernelsSet(t *testing.T, set func(on bool)) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ rows, cols, gs int }{{37, 64, 32}, {16, 128, 64}, {9, 256, 128}, {12, 96, 96},
			{64, 512, 32}, {23, 128, 128}, {31, 64, 64}, {8, 32, 32}} {
			w := quantizeAffine(randMat(rng, c.rows*c.cols), c.rows, c.cols, bits, c.gs)
			if !qFast(w) {
				t.Fatalf("q%d g%d: not on the fast path", bits, c.gs)
			}
			sym := quantizeSymmetric(randMat(rng, c.rows*c.cols), c.rows, c.cols, bits, c.gs)
			if !sym.foldBiases() {
				t.Fatalf("q%d g%d: symmetric biases not folded", bits, c.gs)
			}
			a32, a16 := bf16Scaled(w)
			s32, s16 := bf16Scaled(sym)
			for _, pair := range [][2]*qMatrix{{a32, a16}, {s32, s16}} {
				checkBF16Scales(t, rng, pair[0], pair[1], set)
			}
			for _, w := range []*qMatrix{w, sym, a16, s16} {
				for _, n := range []int{1, 2, 4, 7} {
					x := randMat(rng, n*c.cols)
					set(true)
					fast := make([]float32, n*c.rows)
					qMatMulRangeFast(fast, x, n, w, 0, c.rows)
					set(false)
					portable := make([]float32, n*c.rows)
					qMatMulRangeFast(portable, x, n, w, 0, c.rows)
					set(true)
					want := make([]float32, n*c.rows)
					qMatMulRef(want, x, n, w)
					for i := range fast {
						if math.Float32bits(fast[i]) != math.Float32bits(portable[i]) {
							t.Fatalf("q%d g%d %dx%d n=%d: out[%d] = %v, Go kernel %v", bits, c.gs, c.rows, c.cols, n, i, fast[i], portable[i])
						}
						if d := math.Abs(float64(fast[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
							t.Fatalf("q%d g%d n=%d: out[%d] = %v, reference %v", bits, c.gs, n, i, fast[i], want[i])
						}
					}
					// splits over rows (what the workers get) give the same bits
					for _, step := range []int{5, 11, 16} {
						part := make([]float32, n*c.rows)
						for r0 := 0; r0 < c.rows; r0 += step {
							qMatMulRangeFast(part, x, n, w, r0, min(r0+step, c.rows))
						}
						for i := range part {
							if math.Float32bits(part[i]) != math.Float32bits(fast[i]) {
								t.Fatalf("q%d g%d n=%d: out[%d] over a %d-row split %v, whole %v", bits, c.gs, n, i, step, part[i], fast[i])
							}
						}
					}
				}
			}
		}
	}
}

// bf16Scaled is w with its scales rounded to bf16, held as fp32 and as
// bf16 (the file's form; biases, when kept, unchanged).
func bf16Scaled(w *qMatrix) (f32, bf *qMatrix) {
	a, b := *w, *w
	a.Scales = make([]float32, len(w.Scales))
	b.Scales, b.ScalesBF16 = nil, make([]uint16, len(w.Scales))
	for i, v := range w.Scales {
		b.ScalesBF16[i] = f32ToBF16(v)
		a.Scales[i] = bf16ToF32(b.ScalesBF16[i])
	}
	return &a, &b
}

// checkBF16Scales: scales held as bf16 give the bits of the same scales
// widened to fp32, at decode and prefill, whole and split over rows.
func checkBF16Scales(t *testing.T, rng *rand.Rand, f32, bf *qMatrix, set func(on bool)) {
	t.Helper()
	set(true)
	for _, n := range []int{1, 3, 7} {
		x := randMat(rng, n*f32.Cols)
		want, got := make([]float32, n*f32.Rows), make([]float32, n*f32.Rows)
		qMatMulRangeFast(want, x, n, f32, 0, f32.Rows)
		for r0 := 0; r0 < bf.Rows; r0 += 21 {
			qMatMulRangeFast(got, x, n, bf, r0, min(r0+21, bf.Rows))
		}
		ref, refBF := make([]float32, n*f32.Rows), make([]float32, n*f32.Rows)
		qMatMulRef(ref, x, n, f32)
		qMatMulRef(refBF, x, n, bf)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(ref[i]) != math.Float32bits(refBF[i]) {
				t.Fatalf("q%d g%d n=%d: out[%d] bf16 scales %v (reference %v), fp32 %v (%v)", f32.Bits, f32.GroupSize, n, i, got[i], refBF[i], want[i], ref[i])
			}
		}
	}
}

// Through the shared workers (input prepared once per matmul) the bits are
// those of one thread: exact affine 4- and 8-bit, and the fast mode's
// pair layout (prefill's GEMM reads the inputs prepare packed).
func TestQMatMulJob(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pairs := quantizeSymmetric(randMat(rng, 1024*256), 1024, 256, 4, 32)
	if !pairs.foldBiases() {
		t.Fatal("symmetric biases not folded")
	}
	pairs.Int8 = true
	for _, bits := range []int{4, 8, 0} {
		rows, cols := 1024, 256
		w := pairs
		if bits != 0 {
			w = quantizeAffine(randMat(rng, rows*cols), rows, cols, bits, 64)
		}
		for _, n := range []int{1, 6, 9} {
			x := randMat(rng, n*cols)
			one := make([]float32, n*rows)
			qMatMulRangeFast(one, x, n, w, 0, rows)
			var job mmJob
			for _, th := range []int{2, 3} {
				got := make([]float32, n*rows)
				qMatMulJob(&job, got, x, n, w, th)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(one[i]) {
						t.Fatalf("q%d n=%d threads %d: out[%d] %v, one thread %v", bits, n, th, i, got[i], one[i])
					}
				}
			}
		}
	}
}

// fma32 rounds x·y+z once, as the hardware's fused multiply-add: checked
// against the exact value rounded by math/big, on random values and on
// sums built to fall on a float32 halfway point after a float64 rounding.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	exact := func(x, y, z float32) float32 {
		p := new(big.Float).SetPrec(200).SetFloat64(float64(x))
		p.Mul(p, new(big.Float).SetPrec(200).SetFloat64(float64(y)))
		p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(z)))
		f, _ := p.Float32()
		return f
	}
	check := func(x, y, z float32) {
		if got, want := fma32(x, y, z), exact(x, y, z); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", x, y, z, got, want)
		}
	}
	for range 100000 {
		x, y := float32(rng.NormFloat64()), float32(rng.NormFloat64()*float64(rng.IntN(300)))
		z := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(80)-40))
		check(x, y, z)
		check(x, y, -z)
	}
	// z a float32 whose last bit sits 24 binary places below the product's
	// halfway bit: the float64 sum rounds onto the halfway point.
	for range 20000 {
		z := float32(1 + float64(rng.IntN(1<<23))/(1<<23))
		x := float32(math.Ldexp(1+float64(rng.IntN(1<<10))/(1<<10), -25))
		y := float32(1 + math.Ldexp(float64(rng.IntN(1<<12)), -23))
		check(x, y, z)
		check(-x, y, z)
		check(x, -y, -z)
	}
	check(1, 1, float32(math.Inf(1)))
	check(0, 0, 0)
}

// BenchmarkDecodeCPUTime is decode (after a 128-token prompt, 64 steps
// then rewound, as BenchmarkDecodeRoofline) in tokens per CPU-second of
// the calling thread: run it with GOMAXPROCS=1, where that thread does
// all the work; on a shared machine a steadier measure than the wall
// clock.
func BenchmarkDecodeCPUTime(b *testing.B) {
	if testing.Short() {
		b.Skip("65 MB model")
	}
	for _, c := range []struct{ name, numerics string }{{fixtures.BenchBF16, ""}, {fixtures.BenchQ4, NumericsExact}, {fixtures.BenchQ4, NumericsFast}} {
		name := c.name
		if c.numerics != "" {
			name += "/" + c.numerics
		}
		b.Run(name, func(b *testing.B) {
			s, l := openFixtureWith(b, c.name, "bf16", Options{Numerics: c.numerics})
			ids := make([]int64, min(128, l.PrefillChunk))
			for i := range ids {
				ids[i] = int64(i + 3)
			}
			prefill(b, s, ids, l.PrefillChunk)
			ctx := context.Background()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			c0 := threadCPU()
			for i := 0; i < b.N; i++ {
				if s.Len() >= len(ids)+64 {
					s.Rewind(s.Len() - len(ids))
				}
				if _, err := s.Forward(ctx, []int64{7}, []int64{int64(s.Len())}); err != nil {
					b.Fatal(err)
				}
			}
			if c := threadCPU() - c0; c > 0 && runtime.GOMAXPROCS(0) == 1 {
				b.ReportMetric(float64(b.N)/c.Seconds(), "tok/cpu-s")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkPrefillCPUTime is a full prefill chunk from an empty cache
// (as BenchmarkPrefill) in tokens per CPU-second of the calling thread
// (GOMAXPROCS=1), on llama-bench-bf16 and on llama-bench-q4 in both
// numerics modes: the fast mode's prefill GEMM at K = 512 and 1536.
func BenchmarkPrefillCPUTime(b *testing.B) {
	if testing.Short() {
		b.Skip("65 MB model")
	}
	for _, c := range []struct{ name, numerics string }{{fixtures.BenchBF16, ""}, {fixtures.BenchQ4, NumericsExact}, {fixtures.BenchQ4, NumericsFast}} {
		name := c.name
		if c.numerics != "" {
			name += "/" + c.numerics
		}
		b.Run(name, func(b *testing.B) {
			s, l := openFixtureWith(b, c.name, "bf16", Options{Numerics: c.numerics})
			ids, pos := make([]int64, l.PrefillChunk), make([]int64, l.PrefillChunk)
			for i := range ids {
				ids[i], pos[i] = int64(i+3), int64(i)
			}
			ctx := context.Background()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			c0 := threadCPU()
			for i := 0; i < b.N; i++ {
				s.Clear()
				if _, err := s.Forward(ctx, ids, pos); err != nil {
					b.Fatal(err)
				}
			}
			if c := threadCPU() - c0; c > 0 && runtime.GOMAXPROCS(0) == 1 {
				b.ReportMetric(float64(b.N*len(ids))/c.Seconds(), "tok/cpu-s")
			}
			b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// The input preparation with AVX-512 writes prepare's Go bits: every
// bit width, group size and folded or not, with NaN, ±Inf and −0 inputs.
func TestQPrepBitIdentical(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 kernels on this CPU or build")
	}
	defer func(a bool) { useAVX512 = a }(useAVX512)
	rng := rand.New(rand.NewPCG(15, 16))
	for _, bits := range []int{4, 8} {
		for _, gs := range []int{32, 64, 128, 256} {
			for _, folded := range []bool{false, true} {
				K := 512
				w := &qMatrix{Bits: bits, GroupSize: gs, Rows: 1, Cols: K, Scales: make([]float32, K/gs)}
				if folded {
					w.BiasMul = -float32(int(1) << (bits - 1))
				} else {
					w.Biases = make([]float32, K/gs)
				}
				x := randMat(rng, K)
				for i := range x {
					x[i] *= float32(math.Ldexp(1, rng.IntN(40)-20))
				}
				x[3], x[77], x[200], x[301] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))
				var fast, slow qPrep
				useAVX512 = true
				fast.prepare(x, 1, w)
				useAVX512 = false
				slow.prepare(x, 1, w)
				for i := range slow.xp {
					if math.Float32bits(fast.xp[i]) != math.Float32bits(slow.xp[i]) {
						t.Fatalf("q%d g%d folded %v: slot %d = %v, Go %v", bits, gs, folded, i, fast.xp[i], slow.xp[i])
					}
				}
			}
		}
	}
}
