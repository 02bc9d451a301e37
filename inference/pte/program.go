package pte

import (
	"fmt"
	"sort"
)

// Field ids of the tables read here (schema/program.fbs, in declaration
// order; a union takes two ids: its type tag, then its value).
const (
	progVersion, progPlans, progConstBuf, progDelegateData, progSegments, progConstSeg, _, progNamedData = 0, 1, 2, 3, 4, 5, 6, 7

	planName, _, planValues, planInputs, planOutputs, planChains, planOperators, planDelegates, planNonConst = 0, 1, 2, 3, 4, 5, 6, 7, 8

	tensorScalarType, _, tensorSizes, _, _, tensorDataBuffer, tensorAllocInfo, _, tensorDynamism = 0, 1, 2, 3, 4, 5, 6, 7, 8
)

// TensorInfo describes one input or output value of a method. For a tensor
// it has the dtype, sizes and dynamism; other kinds carry only Kind.
type TensorInfo struct {
	Value    int        `json:"value"` // index into the method's values
	Kind     ValueKind  `json:"kind"`
	DType    ScalarType `json:"dtype"`
	Sizes    []int64    `json:"sizes"`
	Dynamism Dynamism   `json:"dynamism"`
}

// CompileSpec is one delegate compile spec.
type CompileSpec struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Delegate is one backend delegate of a method, with where its processed
// blob lies in the file.
type Delegate struct {
	ID           string        `json:"id"`      // backend id, e.g. "MLXBackend"
	Inline       bool          `json:"inline"`  // the blob is in Program.backend_delegate_data
	Index        int           `json:"index"`   // into Segments (or InlineDelegateData when Inline)
	Segment      int           `json:"segment"` // segment index; -1 when Inline
	Offset       int64         `json:"offset"`  // absolute file offset of the blob
	Size         int64         `json:"size"`
	CompileSpecs []CompileSpec `json:"compile_specs"`
}

// Method is one execution plan.
type Method struct {
	Name                string       `json:"name"`
	Inputs              []TensorInfo `json:"inputs"`
	Outputs             []TensorInfo `json:"outputs"`
	NumValues           int          `json:"num_values"`
	NumInstructions     int          `json:"num_instructions"`
	DelegateCalls       int          `json:"delegate_calls"`
	Operators           []string     `json:"operators"` // "name" or "name.overload"
	Kernels             []string     `json:"kernels"`   // the operator of each KernelCall, in chain order
	Delegates           []Delegate   `json:"delegates"`
	NonConstBufferSizes []int64      `json:"non_const_buffer_sizes"`
	// IsConstant: no inputs, no instructions and one output — a value the
	// exporter baked in (get_max_ctx_len and friends). Read it with
	// File.Constant.
	IsConstant bool `json:"is_constant"`

	constant *rawValue
}

// NamedData is one named blob (a weight), with its segment made absolute.
type NamedData struct {
	Key     string `json:"key"`
	Segment int    `json:"segment"`
	Offset  int64  `json:"offset"` // absolute file offset
	Size    int64  `json:"size"`
}

// rawValue is a constant method's output as stored, before tensor data is
// read.
type rawValue struct {
	kind    ValueKind
	i       int64
	f       float64
	b       bool
	s       string
	ints    []int64
	floats  []float64
	bools   []bool
	dtype   ScalarType
	sizes   []int64
	dataIdx uint32
	alloc   bool
}

// Method returns the method called name.
func (f *File) Method(name string) (*Method, bool) {
	for i := range f.Methods {
		if f.Methods[i].Name == name {
			return &f.Methods[i], true
		}
	}
	return nil, false
}

// WeightBytes is the bytes of the distinct segments that named data refers
// to (segments shared by several keys count once).
func (f *File) WeightBytes() int64 {
	seen := map[int]bool{}
	var n int64
	for _, nd := range f.NamedData {
		if !seen[nd.Segment] {
			seen[nd.Segment] = true
			n += nd.Size
		}
	}
	return n
}

// methodCost is the work budget one method spends before its vectors.
const methodCost = 16

func (f *File) parseProgram(prog []byte) error {
	// Every element of a vector that is not shared costs at least a byte of
	// program, so 2×size is ample for any real file (the fixtures spend
	// 3–6% of their program size: 182 of 5,112 bytes, 1,414 of 26,448);
	// only aliasing can exhaust it. The budget also bounds what parsing
	// allocates (about 100 bytes per unit), so its constant is small: with
	// 65,536 a 1,920-byte file of aliased methods allocated 5.7 MB.
	d := &dec{b: prog, budget: 2*int64(len(prog)) + 1<<12}
	root, ok := d.root("program")
	if !ok {
		return formatf("%v", d.err)
	}
	f.Version = d.fU32(root, progVersion, 0)

	// Segments, made absolute and checked against the file and each other.
	segs := d.fVec(root, progSegments, 4, "segments")
	if d.err == nil && segs.n > 0 && !f.Header.Extended {
		return formatf("the program lists %d segments but the file has no extended header giving their base offset", segs.n)
	}
	if d.err == nil && segs.n > 0 && f.Header.SegmentBaseOffset == 0 {
		return formatf("the program lists %d segments but segment_base_offset is 0", segs.n)
	}
	limit := f.Size - f.Header.SegmentBaseOffset // bytes available for segments
	if f.Header.SegmentDataSize > 0 {
		limit = f.Header.SegmentDataSize
	}
	if d.spend(segs.n, "segments") {
		f.Segments = make([]Segment, 0, segs.n)
	}
	var i uint64
	for i = 0; i < segs.n && d.err == nil; i++ {
		t, ok := d.tableIn(segs, i, "segment")
		if !ok {
			break
		}
		off, size := d.fU64(t, 0, 0), d.fU64(t, 1, 0)
		if d.err != nil {
			break
		}
		if off > uint64(limit) || size > uint64(limit)-off {
			return formatf("truncated or corrupt: segment %d (offset %d, %d bytes) runs past the end of the segment data (%d bytes from file offset %d; file is %d bytes)",
				i, off, size, limit, f.Header.SegmentBaseOffset, f.Size)
		}
		f.Segments = append(f.Segments, Segment{Offset: f.Header.SegmentBaseOffset + int64(off), Size: int64(size)})
	}
	if d.err != nil {
		return formatf("segments[%d]: %v", i, d.err)
	}
	if err := checkOverlap(f.Segments); err != nil {
		return err
	}

	// Constant segment (or the deprecated inline constant buffers).
	if cs, ok := d.fTable(root, progConstSeg, "constant_segment"); ok {
		idx := d.fU32(cs, 0, 0)
		offs := d.i64s(d.fVec(cs, 1, 8, "constant_segment.offsets"))
		if d.err != nil {
			return formatf("%v", d.err)
		}
		if len(offs) > 0 || len(f.Segments) > 0 {
			if int(idx) >= len(f.Segments) && len(offs) > 0 {
				return formatf("constant_segment.segment_index %d does not exist (%d segments)", idx, len(f.Segments))
			}
			if int(idx) < len(f.Segments) {
				f.ConstantSegment = int(idx)
			}
			f.ConstantOffsets = make([]uint64, len(offs))
			for k, o := range offs {
				if f.ConstantSegment < 0 || uint64(o) > uint64(f.Segments[f.ConstantSegment].Size) {
					return formatf("constant_segment.offsets[%d] = %d is outside the constant segment", k, uint64(o))
				}
				f.ConstantOffsets[k] = uint64(o)
			}
		}
	}
	f.ConstantBuffers = d.inlineBlobs(root, progConstBuf, "constant_buffer")
	f.InlineDelegateData = d.inlineBlobs(root, progDelegateData, "backend_delegate_data")
	if d.err != nil {
		return formatf("%v", d.err)
	}

	// Named data.
	nd := d.fVec(root, progNamedData, 4, "named_data")
	if d.spend(nd.n, "named_data") {
		f.NamedData = make([]NamedData, 0, nd.n)
	}
	for i = 0; i < nd.n && d.err == nil; i++ {
		t, ok := d.tableIn(nd, i, "entry")
		if !ok {
			break
		}
		key := d.fString(t, 0, "key")
		seg := d.fU32(t, 1, 0)
		if d.err != nil {
			break
		}
		if int64(seg) >= int64(len(f.Segments)) {
			return formatf("named_data[%d] %q: segment %d does not exist (%d segments)", i, key, seg, len(f.Segments))
		}
		s := f.Segments[seg]
		f.NamedData = append(f.NamedData, NamedData{Key: key, Segment: int(seg), Offset: s.Offset, Size: s.Size})
	}
	if d.err != nil {
		return formatf("named_data[%d]: %v", i, d.err)
	}

	// Methods.
	plans := d.fVec(root, progPlans, 4, "execution_plan")
	if d.err == nil && plans.n == 0 {
		return formatf("the program has no methods")
	}
	// A method costs methodCost units: it builds a Method and its slices
	// and names, ~1 KB, from 4 bytes when the table is aliased.
	if d.spend(plans.n*methodCost, "execution_plan") {
		f.Methods = make([]Method, 0, plans.n)
	}
	for i := uint64(0); i < plans.n && d.err == nil; i++ {
		m, err := f.parseMethod(d, plans, i)
		if err != nil {
			return err
		}
		f.Methods = append(f.Methods, m)
	}
	if d.err != nil {
		return formatf("%v", d.err)
	}
	return nil
}

func checkOverlap(segs []Segment) error {
	idx := make([]int, len(segs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return segs[idx[a]].Offset < segs[idx[b]].Offset })
	for k := 1; k < len(idx); k++ {
		p, q := segs[idx[k-1]], segs[idx[k]]
		if p.Size > 0 && q.Size > 0 && p.Offset+p.Size > q.Offset {
			return formatf("segments %d (%d..%d) and %d (%d..%d) overlap",
				idx[k-1], p.Offset, p.Offset+p.Size, idx[k], q.Offset, q.Offset+q.Size)
		}
	}
	return nil
}

// inlineBlobs reads a vector of tables whose field 0 is a [ubyte], giving
// absolute file ranges (the program starts at file offset 0).
func (d *dec) inlineBlobs(root tbl, id int, what string) []Segment {
	v := d.fVec(root, id, 4, what)
	if v.n == 0 || !d.spend(v.n, what) {
		return nil
	}
	out := make([]Segment, 0, v.n)
	for i := uint64(0); i < v.n && d.err == nil; i++ {
		w := fmt.Sprintf("%s[%d]", what, i)
		t, ok := d.tableIn(v, i, w)
		if !ok {
			break
		}
		start, n := d.fBytes(t, 0, w)
		out = append(out, Segment{Offset: int64(start), Size: int64(n)})
	}
	return out
}

func (f *File) parseMethod(d *dec, plans vec, i uint64) (Method, error) {
	var m Method
	what := fmt.Sprintf("execution_plan[%d]", i)
	t, ok := d.tableIn(plans, i, what)
	if !ok {
		return m, formatf("%v", d.err)
	}
	m.Name = d.fString(t, planName, what+".name")
	if d.err == nil && m.Name == "" {
		return m, formatf("%s has no name", what)
	}
	what = fmt.Sprintf("method %q", m.Name)
	values := d.fVec(t, planValues, 4, what+" values")
	m.NumValues = int(values.n)
	ins := d.i32s(d.fVec(t, planInputs, 4, what+" inputs"))
	outs := d.i32s(d.fVec(t, planOutputs, 4, what+" outputs"))
	if d.err != nil {
		return m, formatf("%v", d.err)
	}
	var err error
	if m.Inputs, err = f.valueInfos(d, values, ins, what+" input"); err != nil {
		return m, err
	}
	if m.Outputs, err = f.valueInfos(d, values, outs, what+" output"); err != nil {
		return m, err
	}

	// Operators, then the chains' instructions.
	ops := d.fVec(t, planOperators, 4, what+" operators")
	if d.spend(ops.n, what+" operators") {
		m.Operators = make([]string, 0, ops.n)
	}
	opWhat := what + " operator"
	for k := uint64(0); k < ops.n && d.err == nil; k++ {
		ot, ok := d.tableIn(ops, k, opWhat)
		if !ok {
			break
		}
		name, overload := d.fString(ot, 0, opWhat), d.fString(ot, 1, opWhat)
		if overload != "" {
			name += "." + overload
		}
		m.Operators = append(m.Operators, name)
	}

	delegates := d.fVec(t, planDelegates, 4, what+" delegates")
	chains := d.fVec(t, planChains, 4, what+" chains")
	for c := uint64(0); c < chains.n && d.err == nil; c++ {
		w := fmt.Sprintf("%s chains[%d]", what, c)
		ct, ok := d.tableIn(chains, c, w)
		if !ok {
			break
		}
		instrs := d.fVec(ct, 2, 4, w+".instructions")
		if !d.spend(instrs.n, w) {
			break
		}
		m.NumInstructions += int(instrs.n)
		iw := w + " instruction"
		var k uint64
		for k = 0; k < instrs.n && d.err == nil; k++ {
			it, ok := d.tableIn(instrs, k, iw)
			if !ok {
				break
			}
			switch d.fU8(it, 0, 0) {
			case 1: // KernelCall
				at, ok := d.fTable(it, 1, iw+" kernel call")
				if !ok {
					if d.err == nil {
						return m, formatf("%s.instructions[%d]: kernel call without arguments", w, k)
					}
					break
				}
				op := d.fI32(at, 0, 0)
				if op < 0 || int(op) >= len(m.Operators) {
					return m, formatf("%s.instructions[%d]: kernel call names operator %d (method has %d)", w, k, op, len(m.Operators))
				}
				if d.spend(1, iw) {
					m.Kernels = append(m.Kernels, m.Operators[op])
				}
			case 2: // DelegateCall
				at, ok := d.fTable(it, 1, iw+" delegate call")
				if !ok {
					if d.err == nil {
						return m, formatf("%s.instructions[%d]: delegate call without arguments", w, k)
					}
					break
				}
				di := d.fI32(at, 0, 0)
				if d.err == nil && (di < 0 || uint64(di) >= delegates.n) {
					return m, formatf("%s.instructions[%d]: delegate call names delegate %d (method has %d)", w, k, di, delegates.n)
				}
				m.DelegateCalls++
			}
		}
		if d.err != nil {
			return m, formatf("%s.instructions[%d]: %v", w, k, d.err)
		}
	}
	if d.err != nil {
		return m, formatf("%v", d.err)
	}

	if d.spend(delegates.n, what+" delegates") {
		m.Delegates = make([]Delegate, 0, delegates.n)
	}
	for k := uint64(0); k < delegates.n && d.err == nil; k++ {
		dl, err := f.parseDelegate(d, delegates, k, fmt.Sprintf("%s delegates[%d]", what, k))
		if err != nil {
			return m, err
		}
		m.Delegates = append(m.Delegates, dl)
	}
	m.NonConstBufferSizes = d.i64s(d.fVec(t, planNonConst, 8, what+" non_const_buffer_sizes"))
	if d.err != nil {
		return m, formatf("%v", d.err)
	}

	m.IsConstant = len(m.Inputs) == 0 && m.NumInstructions == 0 && len(m.Outputs) == 1
	if m.IsConstant {
		rv, err := f.rawValue(d, values, uint64(m.Outputs[0].Value), what+" output", -1)
		if err != nil {
			return m, err
		}
		m.constant = rv
	}
	return m, nil
}

func (f *File) parseDelegate(d *dec, v vec, k uint64, what string) (Delegate, error) {
	dl := Delegate{Segment: -1}
	t, ok := d.tableIn(v, k, what)
	if !ok {
		return dl, formatf("%v", d.err)
	}
	dl.ID = d.fString(t, 0, what+".id")
	ref, ok := d.fTable(t, 1, what+".processed")
	if !ok {
		if d.err != nil {
			return dl, formatf("%v", d.err)
		}
		return dl, formatf("%s (%q) has no processed data reference", what, dl.ID)
	}
	loc, idx := d.fU8(ref, 0, 0), d.fU32(ref, 1, 0)
	specs := d.fVec(t, 2, 4, what+".compile_specs")
	if d.spend(specs.n, what) {
		dl.CompileSpecs = make([]CompileSpec, 0, specs.n)
	}
	w := what + " compile spec"
	for s := uint64(0); s < specs.n && d.err == nil; s++ {
		st, ok := d.tableIn(specs, s, w)
		if !ok {
			break
		}
		key := d.fString(st, 0, w)
		start, n := d.fBytes(st, 1, w)
		if d.err == nil && d.spend(n/16+1, w) {
			dl.CompileSpecs = append(dl.CompileSpecs, CompileSpec{Key: key, Value: append([]byte(nil), d.b[start:start+n]...)})
		}
	}
	if d.err != nil {
		return dl, formatf("%v", d.err)
	}
	dl.Index = int(idx)
	switch loc {
	case 1: // SEGMENT
		if int64(idx) >= int64(len(f.Segments)) {
			return dl, formatf("%s (%q): its blob is in segment %d, which does not exist (%d segments)", what, dl.ID, idx, len(f.Segments))
		}
		s := f.Segments[idx]
		dl.Segment, dl.Offset, dl.Size = int(idx), s.Offset, s.Size
	case 0: // INLINE
		if int64(idx) >= int64(len(f.InlineDelegateData)) {
			return dl, formatf("%s (%q): its blob is inline data %d, which does not exist (%d inline blobs)", what, dl.ID, idx, len(f.InlineDelegateData))
		}
		s := f.InlineDelegateData[idx]
		dl.Inline, dl.Offset, dl.Size = true, s.Offset, s.Size
	default:
		return dl, formatf("%s (%q): unknown data location %d", what, dl.ID, loc)
	}
	return dl, nil
}

// valueInfos describes the values at the given indices.
func (f *File) valueInfos(d *dec, values vec, idx []int32, what string) ([]TensorInfo, error) {
	if !d.spend(uint64(len(idx)), what) {
		return nil, formatf("%v", d.err)
	}
	out := make([]TensorInfo, 0, len(idx))
	for k, vi := range idx {
		rv, err := f.rawValue(d, values, uint64(uint32(vi)), what, k)
		if err != nil {
			return nil, err
		}
		ti := TensorInfo{Value: int(vi), Kind: rv.kind}
		if rv.kind == KindTensor {
			ti.DType, ti.Sizes, ti.Dynamism = rv.dtype, rv.sizes, Dynamism(rv.i)
		}
		out = append(out, ti)
	}
	return out, nil
}

// rawValue decodes values[i], the k-th input or output (k < 0: not in a
// list). Names for errors are only formatted when there is one.
func (f *File) rawValue(d *dec, values vec, i uint64, what string, k int) (*rawValue, error) {
	name := func() string {
		if k < 0 {
			return fmt.Sprintf("%s (value %d)", what, int32(uint32(i)))
		}
		return fmt.Sprintf("%s %d (value %d)", what, k, int32(uint32(i)))
	}
	if i >= values.n {
		return nil, formatf("%s: value index is out of range (%d values)", name(), values.n)
	}
	t, ok := d.tableIn(values, i, "value")
	if !ok {
		return nil, formatf("%s: %v", name(), d.err)
	}
	rv := &rawValue{kind: ValueKind(d.fU8(t, 0, 0))}
	w := "value"
	if rv.kind > KindOptionalTensorList {
		return nil, formatf("%s: unknown value type %d", name(), int(rv.kind))
	}
	if rv.kind == KindNone || rv.kind == KindNull {
		return rv, nil
	}
	vt, ok := d.fTable(t, 1, w)
	if !ok {
		if d.err != nil {
			return nil, formatf("%s: %v", name(), d.err)
		}
		return nil, formatf("%s: the %s value's table is missing", name(), rv.kind)
	}
	switch rv.kind {
	case KindInt:
		rv.i = d.fI64(vt, 0, 0)
	case KindBool:
		rv.b = d.fBool(vt, 0)
	case KindDouble:
		rv.f = d.fF64(vt, 0, 0)
	case KindString:
		rv.s = d.fString(vt, 0, w)
	case KindIntList:
		rv.ints = d.i64s(d.fVec(vt, 0, 8, w))
	case KindDoubleList:
		rv.floats = d.f64s(d.fVec(vt, 0, 8, w))
	case KindBoolList:
		rv.bools = d.bools(d.fVec(vt, 0, 1, w))
	case KindTensorList, KindOptionalTensorList:
		for _, x := range d.i32s(d.fVec(vt, 0, 4, w)) {
			rv.ints = append(rv.ints, int64(x))
		}
	case KindTensor:
		rv.dtype = ScalarType(d.fU8(vt, tensorScalarType, 0))
		sizes := d.i32s(d.fVec(vt, tensorSizes, 4, "tensor sizes"))
		rv.sizes = make([]int64, len(sizes))
		for k, s := range sizes {
			rv.sizes[k] = int64(s)
		}
		rv.dataIdx = d.fU32(vt, tensorDataBuffer, 0)
		rv.i = int64(d.fU8(vt, tensorDynamism, 0))
		_, rv.alloc = d.ref(vt, tensorAllocInfo)
		if d.err == nil && !rv.dtype.Valid() {
			return nil, formatf("%s: unknown scalar type %d", name(), int(rv.dtype))
		}
	}
	if d.err != nil {
		return nil, formatf("%s: %v", name(), d.err)
	}
	return rv, nil
}
