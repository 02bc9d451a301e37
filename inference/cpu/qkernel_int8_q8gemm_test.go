package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The 8-bit group-32 prefill tile (qGemmQ8): AVX2 has its Go twin's bits,
// whole and in two parts of K, folded (no bias term) and affine (the
// 128·s + b term), fp32 and bf16 scales; and a whole prefill (any chunk
// size, odd row counts, K over qGemmCols, the workers' splits) has the
// bits of decoding its inputs one at a time, with AVX2 and without.
func TestQGemmQ8BitIdentical(t *testing.T) {
	defer func(a2 bool) { useAVX2 = a2 }(useAVX2)
	hasAVX2 := useAVX2
	checkQGemmQ8(t, func(on bool) { useAVX2 = on && hasAVX2 })
}

// checkQGemmQ8 is TestQGemmQ8BitIdentical for the tile that set(true)
// turns on and set(false) off (arm64's: qkernel_arm64_test.go).
func checkQGemmQ8(t *testing.T, set func(on bool)) {
	set(true)
	rng := rand.New(rand.NewPCG(38, 10))
	for _, c := range []struct{ rows, cols int }{{2, 32}, {37, 96}, {64, 512}, {13, 2048}, {6, 4128}} {
		sym := quantizeSymmetric(randMat(rng, c.rows*c.cols), c.rows, c.cols, 8, 32)
		if !sym.foldBiases() {
			t.Fatal("symmetric biases not folded")
		}
		aff := quantizeAffine(randMat(rng, c.rows*c.cols), c.rows, c.cols, 8, 32)
		_, s16 := bf16Scaled(sym)
		_, a16 := bf16Scaled(aff)
		for _, w := range []*qMatrix{sym, aff, s16, a16} {
			w.Int8 = true
			mode := qI8ModeOf(w)
			if !qI8Q8Gemm(w) || (mode != qI8NoBias && mode != qI8Bias128) {
				t.Fatalf("%dx%d: not the 8-bit tile (mode %d)", c.rows, c.cols, mode)
			}
			// the tile against its twin, on four inputs prepared as prefill does
			x := randMat(rng, 4*c.cols)
			var p qPrep
			p.prepare(x, 4, w)
			sc := make([]float32, w.numScales())
			sc = w.scalesOf(0, len(sc), &sc)
			blocks := c.cols / 32
			q8, d, xs := p.pq8, p.pdv, p.pxsv // packed by prepare
			var got, want, split [64]float32
			qGemmQ8(&got, q8, d, xs, w.Packed, w.wordsPerRow(), sc, w.Biases, w.groups(), blocks, mode, false)
			qGemmQ8Go(&want, q8, d, xs, w.Packed, w.wordsPerRow(), sc, w.Biases, w.groups(), blocks, mode, false)
			h := blocks / 2 // in two parts of K, the second continuing the first's sums
			if h > 0 {
				qGemmQ8(&split, q8, d, xs, w.Packed, w.wordsPerRow(), sc, w.Biases, w.groups(), h, mode, false)
			}
			var bi []float32
			if w.Biases != nil {
				bi = w.Biases[h:]
			}
			qGemmQ8(&split, q8[128*h:], d[4*h:], xs[32*h:], w.Packed[8*h:], w.wordsPerRow(), sc[h:], bi, w.groups(), blocks-h, mode, h > 0)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(split[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%dx%d mode %d tile lane %d: %v (in two parts %v), Go twin %v", c.rows, c.cols, mode, i, got[i], split[i], want[i])
				}
			}
			for _, n := range []int{4, 7, 9, 33} {
				x := randMat(rng, n*c.cols)
				got := make([]float32, n*c.rows)
				for r0 := 0; r0 < c.rows; r0 += 11 { // the workers' splits
					qMatMulRangeFast(got, x, n, w, r0, min(r0+11, c.rows))
				}
				set(false)
				portable := make([]float32, n*c.rows)
				qMatMulRangeFast(portable, x, n, w, 0, c.rows)
				set(true)
				for i := 0; i < n; i++ {
					dec := make([]float32, c.rows)
					qMatMulRangeFast(dec, x[i*c.cols:(i+1)*c.cols], 1, w, 0, c.rows)
					for r := range dec {
						g, pg := got[i*c.rows+r], portable[i*c.rows+r]
						if math.Float32bits(g) != math.Float32bits(dec[r]) || math.Float32bits(pg) != math.Float32bits(dec[r]) {
							t.Fatalf("%dx%d mode %d n=%d: out[%d][%d] = %v (Go %v), decode %v", c.rows, c.cols, mode, n, i, r, g, pg, dec[r])
						}
					}
				}
			}
		}
	}
}
