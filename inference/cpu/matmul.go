package cpu

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
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

func dotF32Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x := (*[8]float32)(a[i : i+8])
		y := (*[8]float32)(b[i : i+8])
		s0 += x[0]*y[0] + x[4]*y[4]
		s1 += x[1]*y[1] + x[5]*y[5]
		s2 += x[2]*y[2] + x[6]*y[6]
		s3 += x[3]*y[3] + x[7]*y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot4 is four dot products of w with the rows x[0:K], x[K:2K], … x[3K:4K].
func dot4Go(x []float32, K int, w []float32) (float32, float32, float32, float32) {
	x0, x1, x2, x3 := x[:K], x[K:2*K], x[2*K:3*K], x[3*K:4*K]
	w = w[:K]
	var s0, s1, s2, s3 float32
	for i, v := range w {
		s0 += x0[i] * v
		s1 += x1[i] * v
		s2 += x2[i] * v
		s3 += x3[i] * v
	}
	return s0, s1, s2, s3
}

// bf16 widens a bfloat16 to float32.
func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func dotBF16Go(x []float32, w []uint16) float32 {
	w = w[:len(x)]
	if len(w) >= 8 && uintptr(unsafe.Pointer(&w[0]))%4 == 0 {
		return dotBF16Pairs(x, unsafe.Slice((*uint32)(unsafe.Pointer(&w[0])), len(w)/2), w)
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		a := (*[8]float32)(x[i : i+8])
		b := (*[8]uint16)(w[i : i+8])
		s0 += a[0]*bf16(b[0]) + a[4]*bf16(b[4])
		s1 += a[1]*bf16(b[1]) + a[5]*bf16(b[5])
		s2 += a[2]*bf16(b[2]) + a[6]*bf16(b[6])
		s3 += a[3]*bf16(b[3]) + a[7]*bf16(b[7])
	}
	for ; i < len(x); i++ {
		s0 += x[i] * bf16(w[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dotBF16Pairs reads the bf16 weights two at a time (little-endian: the
// low half is the even element).
func dotBF16Pairs(x []float32, w []uint32, w16 []uint16) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		a := (*[8]float32)(x[2*i : 2*i+8])
		b := (*[4]uint32)(w[i : i+4])
		s0 += a[0]*math.Float32frombits(b[0]<<16) + a[4]*math.Float32frombits(b[2]<<16)
		s1 += a[1]*math.Float32frombits(b[0]&0xffff0000) + a[5]*math.Float32frombits(b[2]&0xffff0000)
		s2 += a[2]*math.Float32frombits(b[1]<<16) + a[6]*math.Float32frombits(b[3]<<16)
		s3 += a[3]*math.Float32frombits(b[1]&0xffff0000) + a[7]*math.Float32frombits(b[3]&0xffff0000)
	}
	for ; i < len(w); i++ {
		s0 += x[2*i]*math.Float32frombits(w[i]<<16) + x[2*i+1]*math.Float32frombits(w[i]&0xffff0000)
	}
	for j := 2 * len(w); j < len(x); j++ { // odd tail element
		s0 += x[j] * bf16(w16[j])
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
// scratch holds two fp32 rows when half weights are read by several rows.
func matmulRange(out, x []float32, rows int, w *wmat, n0, n1 int, scratch []float32) {
	K, N := w.k, w.n
	row := func(n int, buf []float32) []float32 {
		base := w.off + n*w.ld
		if w.f != nil {
			return w.f[base : base+K]
		}
		convertRow(buf[:K], w.h[base:base+K], w.fp16)
		return buf[:K]
	}
	if rows == 1 {
		if gemv(out, x, w, n0, n1) {
			return
		}
		for n := n0; n < n1; n++ {
			base := w.off + n*w.ld
			switch {
			case w.f != nil:
				out[n] = dotF32(x[:K], w.f[base:base+K])
			case !w.fp16:
				out[n] = dotBF16(x[:K], w.h[base:base+K])
			default:
				out[n] = dotF32(x[:K], row(n, scratch))
			}
		}
		return
	}
	var acc [8]float32
	n := n0
	for ; n+2 <= n1; n += 2 {
		w0 := row(n, scratch)
		var w1 []float32
		if w.f == nil {
			w1 = row(n+1, scratch[K:])
		} else {
			w1 = row(n+1, nil)
		}
		r := 0
		for ; r+4 <= rows; r += 4 {
			dot4x2(x[r*K:], K, w0, w1, &acc)
			for i := 0; i < 4; i++ {
				out[(r+i)*N+n] = acc[2*i]
				out[(r+i)*N+n+1] = acc[2*i+1]
			}
		}
		for ; r < rows; r++ {
			out[r*N+n] = dotF32(x[r*K:r*K+K], w0)
			out[r*N+n+1] = dotF32(x[r*K:r*K+K], w1)
		}
	}
	for ; n < n1; n++ {
		wr := row(n, scratch)
		r := 0
		for ; r+4 <= rows; r += 4 {
			a, b, c, d := dot4(x[r*K:], K, wr)
			out[r*N+n], out[(r+1)*N+n], out[(r+2)*N+n], out[(r+3)*N+n] = a, b, c, d
		}
		for ; r < rows; r++ {
			out[r*N+n] = dotF32(x[r*K:r*K+K], wr)
		}
	}
}

// scratchFor is the row-conversion buffer matmulRange needs: only half
// weights read by more than one row are converted to fp32 first.
func scratchFor(rows int, w *wmat) []float32 {
	if w.f != nil || (rows == 1 && !w.fp16) {
		return nil
	}
	return make([]float32, 2*w.k)
}

// mmJob is one matmul, shared by its caller and the idle workers that
// join it; a session keeps one so a step allocates none.
type mmJob struct {
	out, x []float32
	rows   int
	w      *wmat
	next   atomic.Int64 // the next block of output columns
	wg     sync.WaitGroup
}

// mmBlock: columns are handed out in blocks of 64 through a counter so
// that uneven cores still finish together.
const mmBlock = 64

func (j *mmJob) run() {
	scratch := scratchFor(j.rows, j.w)
	N := j.w.n
	for {
		n0 := int(j.next.Add(mmBlock) - mmBlock)
		if n0 >= N {
			return
		}
		matmulRange(j.out, j.x, j.rows, j.w, n0, min(n0+mmBlock, N), scratch)
	}
}

// The matmul workers: started once, one per CPU, each waiting for a job
// to join. A matmul hands its job only to workers idle at that moment and
// works on it itself, so it never waits for a busy worker.
var (
	mmQueue = make(chan *mmJob)
	mmStart sync.Once
)

func mmWorker() {
	for j := range mmQueue {
		j.run()
		j.wg.Done()
	}
}

// matmul computes out[rows][N] = x[rows][K] · Wᵀ on the calling goroutine
// and up to threads-1 idle workers, over blocks of output columns. job
// (nil: a fresh one) carries the work.
func matmul(job *mmJob, out, x []float32, rows int, w *wmat, threads int) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	N, K := w.n, w.k
	work := rows * N * K
	nt := threads
	if work < mmParallelMin {
		nt = 1
	}
	if nt > N/16 {
		nt = max(1, N/16)
	}
	if nt <= 1 {
		matmulRange(out, x, rows, w, 0, N, scratchFor(rows, w))
		return
	}
	mmStart.Do(func() {
		for range runtime.NumCPU() {
			go mmWorker()
		}
	})
	if job == nil {
		job = new(mmJob)
	}
	job.out, job.x, job.rows, job.w = out, x, rows, w
	job.next.Store(0)
	for t := 1; t < nt; t++ {
		job.wg.Add(1)
		select {
		case mmQueue <- job:
		default: // none idle: the others do its share
			job.wg.Done()
		}
	}
	job.run()
	job.wg.Wait()
	job.out, job.x, job.w = nil, nil, nil
}

// mmParallelMin is the work (rows·N·K) from which a matmul is shared with
// the workers: below it (a decode step's K and V projections, 64 K
// weights; Q and O, 256 K) handing the job over costs more than the
// second core saves.
const mmParallelMin = 1 << 19
