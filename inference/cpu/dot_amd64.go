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

// float3x4 says float prefill (several rows) runs on the 3×4 kernel.
func float3x4() bool { return useAVX2 }

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

//go:noescape
func dot4x2F32AVX2(x *float32, ld int, w0, w1 *float32, n int, out *float32)

// dot4x2 is the eight dot products of the rows x[rK:(r+1)K] (r < 4) with
// the two weight rows w0 and w1: out[2r+j].
func dot4x2(x []float32, K int, w0, w1 []float32, out *[8]float32) {
	x = x[:4*K]
	w0, w1 = w0[:K], w1[:K]
	n := K &^ 7
	if !useAVX2 || n == 0 || len(w1) == 0 {
		out[0], out[2], out[4], out[6] = dot4Go(x, K, w0)
		out[1], out[3], out[5], out[7] = dot4Go(x, K, w1)
		return
	}
	dot4x2F32AVX2(&x[0], K, &w0[0], &w1[0], n, &out[0])
	for i := n; i < K; i++ {
		a, b := w0[i], w1[i]
		for r := 0; r < 4; r++ {
			out[2*r] += x[r*K+i] * a
			out[2*r+1] += x[r*K+i] * b
		}
	}
}

//go:noescape
func gemvF32AVX2(x *float32, w *float32, ld, k, nrows int, out *float32)

//go:noescape
func gemvBF16AVX2(x *float32, w *uint16, ld, k, nrows int, out *float32)

//go:noescape
func deinterleave16AVX2(dst, src *float32, n int)

//go:noescape
func gemvBF16x16AVX2(xp *float32, w *uint16, ld, k, nrows int, out *float32)

// gemvPrep is the input prepared for gemv, once per matmul: x
// deinterleaved by 16 into xp, true, when the weights are bf16 with K a
// multiple of 32 (and xp has room); else x itself, false.
func gemvPrep(x []float32, w *wmat, xp []float32) ([]float32, bool) {
	K := w.k
	if !useAVX2 || w.h == nil || w.fp16 || K == 0 || K%32 != 0 || len(xp) < K {
		return x, false
	}
	x = x[:K]
	deinterleave16AVX2(&xp[0], &x[0], K)
	return xp[:K], true
}

// gemv computes out[n0:n1] for a single row x (as gemvPrep returned it)
// when the kernels apply; it reports false when the caller must fall
// back.
func gemv(out, x []float32, w *wmat, n0, n1 int, prepped bool) bool {
	K := w.k
	if !useAVX2 || K == 0 || K%8 != 0 || n1 <= n0 || w.fp16 {
		return false
	}
	first := w.off + n0*w.ld
	last := w.off + (n1-1)*w.ld + K // one past the last element read
	x = x[:K]
	o := out[n0:n1]
	switch {
	case w.f != nil:
		_ = w.f[first:last]
		gemvF32AVX2(&x[0], &w.f[first], w.ld, K, n1-n0, &o[0])
	case prepped:
		_ = w.h[first:last]
		gemvBF16x16AVX2(&x[0], &w.h[first], w.ld, K, n1-n0, &o[0])
	default:
		_ = w.h[first:last]
		gemvBF16AVX2(&x[0], &w.h[first], w.ld, K, n1-n0, &o[0])
	}
	return true
}

//go:noescape
func readSumAVX2(p *uint64, n int) uint64

// readSum sums p with the widest loads the machine has: the bandwidth
// probe's loop (bench_test.go), which must be bound by memory alone.
func readSum(p []uint64) uint64 {
	n := len(p) &^ 63
	if !useAVX2 || n == 0 {
		return readSumGo(p)
	}
	s := readSumAVX2(&p[0], n)
	for _, v := range p[n:] {
		s += v
	}
	return s
}

//go:noescape
func axpyF32AVX2(a float32, x, y *float32, n int)

// axpy is y += a·x, bit for bit as axpyGo.
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	n := len(y) &^ 7
	if !useAVX2 || n == 0 {
		axpyGo(y, x, a)
		return
	}
	axpyF32AVX2(a, &x[0], &y[0], n)
	axpyGo(y[n:], x[n:], a)
}

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

// widenBF16 sets dst[i] to the float32 of the bfloat16 src[i].
func widenBF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	n := 0
	if useAVX2 {
		n = len(dst) &^ 15
	}
	if n > 0 {
		widenBF16AVX2(&dst[0], &src[0], n)
	}
	widenBF16Go(dst[n:], src[n:])
}

//go:noescape
func dot3x4F32AVX2(x *float32, ldx int, w *float32, ldw int, n int, out *float32)

// dot3x4 sets out[4i+j] to x[i·ldx:]·w[j·ldw:] over K for i < 3, j < 4
// (a stride 0 repeats a row); K a positive multiple of 8, AVX2 only.
func dot3x4(x []float32, ldx int, w []float32, ldw, K int, out *[12]float32) {
	_ = x[2*ldx+K-1]
	_ = w[3*ldw+K-1]
	dot3x4F32AVX2(&x[0], ldx, &w[0], ldw, K, &out[0])
}
