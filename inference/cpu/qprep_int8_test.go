package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQPrepPairsRowBitIdentical holds the pair kernel's input quantizer
// (qPrepPairsRow, AVX2 on amd64, NEON on arm64) to its Go twin bit for
// bit, on random rows of every magnitude and on the edges: zero and −0
// blocks, ±MaxFloat32, a lone nonzero, denormal blocks (1/d overflows:
// 0·Inf lanes), blocks of denormals so small that d underflows to 0 (Go's
// id stays 0: every q 0) and the smallest with d ≠ 0, all-equal blocks,
// ±Inf and NaN, and, with d = 1, every k+0.5 for |k| ≤ 127 and the floats
// around it (the rounding half away from zero; ties to even fails). Each result is also checked against what Q8_0
// means (|q| ≤ 127, |x − d·q| ≤ d/2 + rounding), so the test is not only
// the Go twin against itself where there is no assembly.
func TestQPrepPairsRowBitIdentical(t *testing.T) {
	t.Logf("quantizer: %s", qPrepPairsKernel())
	rng := rand.New(rand.NewPCG(38, 2))
	var rows [][]float32
	for _, scale := range []float32{1, 1e-3, 1e3, 1e-30, 1e30, 3e-37, 1e-38} {
		for _, K := range []int{64, 128, 640, 2048} {
			x := randMat(rng, K+1)[1:] // unaligned
			for i := range x {
				x[i] *= scale
			}
			rows = append(rows, x)
		}
	}
	edge := make([]float32, 64*10)
	for i := range edge[32:64] {
		edge[32+i] = float32(math.Copysign(0, -1)) // −0 block
	}
	for i := range edge[64:128] {
		edge[64+i] = float32(i%3-1) * math.MaxFloat32
	}
	edge[128+5] = -1e-20           // a lone nonzero
	for i := range edge[192:256] { // denormal blocks, one with zeros
		if i%4 != 0 {
			edge[192+i] = math.Float32frombits(uint32(i)*1000) * float32(i%2*2-1)
		}
	}
	for i := range edge[256:320] { // all values exact integers
		edge[256+i] = float32(i - 32)
	}
	for i := range edge[320:640] { // tiny normal amax: d denormal, 1/d finite or not
		edge[320+i] = float32(i%7-3) * math.Float32frombits(0x00800000+uint32(i)<<18)
	}
	rows = append(rows, edge)
	// ±Inf and NaN (not what a model should produce, but a NaN must not be
	// dropped): d = Inf or NaN, the block's q 0 or ±127
	odd := randMat(rng, 64*4)
	odd[3], odd[40] = float32(math.Inf(1)), float32(math.Inf(-1))
	odd[64+7] = float32(math.NaN())
	odd[128+1], odd[128+2], odd[128+33] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	rows = append(rows, odd)
	// max|x| ≤ 63 denormal steps: amax/127 rounds to d = 0 though the
	// inputs are not all zero; 64 steps: d is the least denormal and 1/d
	// overflows; then all-equal blocks (every q ±127), a NaN block, a −Inf
	// block
	tiny := make([]float32, 64*4)
	for i := range tiny[:64] {
		tiny[i] = math.Float32frombits(uint32(i%64)) * float32(i%2*2-1)
	}
	for i := range tiny[64:128] {
		tiny[64+i] = math.Float32frombits(uint32(i%65)) * float32(i%3-1)
	}
	for i := range tiny[128:192] {
		tiny[128+i] = float32(0.3) * float32(i/32*2-1)
	}
	for i := range tiny[192:256] {
		tiny[192+i] = float32(math.NaN())
		if i >= 32 {
			tiny[192+i] = float32(math.Inf(-1))
		}
	}
	rows = append(rows, tiny)
	// d = 1 (each block starts with 127): v = x, around every k + 0.5
	var half []float32
	for k := -128; k <= 127; k++ {
		c := float32(k) + 0.5
		for _, dir := range []float32{-200, 200} {
			v := c
			for s := 0; s < 16; s++ {
				if len(half)%32 == 0 {
					half = append(half, 127)
				}
				half = append(half, v)
				v = math.Nextafter32(v, dir)
			}
		}
	}
	for _, v := range []float32{0.49999997, 0.5, 0.50000006, -0.49999997, -0.5, 1e-45, -1e-45, 127.49999, 127.5, -127.5, 126.5} {
		if len(half)%32 == 0 {
			half = append(half, 127)
		}
		half = append(half, v)
	}
	for len(half)%64 != 0 {
		half = append(half, 0)
	}
	rows = append(rows, half)

	for ri, x := range rows {
		K := len(x)
		q, dv, c := make([]int8, K), make([]float32, K/8), make([]int16, K/4)
		qPrepPairsRow(q, dv, c, x)
		wq, wdv, wc := make([]int8, K), make([]float32, K/8), make([]int16, K/4)
		qPrepPairsRowGo(wq, wdv, wc, x)
		for i := range wq {
			if q[i] != wq[i] {
				p, j := i/64, i%64 // the input element: block 2p + j%32/16, even/odd by j/32
				e := 64*p + 32*(j%32/16) + 2*(j%16) + j/32
				t.Fatalf("row %d (K=%d): q[%d] = %d, Go %d (x = %g, d = %g)", ri, K, i, q[i], wq[i], x[e], wdv[8*p+4*(j%32/16)])
			}
		}
		for i := range wdv {
			if math.Float32bits(dv[i]) != math.Float32bits(wdv[i]) && !(isNaN32(dv[i]) && isNaN32(wdv[i])) { // a NaN's payload may differ
				t.Fatalf("row %d: dv[%d] = %g, Go %g", ri, i, dv[i], wdv[i])
			}
		}
		for i := range wc {
			if c[i] != wc[i] {
				t.Fatalf("row %d: c16[%d] = %d, Go %d", ri, i, c[i], wc[i])
			}
		}
		checkQ8Pairs(t, ri, x, q, dv, c)
	}
}

func isNaN32(v float32) bool { return v != v }

// checkQ8Pairs checks one prepared row against Q8_0's meaning.
func checkQ8Pairs(t *testing.T, ri int, x []float32, q []int8, dv []float32, c []int16) {
	t.Helper()
	for p := 0; p < len(x)/64; p++ {
		for h := 0; h < 2; h++ {
			d := float64(dv[8*p+4*h])
			var amax float64
			for _, v := range x[64*p+32*h : 64*p+32*h+32] {
				amax = max(amax, math.Abs(float64(v)))
			}
			if math.IsNaN(amax) || math.IsInf(amax, 0) {
				continue
			}
			if math.Abs(d-amax/127) > max(1e-6*amax/127, 0x1p-149) { // d may be denormal
				t.Fatalf("row %d block %d: d = %g, max|x|/127 = %g", ri, 2*p+h, d, amax/127)
			}
			for e := 0; e < 32; e++ {
				v := q[64*p+16*h+32*(e%2)+e/2]
				if v < -127 {
					t.Fatalf("row %d block %d: q[%d] = %d", ri, 2*p+h, e, v)
				}
				xv := float64(x[64*p+32*h+e])
				if d > 1e-36 && math.Abs(xv-d*float64(v)) > d*(0.5+1e-5) {
					t.Fatalf("row %d block %d: x[%d] = %g, d·q = %g·%d", ri, 2*p+h, e, xv, d, v)
				}
			}
		}
		for k := 0; k < 16; k++ {
			s := int(q[64*p+2*k]) + int(q[64*p+2*k+1]) + int(q[64*p+32+2*k]) + int(q[64*p+32+2*k+1])
			if int(c[16*p+k]) != 8*s {
				t.Fatalf("row %d pair %d: c16[%d] = %d, 8·Σq = %d", ri, p, k, c[16*p+k], 8*s)
			}
		}
	}
}
