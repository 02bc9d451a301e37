package cpu

import (
	"math"
	"runtime"
)

// Typed loops for the element-wise ops of a decode step. The interpreter's
// generic paths call a closure per element (and, for strided views, one
// more per element to gather); at decode sizes (rows of 512–1536) that
// call is most of the cost. Each loop here computes the same float32
// expression as the closure it replaces, element by element in the same
// order, so the results are bit for bit the generic path's
// (TestElementwiseBitIdentical).

// forRows calls fn(k, n, stride) for every innermost row of the strided
// view (shape, strides, off), in row-major order: k is the storage offset
// of the row's first element, n its length, stride the step between its
// elements. Dimensions of size 1 are dropped and adjacent dimensions that
// are contiguous with each other merged first, so a contiguous view is a
// single row. A view without elements calls nothing; a scalar is one row
// of one element.
func forRows(shape, strides []int, off int, fn func(k, n, stride int)) {
	var shb, stb [8]int
	sh, st := shb[:0], stb[:0]
	for i, d := range shape {
		switch {
		case d == 0:
			return
		case d == 1:
			continue
		}
		if m := len(sh); m > 0 && st[m-1] == strides[i]*d {
			sh[m-1] *= d
			st[m-1] = strides[i]
			continue
		}
		sh, st = append(sh, d), append(st, strides[i])
	}
	if len(sh) == 0 {
		fn(off, 1, 1)
		return
	}
	last := len(sh) - 1
	n, ls := sh[last], st[last]
	var idxb [8]int
	idx := idxb[:]
	if last > len(idxb) {
		idx = make([]int, last)
	}
	pos := off
	for {
		fn(pos, n, ls)
		d := last - 1
		for ; d >= 0; d-- {
			idx[d]++
			pos += st[d]
			if idx[d] < sh[d] {
				break
			}
			pos -= st[d] * sh[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// gatherF32 copies the strided row src[k], src[k+stride], … into dst.
func gatherF32(dst, src []float32, k, stride int) {
	if stride == 1 {
		copy(dst, src[k:k+len(dst)])
		return
	}
	for i := range dst {
		dst[i] = src[k]
		k += stride
	}
}

// gatherHalf is gatherF32 from bf16 (fp16 when fp16) storage; the
// conversions are exact.
func gatherHalf(dst []float32, src []uint16, k, stride int, fp16 bool) {
	switch {
	case fp16:
		for i := range dst {
			dst[i] = f16ToF32(src[k])
			k += stride
		}
	case stride == 1:
		widenBF16(dst, src[k:k+len(dst)])
	default:
		for i := range dst {
			dst[i] = bf16ToF32(src[k])
			k += stride
		}
	}
}

// binOp names the float binary ops with typed loops.
type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
	opMax
	opMin
)

// f32 is op on one pair: the generic path's closure.
func (op binOp) f32(a, b float32) float32 {
	switch op {
	case opAdd:
		return a + b
	case opSub:
		return a - b
	case opMul:
		return a * b
	case opDiv:
		return a / b
	case opMax:
		return max(a, b)
	}
	return min(a, b)
}

// i64 is op on integers (nil for division, which the generic path does in
// floats).
func (op binOp) i64() func(a, b int64) int64 {
	switch op {
	case opAdd:
		return func(a, b int64) int64 { return a + b }
	case opSub:
		return func(a, b int64) int64 { return a - b }
	case opMul:
		return func(a, b int64) int64 { return a * b }
	case opMax:
		return func(a, b int64) int64 { return max(a, b) }
	case opMin:
		return func(a, b int64) int64 { return min(a, b) }
	}
	return nil
}

// binVV sets o[i] = x[i] op y[i].
func binVV(op binOp, o, x, y []float32) {
	x, y = x[:len(o)], y[:len(o)]
	switch op {
	case opAdd:
		for i := range o {
			o[i] = x[i] + y[i]
		}
	case opSub:
		for i := range o {
			o[i] = x[i] - y[i]
		}
	case opMul:
		for i := range o {
			o[i] = x[i] * y[i]
		}
	case opDiv:
		for i := range o {
			o[i] = x[i] / y[i]
		}
	case opMax:
		for i := range o {
			o[i] = max(x[i], y[i])
		}
	case opMin:
		for i := range o {
			o[i] = min(x[i], y[i])
		}
	}
}

// binVS sets o[i] = x[i] op y, or y op x[i] when swap.
func binVS(op binOp, o, x []float32, y float32, swap bool) {
	x = x[:len(o)]
	if swap {
		for i := range o {
			o[i] = op.f32(y, x[i])
		}
		return
	}
	switch op {
	case opAdd:
		for i := range o {
			o[i] = x[i] + y
		}
	case opSub:
		for i := range o {
			o[i] = x[i] - y
		}
	case opMul:
		for i := range o {
			o[i] = x[i] * y
		}
	default:
		for i := range o {
			o[i] = op.f32(x[i], y)
		}
	}
}

// binRows computes o = x op y over a contiguous x whose shape ends in y's
// length when y repeats along the leading dimensions (a row vector or a
// scalar broadcast), reading y in place; it reports false otherwise.
func binRows(op binOp, o, x []float32, y *tensor, swap bool) bool {
	if y.f == nil || !y.contiguous() {
		return false
	}
	n := y.numel()
	if n == 0 || len(o)%n != 0 {
		return false
	}
	yv := y.f[y.off : y.off+n]
	if n == 1 {
		binVS(op, o, x, yv[0], swap)
		return true
	}
	for r := 0; r < len(o); r += n {
		if swap {
			binVV(op, o[r:r+n], yv, x[r:r+n])
		} else {
			binVV(op, o[r:r+n], x[r:r+n], yv)
		}
	}
	return true
}

// rowBroadcast reports whether b, broadcast to shape, repeats b's
// elements along leading dimensions only: b's shape, after dropping
// leading 1s, is a suffix of shape.
func rowBroadcast(b, shape []int) bool {
	i := 0
	for i < len(b) && b[i] == 1 {
		i++
	}
	b = b[i:]
	if len(b) > len(shape) {
		return false
	}
	tail := shape[len(shape)-len(b):]
	for j := range b {
		if b[j] != tail[j] {
			return false
		}
	}
	return true
}

// unOp names the float unary ops with typed loops.
type unOp uint8

const (
	opNone unOp = iota
	opSilu
	opNeg
	opSquare
	opRsqrt
	opExp
	opSigmoid
)

// unaryArgs is a typed unary op over o and x, as a blockRunner over
// their elements.
type unaryArgs struct {
	op   unOp
	o, x []float32
}

func (u *unaryArgs) runBlocks(i0, i1 int) { unaryF32(u.op, u.o[i0:i1], u.x[i0:i1]) }

// unaryOn runs u, sharing the ops built on exp over long rows with the
// workers through job (nil: a fresh one): an MLP's SiLU is ~2 ns an
// element. Each element is computed as on one thread (expF32 and the
// division are element-wise, bit for bit the scalar expressions).
func unaryOn(job *mmJob, u *unaryArgs, threads int) {
	n := len(u.o)
	if threads == 1 || n < unaryParallelMin || (u.op != opSilu && u.op != opExp && u.op != opSigmoid) {
		unaryF32(u.op, u.o, u.x)
		return
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	block := (n/(2*threads) + 7) &^ 7 // two blocks a goroutine, whole eights
	parallel(job, u, n, block, threads)
}

// unaryParallelMin is the length from which unaryOn shares an op: a
// prefill chunk's MLP (128 × 1536: 1.85× on two threads), not a decode
// step's (1536: slower shared, the hand-over costs more than half of it).
const unaryParallelMin = 1 << 14

// unaryF32 sets o[i] = op(x[i]), the same expressions as exec's closures
// (o and x must not overlap).
func unaryF32(op unOp, o, x []float32) {
	x = x[:len(o)]
	switch op {
	case opSilu:
		// o = float32(exp(−x)) first (expF32: bit for bit the scalar
		// expression), then x / (1 + o)
		for i, v := range x {
			o[i] = -v
		}
		expF32(o, o)
		siluQuot(o, x)
	case opNeg:
		for i, v := range x {
			o[i] = -v
		}
	case opSquare:
		for i, v := range x {
			o[i] = v * v
		}
	case opRsqrt:
		for i, v := range x {
			o[i] = float32(1 / math.Sqrt(float64(v)))
		}
	case opExp:
		expF32(o, x)
	case opSigmoid:
		for i, v := range x {
			o[i] = -v
		}
		expF32(o, o)
		for i, e := range o {
			o[i] = 1 / (1 + e)
		}
	}
}

// siluQuotGo sets o[i] = x[i] / (1 + o[i]).
func siluQuotGo(o, x []float32) {
	x = x[:len(o)]
	for i, v := range x {
		o[i] = v / (1 + o[i])
	}
}

// wsumRowsGo is wsumRows as calls of axpy, one per row.
func wsumRowsGo(o []float32, v []float32, vh []uint16, ld int, p []float32) {
	var row []float32
	if vh != nil {
		row = make([]float32, len(o))
	}
	for j, a := range p {
		if vh != nil {
			widenBF16(row, vh[j*ld:j*ld+len(o)])
			axpy(o, row, a)
		} else {
			axpy(o, v[j*ld:j*ld+len(o)], a)
		}
	}
}

// maxF32 is max(−Inf, x[0], x[1], …) folded in order with the builtin max,
// computed over four running maxima. Without NaNs the maximum (+0 above
// −0) does not depend on the order; with one the in-order fold is redone,
// so that even the NaN's bits are the same.
func maxF32(x []float32) float32 {
	inf := float32(math.Inf(-1))
	m0, m1, m2, m3 := inf, inf, inf, inf
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0, m1, m2, m3 = max(m0, x[i]), max(m1, x[i+1]), max(m2, x[i+2]), max(m3, x[i+3])
	}
	for ; i < len(x); i++ {
		m0 = max(m0, x[i])
	}
	m := max(max(m0, m1), max(m2, m3))
	if m != m {
		m = inf
		for _, v := range x {
			m = max(m, v)
		}
	}
	return m
}

func mulScalarGo(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

func subScalarGo(x []float32, a float32) {
	for i := range x {
		x[i] -= a
	}
}
