package cpu

import (
	"fmt"
	"math"
	"slices"
	"sort"

	g "etchat/inference/mlxgraph"
)

// The rest of the MLX op set that ExecuTorch's MLX partitioner can emit
// for the decoder-only architectures its LLM export supports: element-wise
// math, comparisons and logic, reductions, softmax, layer norm, RoPE
// (mlx::fast::rope, from the custom-components export), shape ops. Each
// follows MLX's definition; none is on a hot path of the tested exports.
// exec.go sorts them into op families; kinds no family runs are refused
// at load (see supported).

func f64(fn func(float64) float64) func(float32) float32 {
	return func(x float32) float32 { return float32(fn(float64(x))) }
}

func sum64(v []float32) float64 {
	var acc float64
	for _, x := range v {
		acc += float64(x)
	}
	return acc
}

func variance(ddof int, sqrt bool) func([]float32) float32 {
	return func(v []float32) float32 {
		m := sum64(v) / float64(len(v))
		var acc float64
		for _, x := range v {
			d := float64(x) - m
			acc += d * d
		}
		r := acc / float64(len(v)-ddof)
		if sqrt {
			r = math.Sqrt(r)
		}
		return float32(r)
	}
}

func ipow(a, b int64) int64 {
	if b < 0 {
		return 0
	}
	r := int64(1)
	for ; b > 0; b-- {
		r *= a
	}
	return r
}

func floorDiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (s *session) floatOrVid(v g.FloatOrVid) (float64, error) {
	if !v.IsVid {
		return v.Literal, nil
	}
	x, err := s.val(v.Vid)
	if err != nil {
		return 0, err
	}
	if x.isFloat {
		return x.f, nil
	}
	return float64(x.i), nil
}

// mapBool is an element-wise predicate with a bool result.
func (s *session) mapBool(xt, out g.Tid, pred func(float64) bool) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	o := make([]int64, x.numel())
	if x.isInt() {
		for i, v := range x.ints() {
			if pred(float64(v)) {
				o[i] = 1
			}
		}
	} else {
		for i, v := range s.fl(x) {
			if pred(float64(v)) {
				o[i] = 1
			}
		}
	}
	return s.set(out, s.newI(stBool, x.shape, o))
}

// operands broadcasts a and b to one shape (fresh slices, safe to keep).
func (s *session) operands(n g.BinaryNode) (a, b *tensor, shape []int, err error) {
	if a, err = s.get(n.A); err != nil {
		return
	}
	if b, err = s.get(n.B); err != nil {
		return
	}
	if shape, err = broadcastShapesInto(nil, a.shape, b.shape); err != nil {
		return
	}
	if _, err = checkElems(shape); err != nil {
		return
	}
	if a, err = s.broadcastView(a, shape); err != nil {
		return
	}
	b, err = s.broadcastView(b, shape)
	return
}

func (s *session) logical(n g.BinaryNode, fn func(a, b bool) bool) error {
	a, b, shape, err := s.operands(n)
	if err != nil {
		return err
	}
	x, y := a.floats(nil), b.floats(nil)
	o := make([]int64, len(x))
	for i := range o {
		if fn(x[i] != 0, y[i] != 0) {
			o[i] = 1
		}
	}
	return s.set(n.Out, s.newI(stBool, shape, o))
}

func (s *session) bitwise(n g.BinaryNode, fn func(a, b int64) int64) error {
	a, b, shape, err := s.operands(n)
	if err != nil {
		return err
	}
	if !a.isInt() || !b.isInt() {
		return fmt.Errorf("bitwise op on float tensors")
	}
	x, y := a.ints(), b.ints()
	o := make([]int64, len(x))
	for i := range o {
		o[i] = fn(x[i], y[i])
	}
	dt := promote(a.dt, b.dt)
	if a.dt == stBool && b.dt == stBool {
		dt = stBool
	}
	return s.set(n.Out, s.newI(dt, shape, o))
}

// groups lays x out with the reduced axes last: the result holds, for
// every element of the kept shape in row-major order, its R reduced
// values. outShape is the kept shape (with 1s for reduced axes when
// keep).
func (s *session) groups(x *tensor, axes []int32, keep bool, name string) (vals []float32, R int, outShape []int, err error) {
	rank := len(x.shape)
	red := make([]bool, rank)
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		ax, err := normAxis(int(a), rank, name)
		if err != nil {
			return nil, 0, nil, err
		}
		red[ax] = true
	}
	var shape, strides, rs, rst []int
	outShape = []int{}
	R = 1
	for d := 0; d < rank; d++ {
		if red[d] {
			rs, rst = append(rs, x.shape[d]), append(rst, x.strides[d])
			R *= x.shape[d]
			if keep {
				outShape = append(outShape, 1)
			}
		} else {
			shape, strides = append(shape, x.shape[d]), append(strides, x.strides[d])
			outShape = append(outShape, x.shape[d])
		}
	}
	if R == 0 {
		return nil, 0, nil, fmt.Errorf("%s over an empty axis", name)
	}
	v := &tensor{dt: x.dt, shape: append(shape, rs...), strides: append(strides, rst...), off: x.off, f: x.f, h: x.h, u: x.u, i: x.i}
	return v.floats(nil), R, outShape, nil
}

func (s *session) reduceF(n g.ReduceNode, name string, fn func([]float32) float32) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	vals, R, shape, err := s.groups(x, n.Axes, n.KeepDims, name)
	if err != nil {
		return err
	}
	o, err := s.allocF(len(vals) / R)
	if err != nil {
		return err
	}
	for i := range o {
		o[i] = fn(vals[i*R : (i+1)*R])
	}
	dt := x.dt
	if !isFloatST(dt) {
		if name == "Max" || name == "Min" || name == "Prod" {
			io := make([]int64, len(o))
			for i, v := range o {
				io[i] = int64(v)
			}
			return s.set(n.Out, s.newI(dt, shape, io))
		}
		dt = stF32
	}
	return s.set(n.Out, s.newF(dt, shape, o))
}

func (s *session) reduceB(n g.ReduceNode, name string, fn func([]float32) bool) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	vals, R, shape, err := s.groups(x, n.Axes, n.KeepDims, name)
	if err != nil {
		return err
	}
	o := make([]int64, len(vals)/R)
	for i := range o {
		if fn(vals[i*R : (i+1)*R]) {
			o[i] = 1
		}
	}
	return s.set(n.Out, s.newI(stBool, shape, o))
}

// argReduce: the index of the first best element along axis (MLX returns
// uint32; held as int64).
func (s *session) argReduce(xt, out g.Tid, axis int32, keep bool, better func(a, b float32) bool) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	vals, R, shape, err := s.groups(x, []int32{axis}, keep, "Arg")
	if err != nil {
		return err
	}
	o := make([]int64, len(vals)/R)
	for i := range o {
		v := vals[i*R : (i+1)*R]
		best := 0
		for j := range v {
			if better(v[j], v[best]) {
				best = j
			}
		}
		o[i] = int64(best)
	}
	return s.set(out, s.newI(stU32, shape, o))
}

// alongAxis applies fn to every 1-D lane of x along axis; the result has
// x's shape.
func (s *session) alongAxis(xt, out g.Tid, axis int32, name string, fn func(dst, v []float32)) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(axis), len(x.shape), name)
	if err != nil {
		return err
	}
	vals, R, _, err := s.groups(x, []int32{int32(ax)}, false, name)
	if err != nil {
		return err
	}
	res := make([]float32, len(vals))
	for i := 0; i < len(vals); i += R {
		fn(res[i:i+R], vals[i:i+R])
	}
	return s.scatterLanes(out, x, ax, res, R)
}

// scatterLanes writes lanes (laid out as groups makes them, axis last)
// back into a tensor of x's shape.
func (s *session) scatterLanes(out g.Tid, x *tensor, ax int, lanes []float32, R int) error {
	o, err := s.allocF(len(lanes))
	if err != nil {
		return err
	}
	ostr := contiguousStrides(x.shape)
	var shape, strides []int
	for d := range x.shape {
		if d != ax {
			shape, strides = append(shape, x.shape[d]), append(strides, ostr[d])
		}
	}
	shape, strides = append(shape, R), append(strides, ostr[ax])
	j := 0
	iterate(shape, strides, 0, func(k int) { o[k] = lanes[j]; j++ })
	dt := x.dt
	if !isFloatST(dt) {
		dt = stF32
	}
	return s.set(out, s.newF(dt, x.shape, o))
}

func (s *session) argsort(n *g.ArgsortNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(n.Axis), len(x.shape), "Argsort")
	if err != nil {
		return err
	}
	vals, R, _, err := s.groups(x, []int32{int32(ax)}, false, "Argsort")
	if err != nil {
		return err
	}
	res := make([]float32, len(vals))
	idx := make([]int, R)
	for i := 0; i < len(vals); i += R {
		v := vals[i : i+R]
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
		for j, k := range idx {
			res[i+j] = float32(k)
		}
	}
	if err := s.scatterLanes(n.Out, x, ax, res, R); err != nil {
		return err
	}
	t := s.slots[n.Out]
	iv := make([]int64, t.numel())
	for i, v := range t.f {
		iv[i] = int64(v)
	}
	return s.set(n.Out, s.newI(stU32, x.shape, iv))
}

// fill makes a tensor of shape whose element at each index is fn(index).
func (s *session) fill(out g.Tid, dt int, shape []int, fn func(idx []int) float64) error {
	shape = slices.Clone(shape)
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	vals := make([]float64, 0, cnt)
	forEachIndex(shape, func(idx []int) { vals = append(vals, fn(idx)) })
	if isIntST(dt) {
		o := make([]int64, cnt)
		for i, v := range vals {
			o[i] = int64(v)
		}
		return s.set(out, s.newI(dt, shape, o))
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	for i, v := range vals {
		o[i] = float32(v)
	}
	return s.set(out, s.newF(dt, shape, o))
}

// forEachIndex calls fn with every multi-index of shape in row-major
// order (idx is reused).
func forEachIndex(shape []int, fn func(idx []int)) {
	for _, d := range shape {
		if d == 0 {
			return
		}
	}
	idx := make([]int, len(shape))
	for {
		fn(idx)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// at reads x at a multi-index.
func (x *tensor) at(idx []int) float64 {
	k := x.off
	for d, i := range idx {
		k += i * x.strides[d]
	}
	switch {
	case x.f != nil:
		return float64(x.f[k])
	case x.h != nil:
		return float64(x.halfAt(k))
	case x.u != nil:
		return float64(x.u[k])
	}
	return float64(x.i[k])
}

// like makes a tensor of x's dtype family (float or int) from values.
func (s *session) like(out g.Tid, x *tensor, shape []int, vals []float64) error {
	if x.isInt() {
		o := make([]int64, len(vals))
		for i, v := range vals {
			o[i] = int64(v)
		}
		return s.set(out, s.newI(x.dt, shape, o))
	}
	o, err := s.allocF(len(vals))
	if err != nil {
		return err
	}
	for i, v := range vals {
		o[i] = float32(v)
	}
	return s.set(out, s.newF(x.dt, shape, o))
}

func (s *session) triangle(xt, out g.Tid, k int, lower bool) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	r := len(x.shape)
	if r < 2 {
		return fmt.Errorf("tril/triu of rank %d", r)
	}
	var vals []float64
	forEachIndex(x.shape, func(idx []int) {
		i, j := idx[r-2], idx[r-1]
		keep := j <= i+k
		if !lower {
			keep = j >= i+k
		}
		if keep {
			vals = append(vals, x.at(idx))
		} else {
			vals = append(vals, 0)
		}
	})
	return s.like(out, x, x.shape, vals)
}

func (s *session) where(n *g.WhereNode) error {
	c, err := s.get(n.Condition)
	if err != nil {
		return err
	}
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	y, err := s.get(n.Y)
	if err != nil {
		return err
	}
	shape, err := broadcastShapesInto(nil, c.shape, x.shape)
	if err != nil {
		return err
	}
	if shape, err = broadcastShapesInto(nil, shape, y.shape); err != nil {
		return err
	}
	if _, err := checkElems(shape); err != nil {
		return err
	}
	cv, _ := s.broadcastView(c, shape)
	xv, _ := s.broadcastView(x, shape)
	yv, _ := s.broadcastView(y, shape)
	var vals []float64
	forEachIndex(shape, func(idx []int) {
		if cv.at(idx) != 0 {
			vals = append(vals, xv.at(idx))
		} else {
			vals = append(vals, yv.at(idx))
		}
	})
	if x.isInt() && y.isInt() {
		return s.like(n.Out, x, shape, vals)
	}
	return s.like(n.Out, &tensor{dt: promote(x.dt, y.dt), f: []float32{}}, shape, vals)
}

func (s *session) clip(n *g.ClipNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	shape := slices.Clone(x.shape)
	var lo, hi *tensor
	for _, p := range []struct {
		t   *g.Tid
		dst **tensor
	}{{n.AMin, &lo}, {n.AMax, &hi}} {
		if p.t == nil {
			continue
		}
		b, err := s.get(*p.t)
		if err != nil {
			return err
		}
		*p.dst = b
		if shape, err = broadcastShapesInto(nil, shape, b.shape); err != nil {
			return err
		}
	}
	xv, err := s.broadcastView(x, shape)
	if err != nil {
		return err
	}
	if lo != nil {
		lo, _ = s.broadcastView(lo, shape)
	}
	if hi != nil {
		hi, _ = s.broadcastView(hi, shape)
	}
	var vals []float64
	forEachIndex(shape, func(idx []int) {
		v := xv.at(idx)
		if lo != nil {
			v = max(v, lo.at(idx))
		}
		if hi != nil {
			v = min(v, hi.at(idx))
		}
		vals = append(vals, v)
	})
	return s.like(n.Out, x, shape, vals)
}

func (s *session) squeeze(n *g.SqueezeNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	drop := make([]bool, len(x.shape))
	if len(n.Dims) == 0 {
		for d, v := range x.shape {
			drop[d] = v == 1
		}
	}
	for _, a := range n.Dims {
		d, err := normAxis(int(a), len(x.shape), "Squeeze")
		if err != nil {
			return err
		}
		if x.shape[d] != 1 {
			return fmt.Errorf("squeeze: axis %d of %v is not 1", d, x.shape)
		}
		drop[d] = true
	}
	var shape, st []int
	for d := range x.shape {
		if !drop[d] {
			shape, st = append(shape, x.shape[d]), append(st, x.strides[d])
		}
	}
	if shape == nil {
		shape, st = []int{}, []int{}
	}
	return s.set(n.Out, s.view(x, shape, st, x.off))
}

func (s *session) split(n *g.SplitNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(n.Axis), len(x.shape), "Split")
	if err != nil {
		return err
	}
	if len(n.Sizes) != len(n.Outs) {
		return fmt.Errorf("split: %d sizes for %d outputs", len(n.Sizes), len(n.Outs))
	}
	start := 0
	for i, sz := range n.Sizes {
		v, err := s.resolveInt(sz)
		if err != nil {
			return err
		}
		if v < 0 || start+v > x.shape[ax] {
			return fmt.Errorf("split: sizes %v exceed axis %d of %v", n.Sizes, ax, x.shape)
		}
		shape := slices.Clone(x.shape)
		shape[ax] = v
		if err := s.set(n.Outs[i], s.view(x, shape, x.strides, x.off+start*x.strides[ax])); err != nil {
			return err
		}
		start += v
	}
	return nil
}

func (s *session) stack(n *g.StackNode) error {
	if len(n.Tensors) == 0 {
		return fmt.Errorf("stack of nothing")
	}
	var ts []*tensor
	for _, id := range n.Tensors {
		t, err := s.get(id)
		if err != nil {
			return err
		}
		if !slices.Equal(t.shape, ts0(ts, t).shape) {
			return fmt.Errorf("stack: shapes %v and %v differ", ts[0].shape, t.shape)
		}
		ts = append(ts, t)
	}
	ax, err := normAxis(int(n.Axis), len(ts[0].shape)+1, "Stack")
	if err != nil {
		return err
	}
	shape := slices.Insert(slices.Clone(ts[0].shape), ax, len(ts))
	var vals []float64
	forEachIndex(shape, func(idx []int) {
		sub := slices.Delete(slices.Clone(idx), ax, ax+1)
		vals = append(vals, ts[idx[ax]].at(sub))
	})
	return s.like(n.Out, ts[0], shape, vals)
}

func ts0(ts []*tensor, t *tensor) *tensor {
	if len(ts) == 0 {
		return t
	}
	return ts[0]
}

func (s *session) tile(n *g.TileNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	reps, err := s.resolveInts(n.Reps)
	if err != nil {
		return err
	}
	reps = slices.Clone(reps)
	xs := slices.Clone(x.shape)
	for len(xs) < len(reps) {
		xs = append([]int{1}, xs...)
	}
	for len(reps) < len(xs) {
		reps = append([]int{1}, reps...)
	}
	xv := s.view(x, xs, append(make([]int, len(xs)-len(x.shape)), x.strides...), x.off)
	shape := make([]int, len(xs))
	for d := range xs {
		shape[d] = xs[d] * reps[d]
	}
	if _, err := checkElems(shape); err != nil {
		return err
	}
	var vals []float64
	src := make([]int, len(xs))
	forEachIndex(shape, func(idx []int) {
		for d, i := range idx {
			src[d] = i % xs[d]
		}
		vals = append(vals, xv.at(src))
	})
	return s.like(n.Out, x, shape, vals)
}

func (s *session) repeat(n *g.RepeatNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	r, err := s.resolveInt(n.Repeats)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(n.Axis), len(x.shape), "Repeat")
	if err != nil {
		return err
	}
	if r < 0 {
		return fmt.Errorf("repeat: %d repeats", r)
	}
	shape := slices.Clone(x.shape)
	shape[ax] *= r
	if _, err := checkElems(shape); err != nil {
		return err
	}
	var vals []float64
	src := make([]int, len(shape))
	forEachIndex(shape, func(idx []int) {
		copy(src, idx)
		src[ax] = idx[ax] / r
		vals = append(vals, x.at(src))
	})
	return s.like(n.Out, x, shape, vals)
}

func (s *session) roll(n *g.RollNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	shifts, err := s.resolveInts(n.Shift)
	if err != nil {
		return err
	}
	shifts = slices.Clone(shifts)
	if len(shifts) != len(n.Axes) {
		return fmt.Errorf("roll: %d shifts for %d axes", len(shifts), len(n.Axes))
	}
	by := make([]int, len(x.shape))
	for i, a := range n.Axes {
		d, err := normAxis(int(a), len(x.shape), "Roll")
		if err != nil {
			return err
		}
		by[d] += shifts[i]
	}
	var vals []float64
	src := make([]int, len(x.shape))
	forEachIndex(x.shape, func(idx []int) {
		for d, i := range idx {
			m := x.shape[d]
			src[d] = ((i-by[d])%m + m) % m
		}
		vals = append(vals, x.at(src))
	})
	return s.like(n.Out, x, x.shape, vals)
}

func (s *session) pad(n *g.PadNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if n.Mode != "constant" {
		return fmt.Errorf("pad mode %q", n.Mode)
	}
	pw, err := s.resolveInts(n.PadWidth)
	if err != nil {
		return err
	}
	pw = slices.Clone(pw)
	if len(pw) != 2*len(x.shape) {
		return fmt.Errorf("pad: %d widths for rank %d", len(pw), len(x.shape))
	}
	shape := slices.Clone(x.shape)
	for d := range shape {
		if pw[2*d] < 0 || pw[2*d+1] < 0 {
			return fmt.Errorf("pad: negative width %v", pw)
		}
		shape[d] += pw[2*d] + pw[2*d+1]
	}
	if _, err := checkElems(shape); err != nil {
		return err
	}
	var vals []float64
	src := make([]int, len(shape))
	forEachIndex(shape, func(idx []int) {
		for d, i := range idx {
			src[d] = i - pw[2*d]
			if src[d] < 0 || src[d] >= x.shape[d] {
				vals = append(vals, float64(n.ConstantValue))
				return
			}
		}
		vals = append(vals, x.at(src))
	})
	return s.like(n.Out, x, shape, vals)
}

func (s *session) takeAlongAxis(n *g.TakeAlongAxisNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	it, err := s.get(n.Indices)
	if err != nil {
		return err
	}
	if !it.isInt() || len(it.shape) != len(x.shape) {
		return fmt.Errorf("takeAlongAxis: indices %v for %v", it.shape, x.shape)
	}
	ax, err := normAxis(int(n.Axis), len(x.shape), "TakeAlongAxis")
	if err != nil {
		return err
	}
	// Broadcast x (axis excepted) and the indices to one shape.
	xs := slices.Clone(x.shape)
	xs[ax] = it.shape[ax]
	shape, err := broadcastShapesInto(nil, xs, it.shape)
	if err != nil {
		return err
	}
	xb := slices.Clone(shape)
	xb[ax] = x.shape[ax]
	xv, err := s.broadcastView(x, xb)
	if err != nil {
		return err
	}
	iv, err := s.broadcastView(it, shape)
	if err != nil {
		return err
	}
	var vals []float64
	src := make([]int, len(shape))
	var bad error
	forEachIndex(shape, func(idx []int) {
		copy(src, idx)
		k := int(iv.at(idx))
		if k < 0 {
			k += x.shape[ax]
		}
		if k < 0 || k >= x.shape[ax] {
			bad = fmt.Errorf("takeAlongAxis: index %d out of range", k)
			k = 0
		}
		src[ax] = k
		vals = append(vals, xv.at(src))
	})
	if bad != nil {
		return bad
	}
	return s.like(n.Out, x, shape, vals)
}

func (s *session) indexCopy(n *g.IndexCopyNode) error {
	dst, err := s.get(n.Dst)
	if err != nil {
		return err
	}
	upd, err := s.get(n.Update)
	if err != nil {
		return err
	}
	it, err := s.get(n.Indices)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(n.Axis), len(dst.shape), "IndexCopy")
	if err != nil {
		return err
	}
	idx := it.ints()
	want := slices.Clone(dst.shape)
	want[ax] = len(idx)
	if !it.isInt() || !slices.Equal(upd.shape, want) {
		return fmt.Errorf("indexCopy: update %v with %d indices into %v", upd.shape, len(idx), dst.shape)
	}
	var vals []float64
	forEachIndex(dst.shape, func(i []int) { vals = append(vals, dst.at(i)) })
	ostr := contiguousStrides(dst.shape)
	var bad error
	forEachIndex(upd.shape, func(i []int) {
		k := int(idx[i[ax]])
		if k < 0 {
			k += dst.shape[ax]
		}
		if k < 0 || k >= dst.shape[ax] {
			bad = fmt.Errorf("indexCopy: index %d out of range", k)
			return
		}
		p := 0
		for d, v := range i {
			if d == ax {
				v = k
			}
			p += v * ostr[d]
		}
		vals[p] = upd.at(i)
	})
	if bad != nil {
		return bad
	}
	return s.like(n.Out, dst, dst.shape, vals)
}

func (s *session) layerNorm(n *g.LayerNormNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if len(x.shape) == 0 {
		return fmt.Errorf("layerNorm of a scalar")
	}
	H := x.shape[len(x.shape)-1]
	var w, b []float32
	for _, p := range []struct {
		t   *g.Tid
		dst *[]float32
	}{{n.Weight, &w}, {n.Bias, &b}} {
		if p.t == nil {
			continue
		}
		t, err := s.get(*p.t)
		if err != nil {
			return err
		}
		if t.numel() != H {
			return fmt.Errorf("layerNorm: parameter of shape %v for rows of %d", t.shape, H)
		}
		*p.dst = t.floats(nil)
	}
	src := s.fl(x)
	o, err := s.allocF(len(src))
	if err != nil {
		return err
	}
	for r := 0; r+H <= len(src); r += H {
		row := src[r : r+H]
		m := sum64(row) / float64(H)
		var v float64
		for _, x := range row {
			v += (float64(x) - m) * (float64(x) - m)
		}
		inv := 1 / math.Sqrt(v/float64(H)+float64(n.Eps))
		for i, x := range row {
			y := float32((float64(x) - m) * inv)
			if w != nil {
				y *= w[i]
			}
			if b != nil {
				y += b[i]
			}
			o[r+i] = y
		}
	}
	dt := x.dt
	if !isFloatST(dt) {
		dt = stF32
	}
	return s.set(n.Out, s.newF(dt, x.shape, o))
}

// rope is mlx::fast::rope (forward): x [..., T, D] with positions offset +
// t along the second-to-last axis; the first dims features rotate, in
// pairs (x[2i], x[2i+1]) when traditional, else (x[i], x[i + dims/2]), by
// angle scale·position·inv_freq[i], inv_freq[i] = base^(−i/(dims/2)) or
// 1/freqs[i].
func (s *session) rope(n *g.RopeNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	r := len(x.shape)
	dims := int(n.Dims)
	if r < 3 || dims <= 0 || dims%2 != 0 || dims > x.shape[r-1] {
		return fmt.Errorf("rope: dims %d for input %v", dims, x.shape)
	}
	var off int64
	if n.Offset.IsVid {
		v, err := s.val(n.Offset.Vid)
		if err != nil {
			return err
		}
		off = v.i
	} else {
		t, err := s.get(n.Offset.Tid)
		if err != nil {
			return err
		}
		if t.numel() != 1 {
			return fmt.Errorf("rope: per-batch offsets %v not supported", t.shape)
		}
		off = int64(t.at(make([]int, len(t.shape))))
	}
	half := dims / 2
	inv := make([]float64, half)
	if n.Freqs != nil {
		ft, err := s.get(*n.Freqs)
		if err != nil {
			return err
		}
		if ft.numel() != half {
			return fmt.Errorf("rope: %d freqs for %d dims", ft.numel(), dims)
		}
		for i, f := range ft.floats(nil) {
			inv[i] = 1 / float64(f)
		}
	} else {
		for i := range inv {
			inv[i] = math.Exp(-float64(i) * math.Log(float64(n.Base)) / float64(half))
		}
	}
	src := s.fl(x)
	o, err := s.allocF(len(src))
	if err != nil {
		return err
	}
	copy(o, src)
	T, D := x.shape[r-2], x.shape[r-1]
	for base := 0; base < len(src); base += T * D {
		for t := 0; t < T; t++ {
			pos := float64(n.Scale) * float64(off+int64(t))
			row, dst := src[base+t*D:base+(t+1)*D], o[base+t*D:base+(t+1)*D]
			for i := 0; i < half; i++ {
				th := float32(pos * inv[i])
				c, sn := float32(math.Cos(float64(th))), float32(math.Sin(float64(th)))
				a, b := i, i+half
				if n.Traditional {
					a, b = 2*i, 2*i+1
				}
				x1, x2 := row[a], row[b]
				dst[a] = x1*c - x2*sn
				dst[b] = x1*sn + x2*c
			}
		}
	}
	dt := x.dt
	return s.set(n.Out, s.newF(dt, x.shape, o))
}
