//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The AVX2+FMA kernels take n a multiple of 8; the Go wrappers finish the
// tail. Build with -tags purego for the portable Go kernels only.

//go:noescape
func dotBF16AVX2(x *float32, w *uint16, n int) float32

//go:noescape
func dotF32AVX2(x, y *float32, n int) float32

var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	if !useAVX2 || n == 0 {
		return dotF32Go(a, b)
	}
	s := dotF32AVX2(&a[0], &b[0], n)
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

func dotBF16(x []float32, w []uint16) float32 {
	w = w[:len(x)]
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return dotBF16Go(x, w)
	}
	s := dotBF16AVX2(&x[0], &w[0], n)
	for i := n; i < len(x); i++ {
		s += x[i] * bf16(w[i])
	}
	return s
}

//go:noescape
func dot4F32AVX2(x *float32, ld int, w *float32, n int, out *float32)

// dot4 is four dot products of w with the rows x[0:K], x[K:2K], … x[3K:4K].
func dot4(x []float32, K int, w []float32) (float32, float32, float32, float32) {
	x = x[:4*K]
	w = w[:K]
	n := K &^ 7
	if !useAVX2 || n == 0 {
		return dot4Go(x, K, w)
	}
	var out [4]float32
	dot4F32AVX2(&x[0], K, &w[0], n, &out[0])
	for i := n; i < K; i++ {
		v := w[i]
		out[0] += x[i] * v
		out[1] += x[K+i] * v
		out[2] += x[2*K+i] * v
		out[3] += x[3*K+i] * v
	}
	return out[0], out[1], out[2], out[3]
}
