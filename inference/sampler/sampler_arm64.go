//go:build arm64 && !purego

package sampler

import (
	"math"

	"golang.org/x/sys/cpu"
)

//go:generate env -u GOARCH -u GOOS go run sampler_neon_gen.go

//go:noescape
func maxNEON(x *float32, n int, out *[16]float32)

var useAVX2 = false // settable, as on amd64, for the tests (no AVX2 here)

// useNEON switches argmaxRow's vector pass on (settable for the tests).
var useNEON = cpu.ARM64.HasASIMD

func weigh(l, w []float32, maxv, floor, scale float32) { weighGo(l, w[:len(l)], maxv, floor, scale) }

// argmaxRow is argmax4: the first index of the largest value above -Inf,
// or -1. The vector pass finds the largest value (NaNs skipped, as
// argmax4's comparisons skip them), then the first index equal to it.
func argmaxRow(x []float32) int {
	n := len(x) &^ 15
	if !useNEON || n == 0 {
		return argmax4(x)
	}
	var lanes [16]float32
	maxNEON(&x[0], n, &lanes)
	m := float32(math.Inf(-1))
	for _, v := range lanes {
		if v > m {
			m = v
		}
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	if !(m > float32(math.Inf(-1))) {
		return -1
	}
	for i, v := range x {
		if v == m {
			return i
		}
	}
	return -1 // unreachable: m is in x
}
