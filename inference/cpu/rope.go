package cpu

import (
	"fmt"
	"reflect"

	g "etchat/inference/mlxgraph"
)

// Rotary embeddings in the rotate-half form, as Hugging Face's
// apply_rotary_pos_emb writes them and the MLX export keeps them:
//
//	out = x·cos + concat(−x[..., h:], x[..., :h])·sin
//
// are seven instructions (two slices, a negation, a concatenation, two
// multiplies, an add) per projection, interleaved with the other
// projection's seven and reusing slots. planRoPE finds each such pattern
// in the main chain; the session computes it in one pass where its first
// instruction stands, holds the result, sets it where the add stands and
// skips the other instructions. Each element is the same three fp32
// operations as before (the two products, then their sum, operands in
// the graph's order, through the same loops), so the bits are those of
// the seven instructions.

// fuseAct is what run does at one instruction of the main chain.
type fuseAct struct {
	kind uint8 // actRun, actRoPE, actSkip, actRoPESet
	k    int32 // the ropePlan
}

const (
	actRun = iota
	actRoPE
	actSkip
	actRoPESet
)

// ropePlan is one fused rotary embedding.
type ropePlan struct {
	first            int // where it is computed (out is set where the add stands)
	x, cos, sin, out g.Tid
	half, stop       int64 // x[..., :half] and x[..., half:stop]
	axis1, axis2     int64 // the slices' axes (the last, checked at run time)
	cosFirst         bool  // Multiply(cos, x) rather than Multiply(x, cos)
	sinFirst         bool  // Multiply(sin, r) rather than Multiply(r, sin)
	rotFirst         bool  // Add(r·sin, x·cos) rather than Add(x·cos, r·sin)
}

// fuseRoPE is settable for the tests (false: the seven instructions).
var fuseRoPE = true

// tidUses lists the tensor slots op reads and writes (writes: the fields
// named Out and Outs), by reflection over the node's fields, embedded
// structs (VarNode's ReduceNode) included.
func tidUses(op any) (reads, writes []g.Tid) {
	v := reflect.ValueOf(op)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, nil
	}
	for i := 0; i < v.NumField(); i++ {
		if sf := v.Type().Field(i); sf.Anonymous && sf.IsExported() && sf.Type.Kind() == reflect.Struct {
			r, w := tidUses(v.Field(i).Interface())
			reads, writes = append(reads, r...), append(writes, w...)
			continue
		}
		if !v.Type().Field(i).IsExported() {
			continue
		}
		f, name := v.Field(i), v.Type().Field(i).Name
		out := name == "Out" || name == "Outs"
		add := func(t g.Tid) {
			if out {
				writes = append(writes, t)
			} else {
				reads = append(reads, t)
			}
		}
		switch x := f.Interface().(type) {
		case g.Tid:
			add(x)
		case *g.Tid:
			if x != nil {
				add(*x)
			}
		case []g.Tid:
			for _, t := range x {
				add(t)
			}
		case g.VidOrTid:
			if !x.IsVid {
				add(x.Tid)
			}
		case g.IntOrVidOrTid:
			if x.Kind == g.KindTid {
				add(x.Tid)
			}
		case []g.IntOrVidOrTid:
			for _, e := range x {
				if e.Kind == g.KindTid {
					add(e.Tid)
				}
			}
		}
	}
	return reads, writes
}

// planRoPE fills m.ropes and m.acts (nil when nothing fuses).
func (m *model) planRoPE() {
	ins := m.graph.Instructions
	n := len(ins)
	// def-use over slot versions: a version is the instruction that wrote
	// it (-1: as the chain starts); reads[i] are the versions i reads
	type use struct {
		t g.Tid
		v int
	}
	reads := make([][]use, n)
	readCount := map[use]int{}
	lastDef := map[g.Tid]int{}
	cur := func(t g.Tid) int {
		if d, ok := lastDef[t]; ok {
			return d
		}
		return -1
	}
	for i, in := range ins {
		r, w := tidUses(in.Op)
		for _, t := range r {
			u := use{t, cur(t)}
			reads[i] = append(reads[i], u)
			readCount[u]++
		}
		for _, t := range w {
			lastDef[t] = i
		}
	}
	liveOut := map[g.Tid]bool{}
	for _, sl := range append(append([]g.Slot{}, m.graph.Outputs...), m.graph.MutableBuffers...) {
		liveOut[g.Tid(sl.Idx)] = true
	}
	// single reports whether the version instruction d wrote into t is
	// read once (by its consumer in the pattern) and nowhere else.
	single := func(t g.Tid, d int) bool {
		return readCount[use{t, d}] == 1 && !(liveOut[t] && lastDef[t] == d)
	}
	versionOf := func(i int, t g.Tid) int {
		for _, u := range reads[i] {
			if u.t == t {
				return u.v
			}
		}
		return -2
	}
	var ropes []ropePlan
	var acts []fuseAct
	taken := make([]bool, n)
	for ai, in := range ins {
		add, ok := in.Op.(*g.AddNode)
		if !ok {
			continue
		}
		p, members, ok := m.matchRoPE(ai, add, versionOf, single)
		if !ok {
			continue
		}
		clash := false
		for _, j := range members {
			clash = clash || taken[j]
		}
		// computed at the first member after cos and sin are written
		// (layer 0 computes them between its slices and its products)
		// and no later than the products, which read cos, sin and x.
		// Reading x there reads what the slices would: the interpreter
		// never writes into a tensor's storage once it is set
		// (SliceUpdate and IndexCopy write fresh buffers).
		ready := max(versionOf(members[0], p.cos), versionOf(members[1], p.sin))
		p.first = -1
		for _, j := range members {
			if j > ready && j <= min(members[0], members[1]) && (p.first < 0 || j < p.first) {
				p.first = j
			}
		}
		if clash || p.first < 0 {
			continue
		}
		if acts == nil {
			acts = make([]fuseAct, n)
		}
		k := int32(len(ropes))
		for _, j := range members {
			taken[j] = true
			acts[j] = fuseAct{kind: actSkip, k: k}
		}
		acts[p.first] = fuseAct{kind: actRoPE, k: k}
		acts[ai] = fuseAct{kind: actRoPESet, k: k}
		ropes = append(ropes, p)
	}
	m.ropes, m.acts = ropes, acts
}

// matchRoPE matches the pattern ending at the add at ai. members are the
// pattern's other instructions: the x·cos multiply, the r·sin multiply,
// the concatenation, the negation and the two slices.
func (m *model) matchRoPE(ai int, add *g.AddNode, versionOf func(int, g.Tid) int, single func(g.Tid, int) bool) (ropePlan, []int, bool) {
	ins := m.graph.Instructions
	var p ropePlan
	p.out = add.Out
	mulAt := func(t g.Tid) (int, *g.MultiplyNode) {
		d := versionOf(ai, t)
		if d < 0 || !single(t, d) {
			return -1, nil
		}
		mn, _ := ins[d].Op.(*g.MultiplyNode)
		return d, mn
	}
	ia, ma := mulAt(add.A)
	ib, mb := mulAt(add.B)
	if ma == nil || mb == nil || ia == ib {
		return p, nil, false
	}
	// which product has the concatenation
	concatOf := func(d int, mn *g.MultiplyNode) (int, bool, bool) {
		for _, first := range []bool{true, false} {
			t := mn.A
			if !first {
				t = mn.B
			}
			c := versionOf(d, t)
			if c >= 0 && single(t, c) {
				if _, ok := ins[c].Op.(*g.ConcatenateNode); ok {
					return c, first, true
				}
			}
		}
		return -1, false, false
	}
	im, mx := ia, ma // x·cos
	ir, mr := ib, mb // r·sin
	ic, rFirst, ok := concatOf(ib, mb)
	if !ok {
		if ic, rFirst, ok = concatOf(ia, ma); !ok {
			return p, nil, false
		}
		im, mx, ir, mr = ib, mb, ia, ma
		p.rotFirst = true
	}
	p.sin, p.sinFirst = mr.B, !rFirst
	if !rFirst {
		p.sin = mr.A
	}
	cat := ins[ic].Op.(*g.ConcatenateNode)
	if len(cat.Tensors) != 2 || cat.Axis != -1 && cat.Axis != 3 {
		return p, nil, false
	}
	// concat(−x2, x1): x2 = slice(x, half:stop), x1 = slice(x, 0:half)
	in, x1 := versionOf(ic, cat.Tensors[0]), versionOf(ic, cat.Tensors[1])
	if in < 0 || x1 < 0 || !single(cat.Tensors[0], in) || !single(cat.Tensors[1], x1) || cat.Tensors[0] == cat.Tensors[1] {
		return p, nil, false
	}
	neg, ok := ins[in].Op.(*g.NegNode)
	if !ok {
		return p, nil, false
	}
	s2at := versionOf(in, neg.X)
	if s2at < 0 || !single(neg.X, s2at) {
		return p, nil, false
	}
	s1, ok1 := ins[x1].Op.(*g.SliceNode)
	s2, ok2 := ins[s2at].Op.(*g.SliceNode)
	if !ok1 || !ok2 || s1.X != s2.X || versionOf(x1, s1.X) != versionOf(s2at, s2.X) {
		return p, nil, false
	}
	lit := func(v g.IntOrVid) bool { return !v.IsVid }
	if !lit(s1.Axis) || !lit(s1.Start) || !lit(s1.Stop) || !lit(s2.Axis) || !lit(s2.Start) || !lit(s2.Stop) ||
		s1.Step != 1 || s2.Step != 1 || s1.Start.Literal != 0 || s2.Start.Literal != s1.Stop.Literal || s1.Stop.Literal <= 0 {
		return p, nil, false
	}
	p.x, p.half, p.stop = s1.X, s1.Stop.Literal, s2.Stop.Literal
	p.axis1, p.axis2 = s1.Axis.Literal, s2.Axis.Literal
	// the other product is x·cos, on the version the slices read
	xv := versionOf(x1, s1.X)
	switch {
	case mx.A == p.x && versionOf(im, mx.A) == xv:
		p.cos = mx.B
	case mx.B == p.x && versionOf(im, mx.B) == xv:
		p.cos, p.cosFirst = mx.A, true
	default:
		return p, nil, false
	}
	return p, []int{im, ir, ic, in, x1, s2at}, true
}

// ropeCompute computes plan k's result (ropePlan) from the slots as they
// are now: the first of its instructions is running.
func (s *session) ropeCompute(k int) (*tensor, error) {
	p := &s.m.ropes[k]
	x, err := s.get(p.x)
	if err != nil {
		return nil, err
	}
	c, err := s.get(p.cos)
	if err != nil {
		return nil, err
	}
	sn, err := s.get(p.sin)
	if err != nil {
		return nil, err
	}
	if x.isInt() || c.isInt() || sn.isInt() || len(x.shape) == 0 {
		return nil, fmt.Errorf("rotary embedding of %v by %v and %v (integer or scalar)", x.shape, c.shape, sn.shape)
	}
	rank := len(x.shape)
	a1, err := normAxis(int(p.axis1), rank, "Slice")
	if err != nil {
		return nil, err
	}
	a2, err := normAxis(int(p.axis2), rank, "Slice")
	if err != nil {
		return nil, err
	}
	D := x.shape[rank-1]
	h := clampIdx(int(p.half), D)
	if a1 != rank-1 || a2 != rank-1 || clampIdx(int(p.stop), D) != D {
		return nil, fmt.Errorf("rotary embedding: slices of %v at axes %d, %d to %d not supported", x.shape, p.axis1, p.axis2, p.stop)
	}
	shape, err := broadcastShapesInto(s.scratch[0], x.shape, c.shape)
	if err != nil {
		return nil, err
	}
	if shape, err = broadcastShapesInto(shape, shape, sn.shape); err != nil {
		return nil, err
	}
	s.scratch[0] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return nil, err
	}
	W := shape[len(shape)-1]
	if W != D && D != 1 {
		return nil, fmt.Errorf("rotary embedding: %v broadcast to %v", x.shape, shape)
	}
	xb, err := s.broadcastView(x, shape)
	if err != nil {
		return nil, err
	}
	cb, err := s.broadcastView(c, shape)
	if err != nil {
		return nil, err
	}
	sb, err := s.broadcastView(sn, shape)
	if err != nil {
		return nil, err
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return nil, err
	}
	// rows of the last axis, read in place where they are fp32 and
	// contiguous (the usual: x a view of a projection, cos and sin
	// broadcast over the heads), else from materialised copies
	rows := cnt / max(W, 1)
	xr, cr, sr := rowsOf(s, xb), rowsOf(s, cb), rowsOf(s, sb)
	tmp, err := s.allocF(3 * W) // r, x·cos, r·sin of one row
	if err != nil {
		return nil, err
	}
	rot, p1, p2 := tmp[:W], tmp[W:2*W], tmp[2*W:]
	lo := D - h // r[d] = −x[d+h] below lo, x[d−lo] from it
	if D == 1 {
		lo = 0 // x broadcast along the last axis: r is x (h ≥ 1)
	}
	for r := 0; r < rows; r++ {
		xv, cv, sv, ov := xr.row(r, W), cr.row(r, W), sr.row(r, W), o[r*W:(r+1)*W]
		for d := 0; d < lo; d++ {
			rot[d] = -xv[d+h]
		}
		copy(rot[lo:], xv[:W-lo])
		// the instructions' own loops, operands in their order
		if p.cosFirst {
			binVV(opMul, p1, cv, xv)
		} else {
			binVV(opMul, p1, xv, cv)
		}
		if p.sinFirst {
			binVV(opMul, p2, sv, rot)
		} else {
			binVV(opMul, p2, rot, sv)
		}
		if p.rotFirst {
			binVV(opAdd, ov, p2, p1)
		} else {
			binVV(opAdd, ov, p1, p2)
		}
	}
	// the dtypes the seven instructions give, operand orders included
	bin := func(a, b int, swap bool) int {
		if swap {
			a, b = b, a
		}
		if dt := promote(a, b); isFloatST(dt) {
			return dt
		}
		return stF32
	}
	rdt := promote(x.dt, x.dt) // neg keeps x's float dtype; concat(−x2, x1)
	dt := bin(bin(x.dt, c.dt, p.cosFirst), bin(rdt, sn.dt, p.sinFirst), p.rotFirst)
	return s.newF(dt, shape, o), nil
}

// rowsOf reads the rows (last axis) of a broadcast view: in place when
// its storage is fp32 and the last axis contiguous, else from a copy.
type rowView struct {
	f     []float32 // storage (in place) or the copy
	off   int
	outer []int // shape and strides of the leading axes (in place)
	str   []int
	copy  bool
}

func rowsOf(s *session, v *tensor) rowView {
	n := len(v.shape)
	if v.f != nil && n > 0 && (v.strides[n-1] == 1 || v.shape[n-1] == 1) {
		return rowView{f: v.f, off: v.off, outer: v.shape[:n-1], str: v.strides[:n-1]}
	}
	return rowView{f: s.fl(v), copy: true}
}

// row is row r of W elements (W the view's last dimension; a broadcast
// single element is read as x[0] by the caller's index).
func (rr *rowView) row(r, W int) []float32 {
	if rr.copy {
		return rr.f[r*W : (r+1)*W]
	}
	p := rr.off
	for i := len(rr.outer) - 1; i >= 0; i-- {
		d := rr.outer[i]
		p += (r % d) * rr.str[i]
		r /= d
	}
	return rr.f[p : p+W]
}
