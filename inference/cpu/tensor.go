package cpu

import (
	"fmt"
	"math"
)

// ExecuTorch ScalarType numbers the interpreter knows.
const (
	stU8   = 0
	stI8   = 1
	stI16  = 2
	stI32  = 3
	stI64  = 4
	stF16  = 5
	stF32  = 6
	stF64  = 7
	stBool = 11
	stBF16 = 15
	stU32  = 28 // packed quantized weights
)

func isFloatST(st int) bool { return st == stF16 || st == stF32 || st == stF64 || st == stBF16 }

func isIntST(st int) bool {
	return st == stU8 || st == stI8 || st == stI16 || st == stI32 || st == stI64 || st == stBool || st == stU32
}

// tensor is a strided view over one of four storages: f (fp32 values), h
// (bf16 or fp16 bits, per dt; only weights and caches), u (uint32 words:
// packed quantized weights) or i (other integers and bools). dt is the logical ExecuTorch dtype; float tensors computed by the
// interpreter are held in fp32 whatever their logical dtype.
type tensor struct {
	dt      int
	shape   []int
	strides []int
	off     int
	f       []float32
	h       []uint16
	u       []uint32
	i       []int64
}

func (t *tensor) numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

func (t *tensor) isInt() bool { return t.f == nil && t.h == nil }

func contiguousStrides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

func (t *tensor) contiguous() bool {
	acc := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != acc {
			return false
		}
		acc *= t.shape[i]
	}
	return true
}

func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f32ToBF16 rounds to nearest even.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: mant · 2^-24
		v := float32(math.Ldexp(float64(mant), -24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | mant<<13)
}

func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23)&0xff - 127 + 15
	mant := b & 0x7fffff
	switch {
	case int(b>>23)&0xff == 0xff:
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++
	}
	return sign | uint16(r)
}

// halfToF32 converts one element of half storage.
func (t *tensor) halfAt(k int) float32 {
	if t.dt == stF16 {
		return f16ToF32(t.h[k])
	}
	return bf16ToF32(t.h[k])
}

// iterate calls fn with the storage offset of every element in row-major
// order of t's shape.
func iterate(shape, strides []int, off int, fn func(k int)) {
	n := len(shape)
	if n == 0 {
		fn(off)
		return
	}
	for _, d := range shape {
		if d == 0 {
			return
		}
	}
	var buf [8]int
	idx := buf[:]
	if n > len(buf) {
		idx = make([]int, n)
	}
	last := n - 1
	ls, ld := strides[last], shape[last]
	pos := off
	for {
		p := pos
		for j := 0; j < ld; j++ {
			fn(p)
			p += ls
		}
		d := last - 1
		for ; d >= 0; d-- {
			idx[d]++
			pos += strides[d]
			if idx[d] < shape[d] {
				break
			}
			pos -= strides[d] * shape[d]
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// floats returns t's elements as contiguous fp32, copying into dst (grown
// when short) unless t already is a contiguous fp32 tensor.
func (t *tensor) floats(dst []float32) []float32 {
	n := t.numel()
	if t.f != nil && t.contiguous() {
		return t.f[t.off : t.off+n]
	}
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	j := 0
	switch {
	case t.f != nil:
		forRows(t.shape, t.strides, t.off, func(k, n, stride int) {
			gatherF32(dst[j:j+n], t.f, k, stride)
			j += n
		})
	case t.h != nil:
		fp16 := t.dt == stF16
		forRows(t.shape, t.strides, t.off, func(k, n, stride int) {
			gatherHalf(dst[j:j+n], t.h, k, stride, fp16)
			j += n
		})
	case t.u != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst[j] = float32(t.u[k]); j++ })
	default:
		iterate(t.shape, t.strides, t.off, func(k int) { dst[j] = float32(t.i[k]); j++ })
	}
	return dst
}

// ints returns t's elements as contiguous int64 (floats truncate).
func (t *tensor) ints() []int64 {
	n := t.numel()
	if t.i != nil && t.contiguous() {
		return t.i[t.off : t.off+n]
	}
	dst := make([]int64, 0, n)
	switch {
	case t.f != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, int64(t.f[k])) })
	case t.h != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, int64(t.halfAt(k))) })
	case t.u != nil:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, int64(t.u[k])) })
	default:
		iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, t.i[k]) })
	}
	return dst
}

func normAxis(axis, rank int, op string) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("%s: axis %d out of range for rank %d", op, axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// hdrs hands out the tensor headers of one step. The interpreter runs the
// same instructions in the same order every step, so after the first step
// each instruction gets back the header (and shape and stride arrays) it
// had, and a decode step allocates almost nothing. A header's arrays belong
// to it alone: they are only ever filled by copying, never shared, so the
// next step can overwrite them. Nothing may keep a header past its step
// (mutable buffers are copied out, see session.forward).
type hdrs struct {
	ts []*tensor
	n  int
}

func (p *hdrs) reset() { p.n = 0 }

func (p *hdrs) get() *tensor {
	if p.n == len(p.ts) {
		p.ts = append(p.ts, new(tensor))
	}
	t := p.ts[p.n]
	p.n++
	*t = tensor{shape: t.shape[:0], strides: t.strides[:0]}
	return t
}

// setContiguous gives t (fresh from hdrs) a copy of shape and row-major
// strides.
func (t *tensor) setContiguous(shape []int) {
	t.shape = append(t.shape, shape...)
	t.strides = append(t.strides, shape...)
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		t.strides[i] = acc
		acc *= shape[i]
	}
}

// newF is a step tensor over data with a copy of shape.
func (s *session) newF(dt int, shape []int, data []float32) *tensor {
	t := s.hdrs.get()
	t.dt, t.f = dt, data
	t.setContiguous(shape)
	return t
}

// newI is a step integer tensor over data with a copy of shape.
func (s *session) newI(dt int, shape []int, data []int64) *tensor {
	t := s.hdrs.get()
	t.dt, t.i = dt, data
	t.setContiguous(shape)
	return t
}

// view is a step tensor sharing x's storage, with copies of shape and
// strides (nil strides: row-major).
func (s *session) view(x *tensor, shape, strides []int, off int) *tensor {
	t := s.hdrs.get()
	t.dt, t.off, t.f, t.h, t.u, t.i = x.dt, off, x.f, x.h, x.u, x.i
	if strides == nil {
		t.setContiguous(shape)
		return t
	}
	t.shape = append(t.shape, shape...)
	t.strides = append(t.strides, strides...)
	return t
}

// broadcastView is t.broadcastView as a step tensor.
func (s *session) broadcastView(x *tensor, out []int) (*tensor, error) {
	if len(out) < len(x.shape) {
		return nil, fmt.Errorf("cannot broadcast %v to %v", x.shape, out)
	}
	t := s.hdrs.get()
	t.dt, t.off, t.f, t.h, t.u, t.i = x.dt, x.off, x.f, x.h, x.u, x.i
	t.shape = append(t.shape, out...)
	t.strides = append(t.strides, out...)
	lead := len(out) - len(x.shape)
	for i := range out {
		j := i - lead
		switch {
		case j < 0:
			t.strides[i] = 0
		case x.shape[j] == out[i]:
			t.strides[i] = x.strides[j]
		case x.shape[j] == 1:
			t.strides[i] = 0
		default:
			return nil, fmt.Errorf("cannot broadcast %v to %v", x.shape, out)
		}
	}
	return t, nil
}

// tmp returns scratch int slice k holding src, valid until the next use
// of k.
func (s *session) tmp(k int, src ...int) []int {
	s.scratch[k] = append(s.scratch[k][:0], src...)
	return s.scratch[k]
}

// broadcastShapesInto is broadcastShapes into dst's storage.
func broadcastShapesInto(dst, a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := dst[:0]
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out = append(out, da)
		case da == 1:
			out = append(out, db)
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast", a, b)
		}
	}
	return out, nil
}
