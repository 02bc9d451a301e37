//go:build amd64 && !purego

package sampler

import (
	"math"

	"golang.org/x/sys/cpu"
)

// The AVX2 kernels take n a multiple of 8; the Go wrappers finish the tail
// with the portable code, which computes the same values bit for bit.

//go:noescape
func weighAVX2(l, w *float32, n int, maxv, floor, scale float32, tab *float32)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func indexAVX2(x *float32, n int, v float32) int

var useAVX2 = cpu.X86.HasAVX2

// weigh sets w[i] to weightScaled((l[i] - maxv)·scale) where l[i] ≥ floor,
// else 0.
func weigh(l, w []float32, maxv, floor, scale float32) {
	w = w[:len(l)]
	n := len(l) &^ 7
	if !useAVX2 || n == 0 {
		weighGo(l, w, maxv, floor, scale)
		return
	}
	weighAVX2(&l[0], &w[0], n, maxv, floor, scale, &expTab[0])
	weighGo(l[n:], w[n:], maxv, floor, scale)
}

// argmaxRow is argmax4: the first index of the largest value above -Inf,
// or -1. The vector code finds the largest value, then its first index.
func argmaxRow(x []float32) int {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return argmax4(x)
	}
	m := maxAVX2(&x[0], n)
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	if !(m > float32(math.Inf(-1))) {
		return -1
	}
	if i := indexAVX2(&x[0], n, m); i >= 0 {
		return i
	}
	for i, v := range x[n:] {
		if v == m {
			return n + i
		}
	}
	return -1 // unreachable: m is in x
}
