//go:build !amd64 || purego

package cpu

// useGemm512 is false: without AVX-512 prefill runs on the 3×4 kernel.
const useGemm512 = false

func gemm6x8(x []float32, ldx int, p []float32, K int, out []float32, ldo int) {
	gemm6x8Go(x, ldx, p, K, out, ldo)
}

func gemmPackF32(p, src []float32, ld, m, K int) { gemmPackGo(p, src, ld, m, K) }

func gemmPackBF16(p []float32, src []uint16, ld, m, K int) {
	row := make([]float32, K)
	for j := 0; j < m; j++ {
		widenBF16Go(row, src[j*ld:j*ld+K])
		gemmPackGo(p[8*j:], row, 0, 1, K) // row j of the panel
	}
}

func gemmPrefetch(w *wmat, n, m int) {}
