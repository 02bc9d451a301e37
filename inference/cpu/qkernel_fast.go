package cpu

import (
	"math"
	"sync"
)

// The fast quantized kernels (qMatMulRange in use on every build): 4- and
// 8-bit weights with groups of a multiple of 32 elements, read straight
// from the packed words. Decode (one input row) takes four weight rows
// per pass: per group and lane Σ x·Q on the integers Q, times the scale,
// plus the bias times the lane's Σx (computed once per input; adding it
// group by group keeps the bias term's cancellation of the scale term
// small); no weight is dequantized. Prefill (several input rows)
// dequantizes each weight row once per chunk, four at a time, into a
// buffer that stays in L1, and runs the dense fp32 3×4 kernel over the
// chunk's rows. On amd64 with AVX2+FMA these are assembly
// (qkernel_amd64.s, dot_amd64.s); elsewhere, and under -tags purego, the
// Go functions below do the same operations in the same order (eight
// lanes, fused multiply-adds rounded once, the same final sum), so both
// give the same bits.

// qFast reports whether w has a shape the fast kernels take.
func qFast(w *qMatrix) bool {
	return (w.Bits == 4 || w.Bits == 8) && w.GroupSize > 0 && w.GroupSize%32 == 0 &&
		w.Cols%w.GroupSize == 0 && len(w.Packed) >= w.Rows*w.wordsPerRow()
}

// qPrep is an input prepared for the kernels: per group, each block of
// 32 elements reordered into the planes the kernels unpack, then the
// group's eight lane sums (the kernels' Σx). An input row takes
// stride(w) floats.
type qPrep struct {
	xp []float32
	x  []float32 // the input as given (prefill)

	// fast numerics (qMatrix.Int8; prepareI8): the input quantized
	q8     []int8
	d, xsv []float32
	c16    []int16 // the pair kernel's folded bias terms
	// the pair layout's inputs packed four by four for prefill (packPairs)
	pq8  []int8
	pdv  []float32
	pc16 []int16
	pxsv []float32 // 8-bit weights' prefill (packQ8): pq8, pdv and these
	// smmla: pq8 and pdv hold the pair layout's inputs as arm64's SMMLA
	// tile reads them (packPairsSMMLA), not as packPairs lays them out
	smmla bool
}

// qPrepStride is the floats of one prepared input row.
func qPrepStride(w *qMatrix) int { return w.Cols + 8*w.groups() }

// qPlaneScale is 2^(−8p), except for the 8-bit plane 3, which the
// kernels shift down to Q (as Q·2^24 it would not fit an int32).
func qPlaneScale(bits, p int) float32 {
	if bits == 8 && p == 3 {
		return 1
	}
	return float32(math.Ldexp(1, -8*p))
}

// qPlane is plane p of a lane's word: Q·2^(8p) (8-bit plane 3: Q).
func qPlane(y uint32, bits, p int) float32 {
	if bits == 8 && p == 3 {
		return float32(y >> 24)
	}
	return float32(int32(y & ((uint32(1)<<bits - 1) << (8 * p))))
}

// qPerm is the element of a 32-element block held at plane p, lane l.
func qPerm(bits, p, l int) int {
	if bits == 8 {
		return 4*l + p
	}
	if l < 4 {
		return 8*l + 2*p
	}
	return 8*(l-4) + 2*p + 1
}

func (q *qPrep) prepare(x []float32, n int, w *qMatrix) {
	q.x = x[:n*w.Cols]
	if w.Int8 {
		q.prepareI8(x, n, w)
		return
	}
	if n > 1 {
		return // prefill reads x as it is
	}
	K, G, gs, st := w.Cols, w.groups(), w.GroupSize, qPrepStride(w)
	if cap(q.xp) < n*st {
		q.xp = make([]float32, n*st)
	}
	q.xp = q.xp[:n*st]
	tab := &qPrepTabs[0]
	if w.Bits == 8 {
		tab = &qPrepTabs[1]
	}
	perm, scale := &tab.perm, &tab.scale
	mul := float32(1)
	if w.Biases == nil {
		mul = w.BiasMul
	}
	for i := 0; i < n; i++ {
		xi := x[i*K : (i+1)*K]
		d := q.xp[i*st : (i+1)*st]
		if qPrepRow(d, xi, G, gs/32, tab, mul) {
			continue // AVX-512: the same operations, sixteen lanes at a time
		}
		for g := 0; g < G; g++ {
			var sx [8]float32
			for b := g * gs; b < (g+1)*gs; b += 32 {
				src := (*[32]float32)(xi[b : b+32])
				dst := (*[32]float32)(d[:32])
				for j, k := range perm {
					v := src[k&31]
					dst[j] = v * scale[j]
					sx[j&7] += v
				}
				d = d[32:]
			}
			if mul != 1 {
				// folded biases: the kernels add (BiasMul·Σx)·s, the
				// same product as Σx·(BiasMul·s) (a power of two)
				for l := range sx {
					sx[l] *= mul
				}
			}
			copy(d[:8], sx[:])
			d = d[8:]
		}
	}
}

// qPrepTabs are prepare's tables for 4 and 8 bits: the element of a
// block each prepared slot takes (qPerm), and its plane's scale 2^(−8p)
// (qPlaneScale), built once: rebuilding them cost more than the copy.
var qPrepTabs = func() (t [2]qPrepTab) {
	for i, bits := range []int{4, 8} {
		for p := 0; p < 4; p++ {
			for l := 0; l < 8; l++ {
				t[i].perm[8*p+l] = uint32(qPerm(bits, p, l))
				t[i].scale[8*p+l] = qPlaneScale(bits, p)
			}
		}
	}
	return t
}()

// qPrepTab is one bit width's: prepared slot j takes element perm[j] of
// its block, times scale[j].
type qPrepTab struct {
	perm  [32]uint32
	scale [32]float32
}

var qPreps = sync.Pool{New: func() any { return new(qPrep) }}

// qMatMulRangeFast is qMatMulRange for the shapes qFast takes (the
// portable kernel otherwise).
func qMatMulRangeFast(out, x []float32, n int, w *qMatrix, r0, r1 int) {
	if !qFast(w) {
		qMatMulRangeGo(out, x, n, w, r0, r1)
		return
	}
	p := qPreps.Get().(*qPrep)
	p.prepare(x, n, w)
	sb := qScaleBufs.Get().(*[]float32)
	qMatMulPrepared(out, p, n, w, r0, r1, sb)
	qScaleBufs.Put(sb)
	qPreps.Put(p)
}

// qScaleBufs hold bf16 scales widened for the kernels (qDecodeRows).
var qScaleBufs = sync.Pool{New: func() any { return new([]float32) }}

// qScaleRows is how many rows' bf16 scales decode widens at a time: 24
// rows of K = 8192 in groups of 32 are 24 KiB, so they stay in L1; a
// multiple of the kernels' three and eight rows.
const qScaleRows = 24

// qDecodeRows is decode's rows [r0, r1) of out = x · Wᵀ from the
// prepared input xp: eight rows at a time with AVX-512, then four, then
// one. bf16 scales are widened qScaleRows rows at a time into sbuf.
func qDecodeRows(out, xp []float32, w *qMatrix, r0, r1 int, sbuf *[]float32) {
	G, wpr, bpg := w.groups(), w.wordsPerRow(), w.GroupSize/32
	var acc [4]float32
	for r0 < r1 {
		end := r1
		if w.Scales == nil {
			end = min(r1, r0+qScaleRows)
		}
		sc := w.scalesOf(r0*G, end*G, sbuf)
		// with folded biases the prepared Σx carry BiasMul and the
		// kernels read each group's scale twice (once as its bias)
		bi := sc
		if w.Biases != nil {
			bi = w.Biases[r0*G : end*G]
		}
		r := qDotRowsWide(out, xp, w, sc, bi, r0, end) // AVX-512: eight rows at a time
		r = qDecodeRows3(out, xp, w, sc, r0, r, end)
		for ; r+4 <= end; r += 4 {
			o := (r - r0) * G
			qDotRows4(&acc, xp, w.Packed[r*wpr:], wpr, sc[o:], bi[o:], G, G, bpg, w.Bits)
			copy(out[r:r+4], acc[:])
		}
		for ; r < end; r++ { // the last rows one at a time
			o := (r - r0) * G
			qDotRows4(&acc, xp, w.Packed[r*wpr:], 0, sc[o:], bi[o:], 0, G, bpg, w.Bits)
			out[r] = acc[0]
		}
		r0 = end
	}
}

// qDecodeRows3 sets out[r] for rows [r, end) three at a time (the last
// one or two repeated) where the three-row AVX2 kernel applies (4-bit,
// group 32, folded biases), and returns the first row it did not set (r
// where it does not apply). sc is the scales of rows r0….
func qDecodeRows3(out, xp []float32, w *qMatrix, sc []float32, r0, r, end int) int {
	G, wpr, bpg := w.groups(), w.wordsPerRow(), w.GroupSize/32
	var acc [4]float32
	for ; r < end; r += 3 {
		n := min(3, end-r)
		o := (r - r0) * G
		if !qDotRows3(&acc, xp, w.Packed[r*wpr:], wpr*min(1, n-1), wpr*min(2, n-1), sc[o:], G*min(1, n-1), G*min(2, n-1), G, bpg, w.Bits, w.Biases == nil) {
			return r
		}
		copy(out[r:r+n], acc[:n])
	}
	return end
}

// qMatMulPrepared is rows [r0, r1) of out[n][Rows] = x · Wᵀ from x
// prepared in p; sbuf is room for widened bf16 scales (kept by the
// caller across calls).
func qMatMulPrepared(out []float32, p *qPrep, n int, w *qMatrix, r0, r1 int, sbuf *[]float32) {
	K := w.Cols
	if w.Int8 {
		qMatMulI8(out, p, n, w, r0, r1, sbuf)
		return
	}
	if n == 1 {
		qDecodeRows(out, p.xp, w, r0, r1, sbuf)
		return
	}
	if n >= gemmMinRows && qPrefillWide(out, p.x, n, w, r0, r1) {
		return // AVX-512: eight weight rows at a time (gemm.go)
	}
	// prefill: weight rows four at a time, dequantized once for all inputs
	buf := qRowBufs.Get().(*[]float32)
	if cap(*buf) < 4*K {
		*buf = make([]float32, 4*K)
	}
	wr := (*buf)[:4*K]
	var o [12]float32
	for r := r0; r < r1; {
		m, ldw := 4, K
		if r+4 > r1 {
			m, ldw = 1, 0 // the last rows one at a time
		}
		for j := 0; j < m; j++ {
			qDequant(wr[j*K:(j+1)*K], w, r+j)
		}
		i := 0
		for ; i+3 <= n; i += 3 {
			qDot3x4(p.x[i*K:], K, wr, ldw, K, &o)
			for a := 0; a < 3; a++ {
				for j := 0; j < m; j++ {
					out[(i+a)*w.Rows+r+j] = o[4*a+j]
				}
			}
		}
		for ; i < n; i++ { // the last inputs one at a time
			qDot3x4(p.x[i*K:], 0, wr, ldw, K, &o)
			for j := 0; j < m; j++ {
				out[i*w.Rows+r+j] = o[j]
			}
		}
		r += m
	}
	qRowBufs.Put(buf)
}

var qRowBufs = sync.Pool{New: func() any { return new([]float32) }}

// qDequantGo writes row r of w into dst as Q·scale + bias, fused (as
// qDequantQ*AVX2).
func qDequantGo(dst []float32, w *qMatrix, r int) {
	G, wpr, gs := w.groups(), w.wordsPerRow(), w.GroupSize
	per, mask := 32/w.Bits, uint32(1)<<w.Bits-1
	words := w.Packed[r*wpr : (r+1)*wpr]
	dst = dst[:w.Cols]
	for g := 0; g < G; g++ {
		s, b := w.scale(r*G+g), w.bias(r*G+g)
		for k := g * gs; k < (g+1)*gs; k++ {
			q := words[k/per] >> (uint(k%per) * uint(w.Bits)) & mask
			dst[k] = fma32(float32(q), s, b)
		}
	}
}

// fma32 is x·y + z rounded once to float32, as VFMADD does: the product
// is exact in float64 and the sum is rounded there first; when that
// rounding lands on a float32 halfway point it may have rounded the wrong
// way for float32, so the float64's last bit is moved toward the exact
// value (the rounding error, found exactly by a two-sum) before the
// final rounding.
func fma32(x, y, z float32) float32 {
	xy := float64(x) * float64(y)
	zz := float64(z)
	r := float64(xy + zz)
	b := math.Float64bits(r)
	if b&0x1fffffff != 0x10000000 || b>>52&0x7ff == 0x7ff {
		return float32(r)
	}
	// the error of r = xy + zz, exactly (Fast2Sum, larger magnitude first)
	var e float64
	if math.Abs(xy) >= math.Abs(zz) {
		e = float64(xy-r) + zz
	} else {
		e = float64(zz-r) + xy
	}
	switch {
	case e == 0:
	case (e > 0) == (r > 0):
		b++ // toward larger magnitude
	default:
		b--
	}
	return float32(math.Float64frombits(b))
}

// hsum8 sums eight lanes as the assembly does.
func hsum8(a *[8]float32) float32 {
	return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}

// qWords loads one block's words into eight lanes as the kernels do.
func qWords(words []uint32, b, bits int) [8]uint32 {
	if bits == 8 {
		return *(*[8]uint32)(words[8*b : 8*b+8])
	}
	w := (*[4]uint32)(words[4*b : 4*b+4])
	return [8]uint32{w[0], w[1], w[2], w[3], w[0] >> 4, w[1] >> 4, w[2] >> 4, w[3] >> 4}
}

// qDotGo is one weight row's dot with one prepared input, in the order of
// qDotRows4Q*AVX2.
func qDotGo(xp []float32, words []uint32, scales, biases []float32, groups, bpg, bits int) float32 {
	var acc [8]float32
	b := 0
	for g := 0; g < groups; g++ {
		var sq [8]float32
		for blk := range bpg {
			y := qWords(words, b, bits)
			xb := (*[32]float32)(xp[:32])
			for p := 0; p < 4; p++ {
				for l := 0; l < 8; l++ {
					q := qPlane(y[l], bits, p)
					if blk == 0 && p == 0 {
						sq[l] = float32(xb[l] * q) // the group's first product
					} else {
						sq[l] = fma32(xb[8*p+l], q, sq[l])
					}
				}
			}
			xp = xp[32:]
			b++
		}
		sc, bi := scales[g], biases[g]
		for l := range acc {
			acc[l] = fma32(sq[l], sc, acc[l])
		}
		sx := (*[8]float32)(xp[:8])
		for l := range acc {
			acc[l] = fma32(sx[l], bi, acc[l])
		}
		xp = xp[8:]
	}
	return hsum8(&acc)
}

// qDotRows4Go is four weight rows (wstride words and sstride scales and
// biases apart) against one input.
func qDotRows4Go(acc *[4]float32, xp []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits int) {
	for j := 0; j < 4; j++ {
		acc[j] = qDotGo(xp, words[j*wstride:], scales[j*sstride:], biases[j*sstride:], groups, bpg, bits)
	}
}
