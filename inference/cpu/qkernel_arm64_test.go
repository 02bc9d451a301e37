//go:build arm64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQKernelsNEONBitIdentical holds the NEON kernels to the Go twins bit
// for bit (and to the definition), as TestQKernelsBitIdentical does
// AVX2's; TestQKernelGoldens holds both to amd64's bits.
func TestQKernelsNEONBitIdentical(t *testing.T) {
	if !useNEON {
		t.Skip("this CPU has no Advanced SIMD")
	}
	defer func(n bool) { useNEON = n }(useNEON)
	checkQKernelsSet(t, func(on bool) { useNEON = on })
}

// TestQI8KernelsNEONBitIdentical is TestQI8KernelsBitIdentical for the
// fast mode's NEON kernels (SDOT).
func TestQI8KernelsNEONBitIdentical(t *testing.T) {
	if !useNEON || !useDotProd {
		t.Skip("this CPU has no SDOT (FEAT_DotProd)")
	}
	defer func(n bool) { useNEON = n }(useNEON)
	checkQI8Kernels(t, func(on bool) { useNEON = on })
}

// TestQGemmNEONBitIdentical is TestQGemmPairsBitIdentical and
// TestQGemmQ8BitIdentical for the NEON prefill tiles (SDOT): each tile
// has its Go twin's bits, and a prefill has decoding's, with the tiles
// and without.
func TestQGemmNEONBitIdentical(t *testing.T) {
	if !useNEON || !useDotProd {
		t.Skip("this CPU has no SDOT (FEAT_DotProd)")
	}
	defer func(n bool) { useNEON = n }(useNEON)
	set := func(on bool) { useNEON = on }
	t.Run("pairs", func(t *testing.T) { checkQGemmPairs(t, set) })
	t.Run("q8", func(t *testing.T) { checkQGemmQ8(t, set) })
}

// TestQGemmNEONI8MMBitIdentical holds the SMMLA tile (FEAT_I8MM) to the
// SDOT one, and so to the Go twin and to decoding (checkQGemmPairs with
// useI8MM as the switch; TestQGemmNEONBitIdentical holds it to the Go
// twin where the CPU has I8MM). scripts/test-arm64 runs it on QEMU's max
// CPU and requires I8MM there (ETCHAT_ARM64_EXPECT).
func TestQGemmNEONI8MMBitIdentical(t *testing.T) {
	if !useNEON || !useDotProd || !useI8MM {
		t.Skip("this CPU has no SMMLA (FEAT_I8MM)")
	}
	defer func(i bool) { useI8MM = i }(useI8MM)
	checkQGemmPairs(t, func(on bool) { useI8MM = on })
	// the switch is the packing's: a prefill packed for SMMLA took it
	var p qPrep
	w := quantizeSymmetric(randMat(rand.New(rand.NewPCG(1, 2)), 2*64), 2, 64, 4, 32)
	if !w.foldBiases() {
		t.Fatal("symmetric biases not folded")
	}
	w.Int8 = true
	p.prepare(randMat(rand.New(rand.NewPCG(3, 4)), 4*64), 4, w)
	if !p.smmla {
		t.Fatal("useI8MM on, yet the inputs were not packed for SMMLA")
	}
}

// TestDot3x4NEONBitIdentical: prefill's 3×4 micro-kernel gives dot3x4Go's
// bits, with strides that repeat a row (0) and with distinct rows.
func TestDot3x4NEONBitIdentical(t *testing.T) {
	if !useNEON {
		t.Skip("this CPU has no Advanced SIMD")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, K := range []int{8, 16, 64, 520} {
		x, w := randMat(rng, 3*K), randMat(rng, 4*K)
		for _, ld := range [][2]int{{K, K}, {0, K}, {K, 0}, {0, 0}} {
			var got, want [12]float32
			qDot3x4(x, ld[0], w, ld[1], K, &got)
			dot3x4Go(x, ld[0], w, ld[1], K, &want)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("K=%d strides %v: out[%d] = %v, Go %v", K, ld, i, got[i], want[i])
				}
			}
		}
	}
}
