// Package ptetest writes small synthetic .pte files for tests: a Program
// flatbuffer laid out by a minimal forward-only flatbuffer writer (every
// table, vector and string is written after whatever refers to it), the
// file header with its "eh00" extended header, and the segments. It
// exists so that tests can reach the cases the exported fixtures do not
// have (Double/Bool/String constants, inline delegates, broken references).
// Only tests import it.
package ptetest

import (
	"encoding/binary"
	"math"

	"etchat/inference/pte"
)

// Program is what Build writes; fields mirror schema/program.fbs.
type Program struct {
	Version  uint32
	Methods  []Method
	Segments [][]byte // segment data; offsets are computed (SegmentAlign-aligned)
	// SegmentAlign is the segments' alignment (0: 128, as the exporter).
	SegmentAlign       int
	ConstantSegment    *ConstantSegment
	NamedData          []NamedData
	InlineDelegateData [][]byte
	ConstantBuffers    [][]byte
	// NoExtendedHeader leaves out "eh00" (and then Segments must be empty).
	NoExtendedHeader bool
	// AliasMethods > 0 writes execution_plan as that many references to
	// one table (Methods[0]), as a hostile file could.
	AliasMethods int
}

// ConstantSegment is Program.constant_segment.
type ConstantSegment struct {
	Index   uint32
	Offsets []uint64
}

// NamedData is one named_data entry.
type NamedData struct {
	Key     string
	Segment uint32
}

// Method is one execution plan with a single chain.
type Method struct {
	Name                string
	Values              []Value
	Inputs, Outputs     []int32
	Instructions        []Instruction
	Operators           []string
	Delegates           []Delegate
	NonConstBufferSizes []int64
}

// Value is an EValue.
type Value struct {
	Kind    pte.ValueKind
	Int     int64
	Double  float64
	Bool    bool
	String  string
	Ints    []int64 // IntList; value indices of a TensorList
	Doubles []float64
	Bools   []bool
	Tensor  *Tensor
}

// Tensor is a Tensor value.
type Tensor struct {
	DType         pte.ScalarType
	Sizes         []int32
	DataBufferIdx uint32
	Dynamism      pte.Dynamism
}

// Instruction is a KernelCall (Kernel) or a DelegateCall.
type Instruction struct {
	Kernel bool
	Index  int32 // op_index or delegate_index
	Args   []int32
}

// Delegate is a BackendDelegate.
type Delegate struct {
	ID           string
	Inline       bool
	Index        uint32
	CompileSpecs []CompileSpec
}

// CompileSpec is one compile spec.
type CompileSpec struct {
	Key   string
	Value []byte
}

// Convenience constructors.

// IntValue is an Int EValue.
func IntValue(n int64) Value { return Value{Kind: pte.KindInt, Int: n} }

// TensorValue is a Tensor EValue.
func TensorValue(dt pte.ScalarType, sizes []int32, buf uint32) Value {
	return Value{Kind: pte.KindTensor, Tensor: &Tensor{DType: dt, Sizes: sizes, DataBufferIdx: buf}}
}

// Constant is a constant method returning v.
func Constant(name string, v Value) Method {
	return Method{Name: name, Values: []Value{v}, Outputs: []int32{0}}
}

// table is a flatbuffer table under construction: fields by id.
type table map[int]any

// Field payloads.
type (
	u8     uint8
	u32    uint32
	i32    uint32
	f32    float32
	i64    int64
	u64    uint64
	f64    float64
	str    string
	ubytes []byte
	i32s   []int32
	i64s   []int64
	u64s   []uint64
	f64s   []float64
	bools  []bool
	tables []table
	alias  struct {
		t table
		n int
	}
)

type writer struct{ b []byte }

func (w *writer) align(n int) {
	for len(w.b)%n != 0 {
		w.b = append(w.b, 0)
	}
}

func (w *writer) put32(at int, v uint32) { binary.LittleEndian.PutUint32(w.b[at:], v) }

func width(v any) int {
	switch v.(type) {
	case u8:
		return 1
	case i64, u64, f64:
		return 8
	}
	return 4
}

// writeTable writes t and everything it refers to, returning its position.
func (w *writer) writeTable(t table) int {
	maxID, wide := -1, false
	for id, v := range t {
		maxID = max(maxID, id)
		wide = wide || width(v) == 8
	}
	if wide {
		w.align(8)
	} else {
		w.align(4) // smaller files; the readers need no more
	}
	pos := len(w.b)
	w.b = append(w.b, 0, 0, 0, 0) // soffset
	fieldPos := make([]int, maxID+1)
	for id := 0; id <= maxID; id++ {
		v, ok := t[id]
		if !ok {
			continue
		}
		for (len(w.b)-pos)%width(v) != 0 {
			w.b = append(w.b, 0)
		}
		fieldPos[id] = len(w.b)
		switch v := v.(type) {
		case u8:
			w.b = append(w.b, byte(v))
		case u32:
			w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v))
		case i32:
			w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v))
		case f32:
			w.b = binary.LittleEndian.AppendUint32(w.b, math.Float32bits(float32(v)))
		case i64:
			w.b = binary.LittleEndian.AppendUint64(w.b, uint64(v))
		case u64:
			w.b = binary.LittleEndian.AppendUint64(w.b, uint64(v))
		case f64:
			w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(float64(v)))
		default:
			w.b = append(w.b, 0, 0, 0, 0) // uoffset, patched below
		}
	}
	size := len(w.b) - pos
	w.align(2)
	vt := len(w.b)
	w.b = binary.LittleEndian.AppendUint16(w.b, uint16(4+2*(maxID+1)))
	w.b = binary.LittleEndian.AppendUint16(w.b, uint16(size))
	for id := 0; id <= maxID; id++ {
		off := 0
		if _, ok := t[id]; ok {
			off = fieldPos[id] - pos
		}
		w.b = binary.LittleEndian.AppendUint16(w.b, uint16(off))
	}
	w.put32(pos, uint32(int32(pos-vt)))
	for id := 0; id <= maxID; id++ {
		v, ok := t[id]
		if !ok || width(v) != 4 {
			continue
		}
		var target int
		switch v := v.(type) {
		case u32, i32, f32:
			continue
		case table:
			target = w.writeTable(v)
		default:
			target = w.writeVector(v)
		}
		w.put32(fieldPos[id], uint32(target-fieldPos[id]))
	}
	return pos
}

func (w *writer) writeVector(v any) int {
	switch v.(type) {
	case i64s, u64s, f64s:
		w.align(8)
	default:
		w.align(4)
	}
	pos := len(w.b)
	switch v := v.(type) {
	case str:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		w.b = append(w.b, v...)
		w.b = append(w.b, 0)
	case ubytes:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		w.b = append(w.b, v...)
	case i32s:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		for _, x := range v {
			w.b = binary.LittleEndian.AppendUint32(w.b, uint32(x))
		}
	case i64s:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		for _, x := range v {
			w.b = binary.LittleEndian.AppendUint64(w.b, uint64(x))
		}
	case u64s:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		for _, x := range v {
			w.b = binary.LittleEndian.AppendUint64(w.b, x)
		}
	case f64s:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		for _, x := range v {
			w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(x))
		}
	case bools:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		for _, x := range v {
			if x {
				w.b = append(w.b, 1)
			} else {
				w.b = append(w.b, 0)
			}
		}
	case tables:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(v)))
		slots := len(w.b)
		for range v {
			w.b = append(w.b, 0, 0, 0, 0)
		}
		for i, t := range v {
			target := w.writeTable(t)
			at := slots + 4*i
			w.put32(at, uint32(target-at))
		}
	case alias:
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(v.n))
		slots := len(w.b)
		for range v.n {
			w.b = append(w.b, 0, 0, 0, 0)
		}
		target := w.writeTable(v.t)
		for i := range v.n {
			at := slots + 4*i
			w.put32(at, uint32(target-at))
		}
	default:
		panic("ptetest: unknown vector type")
	}
	return pos
}

func valueTable(v Value) table {
	t := table{0: u8(v.Kind)}
	switch v.Kind {
	case pte.KindInt:
		t[1] = table{0: i64(v.Int)}
	case pte.KindBool:
		b := u8(0)
		if v.Bool {
			b = 1
		}
		t[1] = table{0: b}
	case pte.KindDouble:
		t[1] = table{0: f64(v.Double)}
	case pte.KindString:
		t[1] = table{0: str(v.String)}
	case pte.KindIntList:
		t[1] = table{0: i64s(v.Ints)}
	case pte.KindDoubleList:
		t[1] = table{0: f64s(v.Doubles)}
	case pte.KindBoolList:
		t[1] = table{0: bools(v.Bools)}
	case pte.KindTensorList, pte.KindOptionalTensorList:
		items := make(i32s, len(v.Ints))
		for i, x := range v.Ints {
			items[i] = int32(x)
		}
		t[1] = table{0: items}
	case pte.KindTensor:
		tt := v.Tensor
		t[1] = table{0: u8(tt.DType), 2: i32s(tt.Sizes), 5: u32(tt.DataBufferIdx), 8: u8(tt.Dynamism)}
	case pte.KindNull:
		t[1] = table{}
	}
	return t
}

func methodTable(m Method) table {
	vals := tables{}
	for _, v := range m.Values {
		vals = append(vals, valueTable(v))
	}
	instrs := tables{}
	for _, in := range m.Instructions {
		if in.Kernel {
			instrs = append(instrs, table{0: u8(1), 1: table{0: i32(in.Index), 1: i32s(in.Args)}})
		} else {
			instrs = append(instrs, table{0: u8(2), 1: table{0: i32(in.Index), 1: i32s(in.Args)}})
		}
	}
	ops := tables{}
	for _, o := range m.Operators {
		ops = append(ops, table{0: str(o), 1: str("")})
	}
	dels := tables{}
	for _, d := range m.Delegates {
		loc := u8(1)
		if d.Inline {
			loc = 0
		}
		specs := tables{}
		for _, s := range d.CompileSpecs {
			specs = append(specs, table{0: str(s.Key), 1: ubytes(s.Value)})
		}
		dels = append(dels, table{0: str(d.ID), 1: table{0: loc, 1: u32(d.Index)}, 2: specs})
	}
	t := table{0: str(m.Name), 2: vals, 3: i32s(nonNil32(m.Inputs)), 4: i32s(nonNil32(m.Outputs)),
		5: tables{table{0: i32s{}, 1: i32s{}, 2: instrs}}, 6: ops, 7: dels}
	if m.NonConstBufferSizes != nil {
		t[8] = i64s(m.NonConstBufferSizes)
	}
	return t
}

func nonNil32(x []int32) []int32 {
	if x == nil {
		return []int32{}
	}
	return x
}

// Build writes the file.
func Build(p Program) []byte {
	align := p.SegmentAlign
	if align == 0 {
		align = 128
	}
	// Segment offsets, relative to the segment base.
	segs := tables{}
	var off uint64
	for _, s := range p.Segments {
		segs = append(segs, table{0: u64(off), 1: u64(uint64(len(s)))})
		off += (uint64(len(s)) + uint64(align) - 1) / uint64(align) * uint64(align)
	}
	plans := tables{}
	for _, m := range p.Methods {
		plans = append(plans, methodTable(m))
	}
	root := table{0: u32(p.Version), 1: plans, 4: segs}
	if p.AliasMethods > 0 {
		root[1] = alias{methodTable(p.Methods[0]), p.AliasMethods}
	}
	if p.ConstantSegment != nil {
		root[5] = table{0: u32(p.ConstantSegment.Index), 1: u64s(p.ConstantSegment.Offsets)}
	}
	if p.NamedData != nil {
		nd := tables{}
		for _, n := range p.NamedData {
			nd = append(nd, table{0: str(n.Key), 1: u32(n.Segment)})
		}
		root[7] = nd
	}
	if p.InlineDelegateData != nil {
		bl := tables{}
		for _, b := range p.InlineDelegateData {
			bl = append(bl, table{0: ubytes(b)})
		}
		root[3] = bl
	}
	if p.ConstantBuffers != nil {
		bl := tables{}
		for _, b := range p.ConstantBuffers {
			bl = append(bl, table{0: ubytes(b)})
		}
		root[2] = bl
	}

	w := &writer{b: make([]byte, 40)}
	copy(w.b[4:], "ET12")
	rootPos := w.writeTable(root)
	w.put32(0, uint32(rootPos))
	programSize := len(w.b)
	if p.NoExtendedHeader {
		return w.b
	}
	w.align(align)
	base := len(w.b)
	for i, s := range p.Segments {
		w.b = append(w.b, s...)
		if i < len(p.Segments)-1 {
			w.align(align)
		}
	}
	copy(w.b[8:], "eh00")
	binary.LittleEndian.PutUint32(w.b[12:], 32)
	binary.LittleEndian.PutUint64(w.b[16:], uint64(programSize))
	binary.LittleEndian.PutUint64(w.b[24:], uint64(base))
	binary.LittleEndian.PutUint64(w.b[32:], uint64(len(w.b)-base))
	return w.b
}
