package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The fast mode's kernels: AVX2 and the Go twin give the same bits, whole
// and split over rows, with fp32 and bf16 scales, affine and folded
// biases; and both are the definition (x rounded to Q8_0, then the exact
// product) up to fp32 rounding of the sums.
func TestQI8KernelsBitIdentical(t *testing.T) {
	defer func(a2 bool) { useAVX2 = a2 }(useAVX2)
	hasAVX2 := useAVX2
	checkQI8Kernels(t, func(on bool) { useAVX2 = on && hasAVX2 })
}

// checkQI8Kernels is TestQI8KernelsBitIdentical for the kernels that
// set(true) turns on and set(false) off (arm64's NEON:
// qkernel_arm64_test.go).
func checkQI8Kernels(t *testing.T, set func(on bool)) {
	rng := rand.New(rand.NewPCG(38, 8))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ rows, cols, gs int }{{37, 64, 32}, {16, 128, 64}, {9, 256, 128}, {12, 96, 96},
			{64, 512, 32}, {23, 128, 128}, {8, 32, 32}} {
			aff := quantizeAffine(randMat(rng, c.rows*c.cols), c.rows, c.cols, bits, c.gs)
			sym := quantizeSymmetric(randMat(rng, c.rows*c.cols), c.rows, c.cols, bits, c.gs)
			if !sym.foldBiases() {
				t.Fatalf("q%d g%d: symmetric biases not folded", bits, c.gs)
			}
			_, a16 := bf16Scaled(aff)
			_, s16 := bf16Scaled(sym)
			for _, w := range []*qMatrix{aff, sym, a16, s16} {
				w.Int8 = true
				for _, n := range []int{1, 2, 5} {
					x := randMat(rng, n*c.cols)
					x[3] = 0
					set(false)
					portable := make([]float32, n*c.rows)
					qMatMulRangeFast(portable, x, n, w, 0, c.rows)
					set(true)
					got := make([]float32, n*c.rows)
					for r0 := 0; r0 < c.rows; r0 += 11 { // the workers' splits
						qMatMulRangeFast(got, x, n, w, r0, min(r0+11, c.rows))
					}
					want := make([]float32, n*c.rows)
					qMatMulI8Ref(want, x, n, w)
					exact := make([]float32, n*c.rows)
					qMatMulRef(exact, x, n, w)
					var errI8, errExact float64
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(portable[i]) {
							t.Fatalf("q%d g%d %dx%d n=%d: out[%d] = %v, Go kernel %v", bits, c.gs, c.rows, c.cols, n, i, got[i], portable[i])
						}
						if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
							t.Fatalf("q%d g%d n=%d: out[%d] = %v, Q8_0 reference %v", bits, c.gs, n, i, got[i], want[i])
						}
						errI8 += math.Abs(float64(got[i] - want[i]))
						errExact += math.Abs(float64(got[i] - exact[i]))
					}
					// the rounding of the input is what the mode costs: far
					// more than the kernels' own rounding, yet small
					if errExact <= errI8 || errExact > 0.05*float64(len(got))*math.Sqrt(float64(c.cols)) {
						t.Fatalf("q%d g%d n=%d: mean |fast − exact| %g, |fast − Q8_0 reference| %g", bits, c.gs, n, errExact/float64(len(got)), errI8/float64(len(got)))
					}
				}
			}
		}
	}
}

// A block quantizes as Q8_0: max|x| maps to ±127, zeros to zero, and the
// 4-bit order is the even elements, then the odd ones.
func TestQuantBlockI8(t *testing.T) {
	var x [32]float32
	for i := range x {
		x[i] = float32(i) - 10
	}
	x[7] = 42.5
	var q [32]int8
	d := quantBlockI8(&q, &x, 8)
	if d != 42.5/127 || q[7] != 127 || q[10] != 0 || q[0] != int8(math.Round(-10/float64(d))) {
		t.Fatalf("d %v, q %v", d, q)
	}
	var q4 [32]int8
	quantBlockI8(&q4, &x, 4)
	for j := 0; j < 16; j++ {
		if q4[j] != q[2*j] || q4[16+j] != q[2*j+1] {
			t.Fatalf("4-bit order: %v, natural %v", q4, q)
		}
	}
	var zero [32]float32
	if d := quantBlockI8(&q, &zero, 8); d != 0 || q != [32]int8{} {
		t.Fatalf("zeros: d %v, q %v", d, q)
	}
}

// The pair layout's prefill GEMM (two weight rows × four inputs a tile):
// the assembly tile in use (AVX2; arm64's NEON, SMMLA where there is
// I8MM) has its Go twin's bits, and a whole prefill (any chunk size, odd
// row counts, the workers' splits, fp32 and bf16 scales) has the bits of
// decoding its inputs one at a time.
func TestQGemmPairsBitIdentical(t *testing.T) {
	restore := setSIMD(true) // as detected: restored when done
	defer restore()
	checkQGemmPairs(t, func(on bool) {
		restore()
		if !on {
			setSIMD(false)
		}
	})
}

// checkQGemmPairs is TestQGemmPairsBitIdentical for the tile that
// set(true) turns on and set(false) off (arm64's: qkernel_arm64_test.go).
func checkQGemmPairs(t *testing.T, set func(on bool)) {
	set(true)
	rng := rand.New(rand.NewPCG(38, 9))
	for _, c := range []struct{ rows, cols int }{{2, 64}, {37, 128}, {64, 512}, {13, 2048}, {6, 8192}} {
		sym := quantizeSymmetric(randMat(rng, c.rows*c.cols), c.rows, c.cols, 4, 32)
		if !sym.foldBiases() {
			t.Fatal("symmetric biases not folded")
		}
		_, s16 := bf16Scaled(sym)
		for _, w := range []*qMatrix{sym, s16} {
			w.Int8 = true
			if !qI8Pairs(w) {
				t.Fatalf("%dx%d: not the pair layout", c.rows, c.cols)
			}
			// the tile against its twin, on four inputs prepared as prefill
			// does (for the tile on, as packPairsTiles packs them for it)
			x := randMat(rng, 4*c.cols)
			var p, pGo qPrep
			set(false)
			pGo.prepare(x, 4, w)
			set(true)
			p.prepare(x, 4, w)
			tile := qGemmPairsTile(&p)
			sc := make([]float32, w.numScales())
			sc = w.scalesOf(0, len(sc), &sc)
			pairs := c.cols / 64
			q8, dv, c16 := p.pq8, p.pdv, p.pc16 // packed by prepare
			var got, want, split [64]float32
			tile(&got, q8, dv, c16, w.Packed, w.wordsPerRow(), sc, w.groups(), pairs, false)
			qGemmPairsGo(&want, pGo.pq8, pGo.pdv, pGo.pc16, w.Packed, w.wordsPerRow(), sc, w.groups(), pairs, false)
			// in two parts of K, the second continuing the first's sums
			h := pairs / 2
			tile(&split, q8, dv, c16, w.Packed, w.wordsPerRow(), sc, w.groups(), h, false)
			if pairs-h > 0 {
				tile(&split, q8[256*h:], dv[32*h:], c16[64*h:], w.Packed[8*h:], w.wordsPerRow(), sc[2*h:], w.groups(), pairs-h, h > 0)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(split[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%dx%d tile lane %d: %v (in two parts %v), Go twin %v", c.rows, c.cols, i, got[i], split[i], want[i])
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
							t.Fatalf("%dx%d n=%d: out[%d][%d] = %v (Go %v), decode %v", c.rows, c.cols, n, i, r, g, pg, dec[r])
						}
					}
				}
			}
		}
	}
}
