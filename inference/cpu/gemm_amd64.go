//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// useGemm512 says the prefill GEMM's AVX-512 kernel runs here (x/sys/cpu
// also checks that the OS saves the 512-bit state); settable for tests.
var useGemm512 = useAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

//go:noescape
func gemm6x8F32AVX512(x *float32, ldx int, p *float32, k int, out *float32, ldo int)

//go:noescape
func gemmPackF32AVX2(dst, src *float32, ld, m, k int)

//go:noescape
func gemmPackBF16AVX2(dst *float32, src *uint16, ld, m, k int)

// gemm6x8 sets out[i·ldo+j] (i < 6, j < 8) to x row i (ldx apart) times
// panel row j, each sum in dot3x4Go's order; K a positive multiple of 8.
func gemm6x8(x []float32, ldx int, p []float32, K int, out []float32, ldo int) {
	_ = x[5*ldx+K-1]
	_ = p[8*K-1]
	_ = out[5*ldo+7]
	gemm6x8F32AVX512(&x[0], ldx, &p[0], K, &out[0], ldo)
}

// gemmPackF32 packs rows src[j·ld:j·ld+K], j < m ≤ 8, into the panel p.
func gemmPackF32(p, src []float32, ld, m, K int) {
	_ = p[8*K-1]
	_ = src[(m-1)*ld+K-1]
	gemmPackF32AVX2(&p[0], &src[0], ld, m, K)
}

// gemmPackBF16 is gemmPackF32 from bfloat16 rows.
func gemmPackBF16(p []float32, src []uint16, ld, m, K int) {
	_ = p[8*K-1]
	_ = src[(m-1)*ld+K-1]
	gemmPackBF16AVX2(&p[0], &src[0], ld, m, K)
}

//go:noescape
func prefetchRows(p *byte, ld, m, n int)

// gemmPrefetch asks for rows [n, n+m) of w (m > 0) to be brought into L2.
func gemmPrefetch(w *wmat, n, m int) {
	base, K := w.off+n*w.ld, w.k
	if w.f != nil {
		_ = w.f[base+(m-1)*w.ld+K-1]
		prefetchRows((*byte)(unsafe.Pointer(&w.f[base])), 4*w.ld, m, 4*K)
		return
	}
	_ = w.h[base+(m-1)*w.ld+K-1]
	prefetchRows((*byte)(unsafe.Pointer(&w.h[base])), 2*w.ld, m, 2*K)
}
