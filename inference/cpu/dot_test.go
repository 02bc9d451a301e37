package cpu

import (
	"math"
	"math/rand"
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
	for _, K := range []int{8, 16, 40, 512} {
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
