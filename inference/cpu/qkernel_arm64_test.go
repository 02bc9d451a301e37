//go:build arm64 && !purego

package cpu

import "testing"

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
