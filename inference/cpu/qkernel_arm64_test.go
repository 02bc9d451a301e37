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
