package cpu

import "sync"

// The prefill GEMM on AVX-512 (several input rows against every weight
// row): eight weight rows at a time are packed into a panel (interleaved
// by eight, widened to fp32 once per matmul), and the 6×8 kernel runs the
// chunk's rows over it six at a time, 24 of the 32 vector registers
// holding 48 sums. Each output is summed exactly as dot3x4Go sums it (one
// eight-lane fused accumulator, then hsum8), so its results are the 3×4
// kernel's bit for bit, which is what AVX2-only machines and -tags purego
// run.

// gemmMinRows is the fewest input rows given to the 6×8 kernel; fewer run
// on the 3×4 one.
const gemmMinRows = 6

// gemmBuf is the room of one goroutine's GEMM: a panel of eight weight
// rows and eight fp32 rows to build one from, and the outputs of a last,
// partial panel.
type gemmBuf struct {
	panel, rows []float32
	o           [48]float32
}

var gemmBufs = sync.Pool{New: func() any { return new(gemmBuf) }}

// getGemmBuf is a gemmBuf from the pool with room for rows of K.
func getGemmBuf(K int) *gemmBuf {
	b := gemmBufs.Get().(*gemmBuf)
	if cap(b.panel) < 8*K {
		b.panel, b.rows = make([]float32, 8*K), make([]float32, 8*K)
	}
	b.panel, b.rows = b.panel[:8*K], b.rows[:8*K]
	return b
}

// gemmPanel sets out[i·ldo + j] to x row i (K apart) times panel row j,
// for i < rows (at least 6) and j < m ≤ 8. A last partial group of rows
// is run as the last six rows: the outputs computed twice are the same.
func gemmPanel(out []float32, ldo int, x []float32, rows, K, m int, b *gemmBuf) {
	for i := 0; i < rows; i += 6 {
		i = min(i, rows-6)
		if m == 8 {
			gemm6x8(x[i*K:], K, b.panel, K, out[i*ldo:], ldo)
			continue
		}
		gemm6x8(x[i*K:], K, b.panel, K, b.o[:], 8)
		for a := 0; a < 6; a++ {
			copy(out[(i+a)*ldo:(i+a)*ldo+m], b.o[8*a:8*a+m])
		}
	}
}

// matmulRangeWide is matmulRange for rows ≥ gemmMinRows on the 6×8
// kernel (useGemm512, K a multiple of 8).
func matmulRangeWide(out, x []float32, rows int, w *wmat, n0, n1 int) {
	K, N := w.k, w.n
	b := getGemmBuf(K)
	for n := n0; n < n1; n += 8 {
		m := min(8, n1-n)
		base := w.off + n*w.ld
		switch {
		case w.f != nil:
			gemmPackF32(b.panel, w.f[base:], w.ld, m, K)
		case !w.fp16:
			gemmPackBF16(b.panel, w.h[base:], w.ld, m, K)
		default:
			for j := 0; j < m; j++ {
				convertRow(b.rows[j*K:(j+1)*K], w.h[base+j*w.ld:], true)
			}
			gemmPackF32(b.panel, b.rows, K, m, K)
		}
		if n+8 < n1 {
			gemmPrefetch(w, n+8, min(8, n1-n-8))
		}
		gemmPanel(out[n:], N, x, rows, K, m, b)
	}
	gemmBufs.Put(b)
}

// qPrefillWide is quantized prefill (qMatMulPrepared's contract, n ≥
// gemmMinRows) on the 6×8 kernel: eight weight rows at a time dequantized
// (qDequant) and packed into a panel. It reports false, doing nothing,
// where the kernel does not run (nor when a test turns the AVX-512 or
// AVX2 kernels off).
func qPrefillWide(out, x []float32, n int, w *qMatrix, r0, r1 int) bool {
	if !useGemm512 || !useAVX512 || !useAVX2 {
		return false
	}
	K := w.Cols
	b := getGemmBuf(K)
	for r := r0; r < r1; r += 8 {
		m := min(8, r1-r)
		for j := 0; j < m; j++ {
			qDequant(b.rows[j*K:(j+1)*K], w, r+j)
		}
		gemmPackF32(b.panel, b.rows, K, m, K)
		gemmPanel(out[r:], w.Rows, x, n, K, m, b)
	}
	gemmBufs.Put(b)
	return true
}

// gemmPackGo is the panel layout in Go: for each k-step of 8, rows
// src[j·ld:], j < m, eight elements each.
func gemmPackGo(p, src []float32, ld, m, K int) {
	for j := 0; j < m; j++ {
		row := src[j*ld : j*ld+K]
		for s := 0; s < K/8; s++ {
			copy(p[64*s+8*j:64*s+8*j+8], row[8*s:8*s+8])
		}
	}
}

// gemm6x8Go is gemm6x8F32AVX512 in Go: each output one eight-lane fused
// accumulator over K, then hsum8 (dot3x4Go's order).
func gemm6x8Go(x []float32, ldx int, p []float32, K int, out []float32, ldo int) {
	for i := 0; i < 6; i++ {
		xi := x[i*ldx : i*ldx+K]
		for j := 0; j < 8; j++ {
			var acc [8]float32
			for s := 0; s < K/8; s++ {
				wj := p[64*s+8*j : 64*s+8*j+8]
				for l := range acc {
					acc[l] = fma32(wj[l], xi[8*s+l], acc[l])
				}
			}
			out[i*ldo+j] = hsum8(&acc)
		}
	}
}
