package cpu

import (
	"fmt"
	"math"

	g "etchat/inference/mlxgraph"
)

// value is a value slot: an int or a float scalar.
type value struct {
	i       int64
	f       float64
	isFloat bool
	set     bool
}

// maxElems bounds any tensor the interpreter materialises (256 M elements),
// so a hostile graph cannot ask for unbounded memory.
const maxElems = 1 << 28

func (s *session) get(t g.Tid) (*tensor, error) {
	if int(t) >= len(s.slots) {
		return nil, fmt.Errorf("tensor slot %d out of range (%d slots)", t, len(s.slots))
	}
	x := s.slots[t]
	if x == nil {
		return nil, fmt.Errorf("tensor slot %d read before it was written", t)
	}
	return x, nil
}

func (s *session) set(t g.Tid, x *tensor) error {
	if int(t) >= len(s.slots) {
		return fmt.Errorf("tensor slot %d out of range (%d slots)", t, len(s.slots))
	}
	if int(t) < len(s.m.consts) && !s.init {
		return fmt.Errorf("instruction writes constant slot %d", t)
	}
	s.slots[t] = x
	return nil
}

func (s *session) setVal(v g.Vid, x value) error {
	if int(v) >= len(s.vals) {
		return fmt.Errorf("value slot %d out of range (%d values)", v, len(s.vals))
	}
	x.set = true
	s.vals[v] = x
	return nil
}

func (s *session) val(v g.Vid) (value, error) {
	if int(v) >= len(s.vals) || !s.vals[v].set {
		return value{}, fmt.Errorf("value slot %d read before it was written", v)
	}
	return s.vals[v], nil
}

func clampI32(v int64) int {
	return int(max(min(v, math.MaxInt32), math.MinInt32))
}

func (s *session) resolveInt(x g.IntOrVid) (int, error) {
	if !x.IsVid {
		return clampI32(x.Literal), nil
	}
	v, err := s.val(x.Vid)
	if err != nil {
		return 0, err
	}
	if v.isFloat {
		return clampI32(int64(v.f)), nil
	}
	return clampI32(v.i), nil
}

// resolveInts resolves into scratch slice 3, valid until the next call.
func (s *session) resolveInts(xs []g.IntOrVid) ([]int, error) {
	out := s.tmp(3)
	for _, x := range xs {
		v, err := s.resolveInt(x)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	s.scratch[3] = out
	return out, nil
}

// fl returns t's elements as contiguous fp32 for reading during this
// step: t's own storage when it already is, else a copy in the arena.
func (s *session) fl(t *tensor) []float32 {
	if t.f != nil && t.contiguous() {
		return t.f[t.off : t.off+t.numel()]
	}
	n := t.numel()
	if n > maxElems {
		return t.floats(nil)
	}
	return t.floats(s.arena.alloc(n)[:0])
}

// allocF returns a float buffer of n elements from the session arena.
func (s *session) allocF(n int) ([]float32, error) {
	if n < 0 || n > maxElems {
		return nil, fmt.Errorf("tensor of %d elements is too large", n)
	}
	return s.arena.alloc(n), nil
}

func checkElems(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && n > maxElems/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}

func sign(x int) int {
	if x < 0 {
		return -1
	}
	return 1
}

func (s *session) unary(xt, out g.Tid, fn func(float32) float32) error {
	return s.unaryWith(xt, out, opNone, fn)
}

// unaryOp is unary with op's typed loop.
func (s *session) unaryOp(xt, out g.Tid, op unOp) error { return s.unaryWith(xt, out, op, nil) }

func (s *session) unaryWith(xt, out g.Tid, op unOp, fn func(float32) float32) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	src := s.fl(x)
	o, err := s.allocF(len(src))
	if err != nil {
		return err
	}
	if op != opNone {
		s.un = unaryArgs{op: op, o: o, x: src}
		unaryOn(&s.mm, &s.un, s.threads)
		s.un = unaryArgs{}
	} else {
		for i, v := range src {
			o[i] = fn(v)
		}
	}
	dt := x.dt
	if !isFloatST(dt) {
		dt = stF32
	}
	return s.set(out, s.newF(dt, x.shape, o))
}

func promote(a, b int) int {
	switch {
	case a == stF32 || b == stF32 || a == stF64 || b == stF64:
		return stF32
	case isFloatST(a):
		return a
	case isFloatST(b):
		return b
	case a == stI64 || b == stI64:
		return stI64
	case a == stBool:
		return b
	}
	return a
}

func (s *session) binary(n g.BinaryNode, ff func(a, b float32) float32, fi func(a, b int64) int64) error {
	return s.binaryWith(n, 0, false, ff, fi)
}

// binaryOp is binary with op's typed loops.
func (s *session) binaryOp(n g.BinaryNode, op binOp) error {
	return s.binaryWith(n, op, true, op.f32, op.i64())
}

// binaryWith runs ff (op's typed loops when typed) over a and b broadcast
// together.
func (s *session) binaryWith(n g.BinaryNode, op binOp, typed bool, ff func(a, b float32) float32, fi func(a, b int64) int64) error {
	a, err := s.get(n.A)
	if err != nil {
		return err
	}
	b, err := s.get(n.B)
	if err != nil {
		return err
	}
	shape, err := broadcastShapesInto(s.scratch[0], a.shape, b.shape)
	if err != nil {
		return err
	}
	s.scratch[0] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	dt := promote(a.dt, b.dt)
	if a.isInt() && b.isInt() && fi != nil {
		av, _ := s.broadcastView(a, shape)
		bv, _ := s.broadcastView(b, shape)
		x, y := av.ints(), bv.ints()
		o := make([]int64, cnt)
		for i := range o {
			o[i] = fi(x[i], y[i])
		}
		return s.set(n.Out, s.newI(dt, shape, o))
	}
	if !isFloatST(dt) {
		dt = stF32
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	// Fast paths: equal contiguous shapes; typed, also one operand
	// contiguous and the other repeated along its leading dimensions.
	aFull := a.f != nil && a.contiguous() && a.numel() == cnt
	bFull := b.f != nil && b.contiguous() && b.numel() == cnt
	if aFull && bFull {
		x, y := a.f[a.off:a.off+cnt], b.f[b.off:b.off+cnt]
		if typed {
			binVV(op, o, x, y)
		} else {
			for i := range o {
				o[i] = ff(x[i], y[i])
			}
		}
		return s.set(n.Out, s.newF(dt, shape, o))
	}
	if typed && aFull && rowBroadcast(b.shape, shape) && binRows(op, o, a.f[a.off:a.off+cnt], b, false) {
		return s.set(n.Out, s.newF(dt, shape, o))
	}
	if typed && bFull && rowBroadcast(a.shape, shape) && binRows(op, o, b.f[b.off:b.off+cnt], a, true) {
		return s.set(n.Out, s.newF(dt, shape, o))
	}
	av, _ := s.broadcastView(a, shape)
	bv, _ := s.broadcastView(b, shape)
	x := s.fl(av)
	y := s.fl(bv)
	if typed {
		binVV(op, o, x, y)
		return s.set(n.Out, s.newF(dt, shape, o))
	}
	for i := range o {
		o[i] = ff(x[i], y[i])
	}
	return s.set(n.Out, s.newF(dt, shape, o))
}

func (s *session) compare(n g.BinaryNode, pred func(c int) bool) error {
	a, err := s.get(n.A)
	if err != nil {
		return err
	}
	b, err := s.get(n.B)
	if err != nil {
		return err
	}
	shape, err := broadcastShapesInto(s.scratch[0], a.shape, b.shape)
	if err != nil {
		return err
	}
	s.scratch[0] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	av, _ := s.broadcastView(a, shape)
	bv, _ := s.broadcastView(b, shape)
	o := make([]int64, cnt)
	cmp := func(x, y float64) int {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	if a.isInt() && b.isInt() {
		x, y := av.ints(), bv.ints()
		for i := range o {
			if pred(cmp(float64(x[i]), float64(y[i]))) {
				o[i] = 1
			}
		}
	} else {
		x, y := s.fl(av), s.fl(bv)
		for i := range o {
			if pred(cmp(float64(x[i]), float64(y[i]))) {
				o[i] = 1
			}
		}
	}
	return s.set(n.Out, s.newI(stBool, shape, o))
}

func (s *session) intOp(n g.IntBinaryNode, name string, fn func(a, b int64) (int64, error)) error {
	a, err := s.resolveInt(n.A)
	if err != nil {
		return err
	}
	b, err := s.resolveInt(n.B)
	if err != nil {
		return err
	}
	r, err := fn(int64(a), int64(b))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if r > math.MaxInt32 || r < math.MinInt32 {
		return fmt.Errorf("%s: overflow", name)
	}
	return s.setVal(n.Out, value{i: r})
}

func (s *session) take(n *g.TakeNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(n.Axis), len(x.shape), "Take")
	if err != nil {
		return err
	}
	dim := x.shape[ax]
	if n.Index.Kind != g.KindTid {
		var idx int
		if n.Index.Kind == g.KindLiteral {
			idx = clampI32(n.Index.Literal)
		} else {
			v, err := s.val(n.Index.Vid)
			if err != nil {
				return err
			}
			idx = clampI32(v.i)
		}
		if idx < -dim || idx >= dim {
			return fmt.Errorf("take: index %d out of range for axis of size %d", idx, dim)
		}
		if idx < 0 {
			idx += dim
		}
		shape := append(s.tmp(0, x.shape[:ax]...), x.shape[ax+1:]...)
		st := append(s.tmp(1, x.strides[:ax]...), x.strides[ax+1:]...)
		s.scratch[0], s.scratch[1] = shape, st
		return s.set(n.Out, s.view(x, shape, st, x.off+idx*x.strides[ax]))
	}
	it, err := s.get(n.Index.Tid)
	if err != nil {
		return err
	}
	if !it.isInt() {
		return fmt.Errorf("take: float index tensor")
	}
	idx := it.ints()
	outer, inner := 1, 1
	for _, d := range x.shape[:ax] {
		outer *= d
	}
	for _, d := range x.shape[ax+1:] {
		inner *= d
	}
	shape := append(append(s.tmp(0, x.shape[:ax]...), it.shape...), x.shape[ax+1:]...)
	s.scratch[0] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	for _, v := range idx {
		if v < int64(-dim) || v >= int64(dim) {
			return fmt.Errorf("take: index %d out of range for axis of size %d (token id outside the vocabulary?)", v, dim)
		}
	}
	if x.u != nil {
		// packed quantized rows (an embedding's words)
		xs := x.uints()
		o := make([]uint32, 0, cnt)
		for oi := 0; oi < outer; oi++ {
			for _, v := range idx {
				if v < 0 {
					v += int64(dim)
				}
				b := (oi*dim + int(v)) * inner
				o = append(o, xs[b:b+inner]...)
			}
		}
		t := s.hdrs.get()
		t.dt, t.u = x.dt, o
		t.setContiguous(shape)
		return s.set(n.Out, t)
	}
	if x.isInt() {
		xs := x.ints()
		o := make([]int64, 0, cnt)
		for oi := 0; oi < outer; oi++ {
			for _, v := range idx {
				if v < 0 {
					v += int64(dim)
				}
				b := (oi*dim + int(v)) * inner
				o = append(o, xs[b:b+inner]...)
			}
		}
		return s.set(n.Out, s.newI(x.dt, shape, o))
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	contig := x.contiguous()
	var xs []float32
	if !contig {
		xs = s.fl(x)
	}
	p := 0
	for oi := 0; oi < outer; oi++ {
		for _, v := range idx {
			if v < 0 {
				v += int64(dim)
			}
			b := (oi*dim + int(v)) * inner
			dst := o[p : p+inner]
			switch {
			case !contig:
				copy(dst, xs[b:b+inner])
			case x.f != nil:
				copy(dst, x.f[x.off+b:x.off+b+inner])
			default:
				convertRow(dst, x.h[x.off+b:x.off+b+inner], x.dt == stF16)
			}
			p += inner
		}
	}
	dt := x.dt
	return s.set(n.Out, s.newF(dt, shape, o))
}

func (s *session) rmsNorm(n *g.RMSNormNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if len(x.shape) == 0 {
		return fmt.Errorf("RMSNorm of a scalar")
	}
	H := x.shape[len(x.shape)-1]
	var w []float32
	if n.Weight != nil {
		wt, err := s.get(*n.Weight)
		if err != nil {
			return err
		}
		if wt.numel() != H {
			return fmt.Errorf("RMSNorm: weight of shape %v for rows of %d", wt.shape, H)
		}
		w = s.fl(wt)
	}
	src := s.fl(x)
	o, err := s.allocF(len(src))
	if err != nil {
		return err
	}
	for r := 0; r+H <= len(src); r += H {
		row := src[r : r+H]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(ss/float64(H)+float64(n.Eps)))
		dst := o[r : r+H]
		if w != nil {
			for i, v := range row {
				dst[i] = v * inv * w[i]
			}
		} else {
			for i, v := range row {
				dst[i] = v * inv
			}
		}
	}
	dt := x.dt
	if !isFloatST(dt) {
		dt = stF32
	}
	return s.set(n.Out, s.newF(dt, x.shape, o))
}

func (s *session) reshape(n *g.ReshapeNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	shape, err := s.resolveInts(n.Shape)
	if err != nil {
		return err
	}
	total := x.numel()
	neg, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && neg < 0:
			neg = i
		case d < 0:
			return fmt.Errorf("reshape: bad shape %v", shape)
		default:
			known *= d
			if known > maxElems {
				return fmt.Errorf("reshape: shape %v too large", shape)
			}
		}
	}
	if neg >= 0 {
		if known == 0 || total%known != 0 {
			return fmt.Errorf("reshape: cannot infer -1 in %v from %d elements", shape, total)
		}
		shape[neg] = total / known
	} else if known != total {
		return fmt.Errorf("reshape: %v (%d elements) to %v", x.shape, total, shape)
	}
	if x.contiguous() {
		return s.set(n.Out, s.view(x, shape, nil, x.off))
	}
	if x.isInt() {
		return s.set(n.Out, s.newI(x.dt, shape, x.ints()))
	}
	o, err := s.allocF(total)
	if err != nil {
		return err
	}
	copy(o, x.floats(o[:0]))
	return s.set(n.Out, s.newF(x.dt, shape, o))
}

func (s *session) slice(n *g.SliceNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	axv, err := s.resolveInt(n.Axis)
	if err != nil {
		return err
	}
	ax, err := normAxis(axv, len(x.shape), "Slice")
	if err != nil {
		return err
	}
	start, err := s.resolveInt(n.Start)
	if err != nil {
		return err
	}
	stop, err := s.resolveInt(n.Stop)
	if err != nil {
		return err
	}
	if n.Step <= 0 {
		return fmt.Errorf("slice: step %d not supported", n.Step)
	}
	dim := x.shape[ax]
	start, stop = clampIdx(start, dim), clampIdx(stop, dim)
	length := 0
	if stop > start {
		length = (stop - start + int(n.Step) - 1) / int(n.Step)
	}
	shape, st := s.tmp(0, x.shape...), s.tmp(1, x.strides...)
	shape[ax] = length
	st[ax] *= int(n.Step)
	return s.set(n.Out, s.view(x, shape, st, x.off+start*x.strides[ax]))
}

func clampIdx(i, dim int) int {
	if i < 0 {
		i += dim
	}
	return max(0, min(i, dim))
}

func (s *session) asType(xt, out g.Tid, st int) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	shape := x.shape
	switch {
	case isFloatST(st):
		o, err := s.allocF(x.numel())
		if err != nil {
			return err
		}
		copy(o, x.floats(o[:0]))
		return s.set(out, s.newF(st, shape, o))
	case st == stBool:
		v := s.fl(x)
		o := make([]int64, len(v))
		for i := range v {
			if v[i] != 0 {
				o[i] = 1
			}
		}
		return s.set(out, s.newI(st, shape, o))
	case isIntST(st):
		return s.set(out, s.newI(st, shape, append([]int64(nil), x.ints()...)))
	}
	return fmt.Errorf("AsType: dtype %d not supported", st)
}

func (s *session) concat(n *g.ConcatenateNode) error {
	if len(n.Tensors) == 0 {
		return fmt.Errorf("concatenate of nothing")
	}
	ts := s.cat[:0]
	for _, id := range n.Tensors {
		t, err := s.get(id)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	s.cat = ts
	rank := len(ts[0].shape)
	ax, err := normAxis(int(n.Axis), rank, "Concatenate")
	if err != nil {
		return err
	}
	shape := s.tmp(0, ts[0].shape...)
	shape[ax] = 0
	allInt := true
	for _, t := range ts {
		if len(t.shape) != rank {
			return fmt.Errorf("concatenate: ranks differ")
		}
		for d := range shape {
			if d != ax && t.shape[d] != shape[d] {
				return fmt.Errorf("concatenate: shapes %v and %v differ off axis %d", ts[0].shape, t.shape, ax)
			}
		}
		shape[ax] += t.shape[ax]
		allInt = allInt && t.isInt()
	}
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	outer := 1
	for _, d := range shape[:ax] {
		outer *= d
	}
	inner := 1
	for _, d := range shape[ax+1:] {
		inner *= d
	}
	if allInt {
		o := make([]int64, cnt)
		p := 0
		for _, t := range ts {
			v := t.ints()
			c := t.shape[ax] * inner
			for oi := 0; oi < outer; oi++ {
				copy(o[oi*shape[ax]*inner+p:], v[oi*c:oi*c+c])
			}
			p += c
		}
		return s.set(n.Out, s.newI(ts[0].dt, shape, o))
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	p := 0
	dt := ts[0].dt
	for _, t := range ts {
		v := s.fl(t)
		c := t.shape[ax] * inner
		for oi := 0; oi < outer; oi++ {
			copy(o[oi*shape[ax]*inner+p:], v[oi*c:oi*c+c])
		}
		p += c
		dt = promote(dt, t.dt)
	}
	return s.set(n.Out, s.newF(dt, shape, o))
}

func (s *session) sum(n *g.SumNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	rank := len(x.shape)
	red := make([]bool, rank)
	if len(n.Axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range n.Axes {
		ax, err := normAxis(int(a), rank, "Sum")
		if err != nil {
			return err
		}
		red[ax] = true
	}
	var shape, kept []int
	for d := 0; d < rank; d++ {
		switch {
		case !red[d]:
			shape = append(shape, x.shape[d])
			kept = append(kept, x.shape[d])
		case n.KeepDims:
			shape = append(shape, 1)
		}
	}
	ks := contiguousStrides(kept)
	ostr := make([]int, rank)
	k := 0
	for d := 0; d < rank; d++ {
		if !red[d] {
			ostr[d] = ks[k]
			k++
		}
	}
	cnt := 1
	for _, d := range kept {
		cnt *= d
	}
	if shape == nil {
		shape = []int{}
	}
	if x.isInt() {
		v := x.ints()
		o := make([]int64, cnt)
		j := 0
		iterate(x.shape, ostr, 0, func(p int) { o[p] += v[j]; j++ })
		return s.set(n.Out, s.newI(stI64, shape, o))
	}
	v := s.fl(x)
	acc := make([]float64, cnt)
	j := 0
	iterate(x.shape, ostr, 0, func(p int) { acc[p] += float64(v[j]); j++ })
	o, _ := s.allocF(cnt)
	for i := range o {
		o[i] = float32(acc[i])
	}
	return s.set(n.Out, s.newF(x.dt, shape, o))
}

// sliceUpdate writes update into dst[start:stop] along axis. The result is a
// fresh tensor (dst may be viewed elsewhere); when dst is a mutable buffer
// the session keeps the result as the buffer's new value.
func (s *session) sliceUpdate(n *g.SliceUpdateNode) error {
	dst, err := s.get(n.Dst)
	if err != nil {
		return err
	}
	upd, err := s.get(n.Update)
	if err != nil {
		return err
	}
	axv, err := s.resolveInt(n.Axis)
	if err != nil {
		return err
	}
	ax, err := normAxis(axv, len(dst.shape), "SliceUpdate")
	if err != nil {
		return err
	}
	start, err := s.resolveInt(n.Start)
	if err != nil {
		return err
	}
	stop, err := s.resolveInt(n.Stop)
	if err != nil {
		return err
	}
	if n.Step != 1 {
		return fmt.Errorf("SliceUpdate: step %d not supported", n.Step)
	}
	dim := dst.shape[ax]
	start, stop = clampIdx(start, dim), clampIdx(stop, dim)
	if stop <= start {
		return s.set(n.Out, dst)
	}
	region := s.tmp(0, dst.shape...)
	region[ax] = stop - start
	uv, err := s.broadcastView(upd, region)
	if err != nil {
		return fmt.Errorf("SliceUpdate: update %v into region %v: %w", upd.shape, region, err)
	}
	if dst.isInt() {
		return fmt.Errorf("SliceUpdate of integer tensors not supported")
	}
	cnt := dst.numel()
	// Owned, as it may become a mutable buffer: the one this slot's
	// buffer replaced last step when there is one, else fresh.
	o := s.spare[n.Out]
	delete(s.spare, n.Out)
	if len(o) != cnt || (len(dst.f) > 0 && &o[0] == &dst.f[0]) {
		o = make([]float32, cnt)
	}
	copy(o, dst.floats(o[:0]))
	u := s.fl(uv)
	ostr := s.tmp(1, dst.shape...)
	for i, acc := len(ostr)-1, 1; i >= 0; i-- {
		ostr[i] = acc
		acc *= dst.shape[i]
	}
	j := 0
	iterate(region, ostr, start*ostr[ax], func(p int) { o[p] = u[j]; j++ })
	return s.set(n.Out, s.newF(dst.dt, dst.shape, o))
}
