package cpu

import (
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"
)

// TestDotKernels checks the dispatching kernels (AVX2 where available)
// against a float64 reference for lengths around the unroll boundaries.
func TestDotKernels(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 64, 100, 512, 1537} {
		x := make([]float32, n)
		y := make([]float32, n)
		w := make([]uint16, n)
		var refF, refB float64
		for i := range x {
			x[i] = r.Float32()*2 - 1
			y[i] = r.Float32()*2 - 1
			w[i] = f32ToBF16(y[i])
			refF += float64(x[i]) * float64(y[i])
			refB += float64(x[i]) * float64(bf16ToF32(w[i]))
		}
		tol := 1e-5 * float64(n)
		for name, got := range map[string][2]float64{
			"f32":    {float64(dotF32(x, y)), refF},
			"f32go":  {float64(dotF32Go(x, y)), refF},
			"bf16":   {float64(dotBF16(x, w)), refB},
			"bf16go": {float64(dotBF16Go(x, w)), refB},
		} {
			if math.Abs(got[0]-got[1]) > tol {
				t.Errorf("%s n=%d: %g, want %g", name, n, got[0], got[1])
			}
		}
		// dot4 against four separate dots
		if n >= 1 {
			xs := make([]float32, 4*n)
			for i := range xs {
				xs[i] = r.Float32()
			}
			var acc [8]float32
			dot4x2(xs, n, y, x, &acc)
			for k := 0; k < 4; k++ {
				for j, wr := range [][]float32{y, x} {
					if want := dotF32Go(xs[k*n:(k+1)*n], wr); math.Abs(float64(acc[2*k+j]-want)) > tol {
						t.Errorf("dot4x2 n=%d row %d col %d: %g, want %g", n, k, j, acc[2*k+j], want)
					}
				}
			}
			a, b, c, d := dot4(xs, n, y)
			for k, v := range []float32{a, b, c, d} {
				if want := dotF32Go(xs[k*n:(k+1)*n], y); math.Abs(float64(v-want)) > tol {
					t.Errorf("dot4 n=%d row %d: %g, want %g", n, k, v, want)
				}
			}
		}
	}
	t.Logf("AVX2 kernels: %v", useAVX2)
}

// TestHalfConversions checks bf16/fp16 rounding on exact and halfway values.
func TestHalfConversions(t *testing.T) {
	for _, f := range []float32{0, 1, -2.5, 65504, 1e-6, 3.14159, -0.0001} {
		if got := bf16ToF32(f32ToBF16(f)); math.Abs(float64(got-f)) > math.Abs(float64(f))/128 {
			t.Errorf("bf16 round trip of %g: %g", f, got)
		}
		if got := f16ToF32(f32ToF16(f)); math.Abs(float64(got-f)) > math.Abs(float64(f))/1024+6e-8 {
			t.Errorf("fp16 round trip of %g: %g", f, got)
		}
	}
	if f32ToBF16(1+1.0/256) != 0x3f80 { // halfway between 1 and 1+2^-7 rounds to even
		t.Errorf("bf16 ties-to-even: %#x", f32ToBF16(1+1.0/256))
	}
	if f32ToF16(1e6) != 0x7c00 || f16ToF32(0x3c00) != 1 || f16ToF32(0x0001) != float32(math.Ldexp(1, -24)) {
		t.Error("fp16 overflow / one / subnormal")
	}
}

// TestGemv checks the one-row kernels over strided fp32 and bf16 weights.
func TestGemv(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, K := range []int{8, 16, 32, 40, 96, 512} {
		N, ld := 37, K+8
		x := make([]float32, K)
		wf := make([]float32, 3+N*ld)
		wh := make([]uint16, len(wf))
		for i := range x {
			x[i] = r.Float32() - 0.5
		}
		for i := range wf {
			wf[i] = r.Float32() - 0.5
			wh[i] = f32ToBF16(wf[i])
		}
		for _, w := range []wmat{{f: wf, n: N, k: K, ld: ld, off: 3}, {h: wh, n: N, k: K, ld: ld, off: 3}} {
			out := make([]float32, N)
			matmul(nil, out, x, 1, &w, 1)
			for n := 0; n < N; n++ {
				var want float64
				for k := 0; k < K; k++ {
					v := float64(wf[3+n*ld+k])
					if w.h != nil {
						v = float64(bf16ToF32(wh[3+n*ld+k]))
					}
					want += float64(x[k]) * v
				}
				if math.Abs(float64(out[n])-want) > 1e-5*float64(K) {
					t.Fatalf("K=%d bf16=%v n=%d: %g, want %g", K, w.h != nil, n, out[n], want)
				}
			}
		}
	}
}

// TestReadSum checks the bandwidth probe's loop against the Go sum.
func TestReadSum(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, n := range []int{0, 1, 63, 64, 65, 1000, 4096} {
		p := make([]uint64, n)
		for i := range p {
			p[i] = r.Uint64()
		}
		if got, want := readSum(p), readSumGo(p); got != want {
			t.Errorf("n=%d: %d, want %d", n, got, want)
		}
	}
}

// TestMatmulPool runs matmuls from several goroutines at once through the
// shared workers (each with its own job, reused from call to call, and
// some with fresh ones) and checks every result against one thread's.
func TestMatmulPool(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	const K, N = 64, 1024
	w := wmat{h: make([]uint16, N*K), n: N, k: K, ld: K}
	for i := range w.h {
		w.h[i] = f32ToBF16(r.Float32() - 0.5)
	}
	xs := make([][]float32, 4)
	want := make([][]float32, len(xs))
	for c := range xs {
		xs[c] = make([]float32, 3*K)
		for i := range xs[c] {
			xs[c][i] = r.Float32() - 0.5
		}
		want[c] = make([]float32, 3*N)
		matmul(nil, want[c], xs[c], 3, &w, 1)
	}
	var wg sync.WaitGroup
	for c := range xs {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var job mmJob
			out := make([]float32, 3*N)
			for it := 0; it < 50; it++ {
				j := &job
				if it%5 == 4 {
					j = nil
				}
				rows := 1 + it%3
				clear(out)
				matmul(j, out, xs[c], rows, &w, 2+it%3)
				for i := 0; i < rows*N; i++ {
					if out[i] != want[c][i] && rows > 1 {
						t.Errorf("caller %d rows %d: out[%d] = %g, want %g", c, rows, i, out[i], want[c][i])
						return
					}
				}
				if rows == 1 {
					var one [N]float32
					matmul(nil, one[:], xs[c], 1, &w, 1)
					if !slices.Equal(one[:], out[:N]) {
						t.Errorf("caller %d: one-row result depends on the thread count", c)
						return
					}
				}
			}
		}(c)
	}
	wg.Wait()
}

// TestAxpy checks the vector y += a·x against the Go loop, bit for bit.
func TestAxpy(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 64, 100} {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i], y[i] = r.Float32()-0.5, r.Float32()-0.5
		}
		a := r.Float32()
		want := slices.Clone(y)
		axpyGo(want, x, a)
		axpy(y, x, a)
		if !slices.Equal(y, want) {
			t.Errorf("n=%d: %v, want %v", n, y, want)
		}
	}
}

// TestWidenBF16 checks the vector bf16 → fp32 widening against the Go loop.
func TestWidenBF16(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, n := range []int{0, 1, 15, 16, 17, 33, 64, 100} {
		src := make([]uint16, n)
		for i := range src {
			src[i] = uint16(r.Uint32())
		}
		got, want := make([]float32, n), make([]float32, n)
		widenBF16(got, src)
		widenBF16Go(want, src)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: [%d] = %#x, want %#x", n, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// TestMatmulRows checks several-row matmuls (the prefill kernels) on fp32,
// bf16 and fp16 weights, strided, against float64 sums, for row counts
// around the 3×4 kernel's steps and column ranges that end off a step;
// and the 3×4 kernel against its Go order, bit for bit.
func TestMatmulRows(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, K := range []int{8, 24, 64, 100} {
		N, ld := 23, K+8
		wf := make([]float32, 5+N*ld)
		wh := make([]uint16, len(wf))
		wp := make([]uint16, len(wf))
		for i := range wf {
			wf[i] = r.Float32() - 0.5
			wh[i] = f32ToBF16(wf[i])
			wp[i] = f32ToF16(wf[i])
		}
		for _, rows := range []int{2, 3, 4, 5, 7, 9} {
			x := make([]float32, rows*K)
			for i := range x {
				x[i] = r.Float32() - 0.5
			}
			for name, w := range map[string]wmat{
				"f32":  {f: wf, n: N, k: K, ld: ld, off: 5},
				"bf16": {h: wh, n: N, k: K, ld: ld, off: 5},
				"fp16": {h: wp, fp16: true, n: N, k: K, ld: ld, off: 5},
			} {
				out := make([]float32, rows*N)
				matmul(nil, out, x, rows, &w, 3)
				for i := 0; i < rows; i++ {
					for n := 0; n < N; n++ {
						var want float64
						for k := 0; k < K; k++ {
							v := float64(wf[5+n*ld+k])
							switch name {
							case "bf16":
								v = float64(bf16ToF32(wh[5+n*ld+k]))
							case "fp16":
								v = float64(f16ToF32(wp[5+n*ld+k]))
							}
							want += float64(x[i*K+k]) * v
						}
						if math.Abs(float64(out[i*N+n])-want) > 1e-5*float64(K) {
							t.Fatalf("%s K=%d rows=%d: out[%d][%d] = %g, want %g", name, K, rows, i, n, out[i*N+n], want)
						}
					}
				}
			}
		}
		if float3x4() && K%8 == 0 {
			xs := make([]float32, 3*K)
			for i := range xs {
				xs[i] = r.Float32() - 0.5
			}
			var got, want [12]float32
			dot3x4(xs, K, wf, ld, K, &got)
			dot3x4Go(xs, K, wf, ld, K, &want)
			if got != want {
				t.Errorf("K=%d: dot3x4 %v, Go order %v", K, got, want)
			}
		}
	}
}

// TestMatmul3x4BitIdentical holds float prefill (several rows, fp32, bf16
// and fp16 weights, N off the kernel's four-column step) where the 3×4
// kernel runs (AVX2, NEON) to dot3x4Go's bits, each output computed on its
// own (strides 0) as the reference: a matmul that takes the dot4 loop
// instead, or a tile that mixes up rows or columns, fails. Rows stay
// under gemmMinRows (the AVX-512 GEMM's own test holds those).
func TestMatmul3x4BitIdentical(t *testing.T) {
	if !float3x4() {
		t.Skip("no 3×4 kernel in this build")
	}
	r := rand.New(rand.NewSource(11))
	for _, K := range []int{8, 64, 264} {
		N, ld := 23, K+8
		wf := make([]float32, 5+N*ld)
		wh, wp := make([]uint16, len(wf)), make([]uint16, len(wf))
		for i := range wf {
			wf[i] = r.Float32() - 0.5
			wh[i], wp[i] = f32ToBF16(wf[i]), f32ToF16(wf[i])
		}
		for _, rows := range []int{2, 3, 4, 5} {
			x := make([]float32, rows*K)
			for i := range x {
				x[i] = r.Float32() - 0.5
			}
			for _, w := range []wmat{
				{f: wf, n: N, k: K, ld: ld, off: 5},
				{h: wh, n: N, k: K, ld: ld, off: 5},
				{h: wp, fp16: true, n: N, k: K, ld: ld, off: 5},
			} {
				out := make([]float32, rows*N)
				matmul(nil, out, x, rows, &w, 2)
				wr := make([]float32, K)
				for n := 0; n < N; n++ {
					base := w.off + n*w.ld
					if w.f != nil {
						copy(wr, w.f[base:base+K])
					} else {
						convertRow(wr, w.h[base:base+K], w.fp16)
					}
					for i := 0; i < rows; i++ {
						var o [12]float32
						dot3x4Go(x[i*K:], 0, wr, 0, K, &o)
						if got := out[i*N+n]; math.Float32bits(got) != math.Float32bits(o[0]) {
							t.Fatalf("K=%d rows=%d fp16=%v bf16=%v: out[%d][%d] = %v, dot3x4Go %v", K, rows, w.fp16, w.h != nil && !w.fp16, i, n, got, o[0])
						}
					}
				}
			}
		}
	}
}
