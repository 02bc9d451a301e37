package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The 6×8 kernel (AVX-512 where the machine has it, else its Go twin) and
// the panel packing against the Go order, bit for bit: strided input
// rows, K not a multiple of 16, NaN-free random data.
func TestGemm6x8BitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, K := range []int{8, 24, 64, 136, 520} {
		ldx, ldw := K+3, K+5
		x := randMat(rng, 5*ldx+K)
		w := randMat(rng, 7*ldw+K)
		wh := make([]uint16, len(w))
		for i, v := range w {
			wh[i] = f32ToBF16(v)
		}
		for m := 1; m <= 8; m++ {
			p, pg := make([]float32, 8*K), make([]float32, 8*K)
			gemmPackF32(p, w, ldw, m, K)
			gemmPackGo(pg, w, ldw, m, K)
			if !gemmSameBits(p, pg) {
				t.Fatalf("K=%d m=%d: gemmPackF32 differs from the Go layout", K, m)
			}
			wide := make([]float32, m*K)
			for j := 0; j < m; j++ {
				widenBF16Go(wide[j*K:(j+1)*K], wh[j*ldw:j*ldw+K])
			}
			gemmPackBF16(p, wh, ldw, m, K)
			gemmPackGo(pg, wide, K, m, K)
			if !gemmSameBits(p, pg) {
				t.Fatalf("K=%d m=%d: gemmPackBF16 differs from the widened Go layout", K, m)
			}
		}
		p := make([]float32, 8*K)
		gemmPackGo(p, w, ldw, 8, K)
		got, twin := make([]float32, 5*11+8), make([]float32, 5*11+8)
		if gemm6x8Asm && !useAVX512 {
			// The kernel is AVX-512 assembly, which would fault here (the
			// engine calls it only under useGemm512): the Go twin alone.
			gemm6x8Go(x, ldx, p, K, got, 11)
		} else {
			gemm6x8(x, ldx, p, K, got, 11)
		}
		gemm6x8Go(x, ldx, p, K, twin, 11)
		for i := 0; i < 6; i++ {
			for j := 0; j < 8; j++ {
				var o [12]float32
				dot3x4Go(x[i*ldx:], 0, w[j*ldw:], 0, K, &o)
				g, tw := got[i*11+j], twin[i*11+j]
				if math.Float32bits(g) != math.Float32bits(o[0]) || math.Float32bits(tw) != math.Float32bits(o[0]) {
					t.Fatalf("K=%d out[%d][%d]: kernel %v, Go twin %v, dot3x4Go %v", K, i, j, g, tw, o[0])
				}
			}
		}
	}
}

func gemmSameBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// The prefill matmul on the 6×8 kernel gives the 3×4 kernel's bits: fp32,
// bf16 and fp16 weights (strided, offset), row counts off the six-row
// step, column counts and blocks off the eight-row panel.
func TestMatmulWideBitIdentical(t *testing.T) {
	if !useGemm512 || !useAVX2 {
		t.Skip("no AVX-512 kernel on this CPU or build: prefill runs on the 3×4 kernel alone")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, K := range []int{8, 40, 96, 264} {
		for _, N := range []int{8, 13, 37, 64} {
			ld := K + 8
			wf := randMat(rng, 5+N*ld)
			wh, wp := make([]uint16, len(wf)), make([]uint16, len(wf))
			for i, v := range wf {
				wh[i], wp[i] = f32ToBF16(v), f32ToF16(v)
			}
			for _, rows := range []int{6, 7, 11, 12, 13, 29} {
				x := randMat(rng, rows*K)
				for name, w := range map[string]wmat{
					"f32":  {f: wf, n: N, k: K, ld: ld, off: 5},
					"bf16": {h: wh, n: N, k: K, ld: ld, off: 5},
					"fp16": {h: wp, fp16: true, n: N, k: K, ld: ld, off: 5},
				} {
					want := make([]float32, rows*N)
					matmulRange3x4(want, x, rows, &w, 0, N, make([]float32, 4*K))
					for _, split := range []int{N, min(N, 16), N / 2} {
						got := make([]float32, rows*N)
						matmulRangeWide(got, x, rows, &w, 0, split)
						matmulRangeWide(got, x, rows, &w, split, N)
						if !gemmSameBits(got, want) {
							t.Fatalf("%s K=%d N=%d rows=%d split %d: the 6×8 kernel's results differ from the 3×4 kernel's", name, K, N, rows, split)
						}
					}
					got := make([]float32, rows*N)
					matmul(nil, got, x, rows, &w, 2)
					if !gemmSameBits(got, want) {
						t.Fatalf("%s K=%d N=%d rows=%d: matmul differs from the 3×4 kernel", name, K, N, rows)
					}
				}
			}
		}
	}
}

// Quantized prefill on the 6×8 kernel gives the 3×4 kernel's bits: 4 and
// 8 bits, row counts off the six-row step, weight rows off the eight-row
// panel, split over rows.
func TestQPrefillWideBitIdentical(t *testing.T) {
	if !useGemm512 || !useAVX512 || !useAVX2 {
		t.Skip("no AVX-512 kernel on this CPU or build: prefill runs on the 3×4 kernel alone")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ rows, cols, gs int }{{37, 64, 32}, {24, 256, 128}, {13, 96, 96}} {
			w := quantizeAffine(randMat(rng, c.rows*c.cols), c.rows, c.cols, bits, c.gs)
			for _, n := range []int{6, 13, 20} {
				x := randMat(rng, n*c.cols)
				p := &qPrep{}
				p.prepare(x, n, w)
				useAVX512 = false
				want := make([]float32, n*c.rows)
				qMatMulPrepared(want, p, n, w, 0, c.rows, new([]float32))
				useAVX512 = true
				got := make([]float32, n*c.rows)
				if s := min(16, c.rows); !qPrefillWide(got, x, n, w, 0, s) || !qPrefillWide(got, x, n, w, s, c.rows) {
					t.Fatal("qPrefillWide did not run")
				}
				if !gemmSameBits(got, want) {
					t.Fatalf("q%d %dx%d g%d n=%d: the 6×8 kernel's results differ from the 3×4 kernel's", bits, c.rows, c.cols, c.gs, n)
				}
			}
		}
	}
}
