package cpu

import (
	"math"
	"sync"
)

// wmat is a matrix W[N][K] (row n at off + n*ld) in fp32, bf16 or fp16
// storage; matmul computes out[r][n] = x[r]·W[n].
type wmat struct {
	f        []float32
	h        []uint16
	fp16     bool
	n, k, ld int
	off      int
}

func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func dotBF16(x []float32, w []uint16) float32 {
	w = w[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * math.Float32frombits(uint32(w[i])<<16)
		s1 += x[i+1] * math.Float32frombits(uint32(w[i+1])<<16)
		s2 += x[i+2] * math.Float32frombits(uint32(w[i+2])<<16)
		s3 += x[i+3] * math.Float32frombits(uint32(w[i+3])<<16)
	}
	for ; i < len(x); i++ {
		s0 += x[i] * math.Float32frombits(uint32(w[i])<<16)
	}
	return (s0 + s1) + (s2 + s3)
}

func convertRow(dst []float32, w []uint16, fp16 bool) {
	w = w[:len(dst)]
	if fp16 {
		for i, v := range w {
			dst[i] = f16ToF32(v)
		}
		return
	}
	for i, v := range w {
		dst[i] = math.Float32frombits(uint32(v) << 16)
	}
}

// matmulRange computes columns [n0, n1) of out[rows][N] = x[rows][K] · Wᵀ.
func matmulRange(out, x []float32, rows int, w *wmat, n0, n1 int, scratch []float32) {
	K, N := w.k, w.n
	for n := n0; n < n1; n++ {
		base := w.off + n*w.ld
		var wr []float32
		switch {
		case w.f != nil:
			wr = w.f[base : base+K]
		case rows == 1 && !w.fp16:
			out[n] = dotBF16(x[:K], w.h[base:base+K])
			continue
		default:
			convertRow(scratch[:K], w.h[base:base+K], w.fp16)
			wr = scratch[:K]
		}
		for r := 0; r < rows; r++ {
			out[r*N+n] = dotF32(x[r*K:r*K+K], wr)
		}
	}
}

// matmul computes out[rows][N] = x[rows][K] · Wᵀ using up to threads
// goroutines over blocks of output columns.
func matmul(out, x []float32, rows int, w *wmat, threads int) {
	N, K := w.n, w.k
	work := rows * N * K
	nt := threads
	if work < 1<<16 {
		nt = 1
	}
	if nt > N/16 {
		nt = max(1, N/16)
	}
	if nt <= 1 {
		matmulRange(out, x, rows, w, 0, N, make([]float32, K))
		return
	}
	// Columns in blocks of 64 handed out round-robin through a counter so
	// that uneven cores still finish together.
	const block = 64
	var next int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for t := 0; t < nt; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := make([]float32, K)
			for {
				mu.Lock()
				n0 := int(next)
				next += block
				mu.Unlock()
				if n0 >= N {
					return
				}
				matmulRange(out, x, rows, w, n0, min(n0+block, N), scratch)
			}
		}()
	}
	wg.Wait()
}
