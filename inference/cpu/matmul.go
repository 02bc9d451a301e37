package cpu

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
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
	widenBF16(dst, w)
}

// widenBF16Go sets dst[i] to the float32 of the bfloat16 src[i].
func widenBF16Go(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = math.Float32frombits(uint32(v) << 16)
	}
}

// matmulRange computes columns [n0, n1) of out[rows][N] = x[rows][K] · Wᵀ.
// scratch holds two fp32 rows when half weights are read by several rows.
// prepped says x is gemvPrep's deinterleaved row (rows 1, bf16 weights).
func matmulRange(out, x []float32, rows int, w *wmat, n0, n1 int, scratch []float32, prepped bool) {
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
		if gemv(out, x, w, n0, n1, prepped) {
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
	if useGemm512 && K%8 == 0 && K > 0 && rows >= gemmMinRows {
		matmulRangeWide(out, x, rows, w, n0, n1)
		return
	}
	if float3x4() && K%8 == 0 && K > 0 && n1-n0 >= 4 {
		matmulRange3x4(out, x, rows, w, n0, n1, scratch)
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

// matmulRange3x4 is matmulRange for several rows on the 3×4 kernel: four
// weight rows at a time (half ones widened into scratch once, where they
// stay in L1) against the rows of x three at a time. A last one to three
// weight rows (or x rows) are run with stride 0, repeating one row.
func matmulRange3x4(out, x []float32, rows int, w *wmat, n0, n1 int, scratch []float32) {
	K, N := w.k, w.n
	var o [12]float32
	for n := n0; n < n1; {
		m := 4
		if n+4 > n1 {
			m = 1
		}
		var wr []float32
		ldw := 0
		if w.f != nil {
			wr = w.f[w.off+n*w.ld:]
			if m == 4 {
				ldw = w.ld
			}
		} else {
			for j := 0; j < m; j++ {
				base := w.off + (n+j)*w.ld
				convertRow(scratch[j*K:(j+1)*K], w.h[base:base+K], w.fp16)
			}
			wr = scratch
			if m == 4 {
				ldw = K
			}
		}
		r := 0
		for ; r+3 <= rows; r += 3 {
			dot3x4(x[r*K:], K, wr, ldw, K, &o)
			for i := 0; i < 3; i++ {
				copy(out[(r+i)*N+n:(r+i)*N+n+m], o[4*i:4*i+m])
			}
		}
		for ; r < rows; r++ {
			dot3x4(x[r*K:], 0, wr, ldw, K, &o)
			copy(out[r*N+n:r*N+n+m], o[:m])
		}
		n += m
	}
}

// dot3x4Go is dot3x4F32AVX2's (and dot3x4F32NEON's) order in Go: each of the twelve sums one
// eight-lane fused accumulator over K (a multiple of 8), then hsum8.
func dot3x4Go(x []float32, ldx int, w []float32, ldw, K int, out *[12]float32) {
	for i := 0; i < 3; i++ {
		xi := x[i*ldx : i*ldx+K]
		for j := 0; j < 4; j++ {
			wj := w[j*ldw : j*ldw+K]
			var acc [8]float32
			for c := 0; c < K; c += 8 {
				for l := range acc {
					acc[l] = fma32(wj[c+l], xi[c+l], acc[l])
				}
			}
			out[4*i+j] = hsum8(&acc)
		}
	}
}

// scratchFor is the row-conversion buffer matmulRange needs: only half
// weights read by more than one row are converted to fp32 first.
func scratchFor(rows int, w *wmat) []float32 {
	if w.f != nil || (rows == 1 && !w.fp16) {
		return nil
	}
	if useGemm512 && w.k%8 == 0 && w.k > 0 && rows >= gemmMinRows {
		return nil // matmulRangeWide packs into a gemmBuf
	}
	return make([]float32, 4*w.k)
}

// mmJob is one matmul, shared by its caller and the workers that join
// it; a session keeps one so a step allocates none.
type mmJob struct {
	out, x  []float32
	rows    int
	w       *wmat
	prepped bool          // x is gemvPrep's
	xbuf    []float32     // gemvPrep's room
	q       *qMatrix      // when set, a quantized matmul (w unused)
	qp      qPrep         // q's input, prepared once for all blocks
	block   int           // output columns per block
	next    atomic.Int64  // the next block of output columns
	seq     atomic.Uint64 // the matmul's number, 0 while none is posted
	seats   atomic.Int32  // workers that may still join
	refs    atomic.Int32  // workers inside run
	qs      []qPart       // several quantized matmuls of one input (q unused)
	par     blockRunner   // when set, not a matmul: par's blocks of [0, parN)
	parN    int
	attn    attnArgs // attend's arguments, when par is attention
}

// blockRunner is work other than a matmul shared with the workers
// (parallel): it runs items [i0, i1) of its range.
type blockRunner interface{ runBlocks(i0, i1 int) }

func (j *mmJob) cols() int {
	switch {
	case j.par != nil:
		return j.parN
	case len(j.qs) > 0:
		n := 0
		for _, p := range j.qs {
			n += p.q.Rows
		}
		return n
	case j.q != nil:
		return j.q.Rows
	}
	return j.w.n
}

func (j *mmJob) run() {
	var scratch []float32
	if j.w != nil {
		scratch = scratchFor(j.rows, j.w)
	}
	var sb *[]float32 // this goroutine's room for widened bf16 scales
	if j.q != nil || len(j.qs) > 0 {
		sb = qScaleBufs.Get().(*[]float32)
		defer qScaleBufs.Put(sb)
	}
	N, B := j.cols(), j.block
	for {
		n0 := int(j.next.Add(int64(B)) - int64(B))
		if n0 >= N {
			return
		}
		n1 := min(n0+B, N)
		if j.par != nil {
			j.par.runBlocks(n0, n1)
			continue
		}
		if len(j.qs) > 0 {
			j.runParts(n0, n1, sb)
			continue
		}
		if j.q != nil {
			qMatMulPrepared(j.out, &j.qp, j.rows, j.q, n0, n1, sb)
		} else {
			matmulRange(j.out, j.x, j.rows, j.w, n0, n1, scratch, j.prepped)
		}
	}
}

// The matmul workers: GOMAXPROCS−1 of them, started on first use. A
// matmul is posted in mmPosted; workers that are spinning (for mmSpin
// after their last job) join it at once, parked ones are woken through
// mmWake. A decode step is ~60 matmuls a few µs to a few hundred µs
// apart: the spin keeps the second core on them without a wake-up
// (futex, ~5–20 µs) each, while an idle engine parks after 50 µs.
//
// A worker enters a job by counting itself in refs and then checking
// that the job is still posted under the same number; the caller, done
// with its share, unposts the job and waits for refs to drain before it
// reuses it. Either the worker's check sees the unposting and it leaves
// without touching the job, or the caller's wait sees the worker.
var (
	mmPosted   atomic.Pointer[mmJob]
	mmSeq      atomic.Uint64
	mmSleepers atomic.Int32
	mmWake     chan struct{}
	mmStart    sync.Once
)

const mmSpin = 50 * time.Microsecond

// mmYieldSpins+1 is how many polls (~10 µs) a spinning worker makes
// between yields to other goroutines.
const mmYieldSpins = 1<<12 - 1

// mmWaitSpins is how many times post polls a worker's exit before it
// yields (tens of µs).
const mmWaitSpins = 1 << 14

func mmWorker() {
	var last uint64
	spins := 0
	idle := time.Now()
	for {
		if j := mmPosted.Load(); j != nil {
			if seq := j.seq.Load(); seq != last && seq != 0 {
				last = seq
				if j.seats.Add(-1) >= 0 {
					j.refs.Add(1)
					if mmPosted.Load() == j && j.seq.Load() == seq {
						j.run()
					}
					j.refs.Add(-1)
				}
				idle = time.Now()
				continue
			}
		}
		if spins++; spins&255 != 0 {
			continue // spin on the atomics; the clock every 256 rounds
		}
		if time.Since(idle) < mmSpin {
			if spins&mmYieldSpins == 0 {
				runtime.Gosched() // now and then (a yield takes ~1 µs: a job posted meanwhile waits)
			}
			continue
		}
		mmSleepers.Add(1)
		if j := mmPosted.Load(); j != nil && j.seq.Load() != last {
			mmSleepers.Add(-1)
			continue
		}
		<-mmWake
		mmSleepers.Add(-1)
		idle = time.Now()
	}
}

// matmul computes out[rows][N] = x[rows][K] · Wᵀ on the calling goroutine
// and up to threads-1 workers, over blocks of output columns. job (nil: a
// fresh one) carries the work.
func matmul(job *mmJob, out, x []float32, rows int, w *wmat, threads int) {
	N, K := w.n, w.k
	nt := mmThreads(threads, rows*N*K, N)
	if job == nil {
		job = new(mmJob)
	}
	prepped := false
	if rows == 1 && useAVX2 && w.h != nil {
		if cap(job.xbuf) < K {
			job.xbuf = make([]float32, K)
		}
		x, prepped = gemvPrep(x, w, job.xbuf[:K])
	}
	if nt <= 1 {
		matmulRange(out, x, rows, w, 0, N, scratchFor(rows, w), prepped)
		return
	}
	job.out, job.x, job.rows, job.w, job.q, job.prepped = out, x, rows, w, nil, prepped
	job.post(nt)
}

// qMatMulJob is qMatMul through the workers, its input prepared once in
// job for every block.
func qMatMulJob(job *mmJob, out, x []float32, rows int, w *qMatrix, threads int) {
	nt := mmThreads(threads, rows*w.Rows*w.Cols, w.Rows)
	if nt <= 1 || !qFast(w) {
		qMatMul(out, x, rows, w, nt)
		return
	}
	if job == nil {
		job = new(mmJob)
	}
	job.qp.prepare(x, rows, w)
	job.out, job.x, job.rows, job.w, job.q = out, x, rows, nil, w
	job.post(nt)
}

// mmThreads is how many goroutines share a matmul of work
// multiply-adds and N output columns.
func mmThreads(threads, work, N int) int {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if work < mmParallelMin {
		return 1
	}
	return max(1, min(threads, N/16))
}

// post runs the job on the caller and up to nt-1 workers.
func (job *mmJob) post(nt int) {
	mmStart.Do(func() {
		n := runtime.GOMAXPROCS(0) - 1
		mmWake = make(chan struct{}, max(n, 1))
		for range n {
			go mmWorker()
		}
	})
	if job.par == nil {
		// blocks of 16 to 64 columns (a multiple of 16: a fused run's
		// matrices start on one), about eight per goroutine, so that
		// uneven cores still finish together
		N := job.cols()
		job.block = min(64, max(16, (N/(8*nt)+15)&^15))
	}
	job.next.Store(0)
	job.seats.Store(int32(nt - 1))
	job.seq.Store(mmSeq.Add(1))
	mmPosted.Store(job)
	for i := mmSleepers.Load(); i > 0; i-- {
		select {
		case mmWake <- struct{}{}:
		default:
		}
	}
	job.run()
	mmPosted.CompareAndSwap(job, nil)
	// A worker still in the job is finishing its last block: spin, and
	// yield only if that takes long (its thread was descheduled). The
	// caller may be locked to its thread (Fyne locks the main goroutine,
	// and the command line computes there): every yield then hands the
	// processor to another thread and back, two OS context switches.
	for i := 0; job.refs.Load() != 0; i++ {
		if i >= mmWaitSpins {
			runtime.Gosched()
		}
	}
	job.seq.Store(0)
	job.out, job.x, job.w, job.q, job.par, job.qs = nil, nil, nil, nil, nil, nil
}

// qPart is one matrix of a fused run and its output.
type qPart struct {
	q   *qMatrix
	out []float32
}

// runParts runs rows [n0, n1) of the fused matrices taken end to end
// (sb: room for widened bf16 scales).
func (j *mmJob) runParts(n0, n1 int, sb *[]float32) {
	base := 0
	for _, p := range j.qs {
		a, b := max(n0, base), min(n1, base+p.q.Rows)
		if a < b {
			qMatMulPrepared(p.out, &j.qp, j.rows, p.q, a-base, b-base, sb)
		}
		base += p.q.Rows
	}
}

// qMatMulJobs is qMatMulJob for several matrices of one input and one
// packing (qFast, the same Cols, Bits, GroupSize and biases folded or
// not): the input is prepared once and all their rows are shared out as
// one job. Every row's bits are what qMatMulJob gives.
func qMatMulJobs(job *mmJob, parts []qPart, x []float32, rows int, threads int) {
	N := 0
	for _, p := range parts {
		N += p.q.Rows
	}
	w := parts[0].q
	if job == nil {
		job = new(mmJob)
	}
	job.qp.prepare(x, rows, w)
	job.rows, job.qs = rows, parts
	if nt := mmThreads(threads, rows*N*w.Cols, N); nt > 1 {
		job.post(nt)
		return
	}
	sb := qScaleBufs.Get().(*[]float32)
	job.runParts(0, N, sb)
	qScaleBufs.Put(sb)
	job.qs = nil
}

// parallel runs r over [0, n) in blocks of block items on the caller and
// up to threads−1 workers, as a matmul is shared; job (nil: a fresh one)
// carries it.
func parallel(job *mmJob, r blockRunner, n, block, threads int) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	nt := min(threads, (n+block-1)/block)
	if nt <= 1 {
		r.runBlocks(0, n)
		return
	}
	if job == nil {
		job = new(mmJob)
	}
	job.par, job.parN, job.block = r, n, block
	job.post(nt)
}

// mmParallelMin is the work (rows·N·K) from which a matmul is shared with
// the workers: a decode step's K and V projections (64 K weights) are,
// a posting costs well under a µs while a worker spins.
const mmParallelMin = 1 << 15

func readSumGo(p []uint64) uint64 {
	var a, b, c, d uint64
	i := 0
	for ; i+4 <= len(p); i += 4 {
		q := (*[4]uint64)(p[i : i+4])
		a += q[0]
		b += q[1]
		c += q[2]
		d += q[3]
	}
	for ; i < len(p); i++ {
		a += p[i]
	}
	return a + b + c + d
}

// axpyGo is y += a·x.
func axpyGo(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
