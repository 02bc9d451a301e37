// Package mlxgraph reads the MLX delegate blob that ExecuTorch's MLX backend
// stores in a .pte: the 24-byte blob header and the MLXGraph flatbuffer
// behind it (tensor and value slot counts, I/O maps, named slots, tensor
// metadata and the instruction chains with one typed Go struct per node).
//
// The flatbuffer is read with hand-written, bounds-checked accessors; every
// offset is checked against the blob, vector lengths are checked against the
// bytes that remain, and hostile input yields an error, never a panic.
package mlxgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Magic is the blob's magic at offset 4.
const Magic = "MLX0"

// HeaderSize is the size of the blob header before the flatbuffer.
const HeaderSize = 24

// SlotType says which array a slot indexes.
type SlotType uint8

// Slot types (schema SlotType).
const (
	TensorSlot     SlotType = 0
	IntValueSlot   SlotType = 1
	FloatValueSlot SlotType = 2
	BoolValueSlot  SlotType = 3
)

func (s SlotType) String() string {
	switch s {
	case TensorSlot:
		return "tensor"
	case IntValueSlot:
		return "int"
	case FloatValueSlot:
		return "float"
	case BoolValueSlot:
		return "bool"
	}
	return fmt.Sprintf("slot_type_%d", uint8(s))
}

// Slot is a tensor or value slot.
type Slot struct {
	Idx  int
	Type SlotType
}

// IsTensor reports whether the slot is a tensor slot.
func (s Slot) IsTensor() bool { return s.Type == TensorSlot }

// NamedSlot maps a name (a named_data key or an I/O name) to a slot.
type NamedSlot struct {
	Name string
	Slot Slot
}

// Dim is one dimension of a tensor's shape: Value ≥ 0 is static; Value -1 is
// dynamic with bounds Min..Max (Max -1 = unbounded).
type Dim struct {
	Value, Min, Max int64
}

// Dynamic reports whether the dimension is dynamic.
func (d Dim) Dynamic() bool { return d.Value < 0 }

// TensorMeta is the recorded dtype (ExecuTorch ScalarType number), shape and
// dim order of a tensor slot.
type TensorMeta struct {
	DType    int
	Shape    []Dim
	DimOrder []uint8
}

// Instruction is one node: its type name ("AddmmNode") and, for the types
// this package decodes, a pointer to the typed node (*AddmmNode); Op is nil
// for node types that are recognised by name only.
type Instruction struct {
	Kind string
	Op   any
}

// Graph is a parsed MLX delegate.
type Graph struct {
	Version string

	NumConstantTensors, NumInputTensors, NumOutputTensors int
	NumMutableBufferTensors, NumTempTensors, NumValues    int

	// Chains are the instruction chains; MainChain is run on every execute,
	// InitChain (-1 = none) once at load.
	Chains               [][]Instruction
	MainChain, InitChain int
	// Instructions is Chains[MainChain].
	Instructions []Instruction

	Inputs, Outputs, MutableBuffers []Slot
	NamedSlots                      []NamedSlot
	// TensorMeta is indexed by tensor slot; nil where absent.
	TensorMeta []*TensorMeta

	// DataSegmentOffset and DataSegmentSize locate the constant data the
	// blob itself carries (offset from the blob start).
	DataSegmentOffset, DataSegmentSize uint64
}

// NumTensors is the number of tensor slots: constants, inputs, outputs,
// mutable buffers and temporaries.
func (g *Graph) NumTensors() int {
	return g.NumConstantTensors + g.NumInputTensors + g.NumOutputTensors + g.NumMutableBufferTensors + g.NumTempTensors
}

// Histogram counts the instructions of every chain by node type.
func (g *Graph) Histogram() map[string]int {
	h := map[string]int{}
	for _, c := range g.Chains {
		for _, in := range c {
			h[in.Kind]++
		}
	}
	return h
}

// Kinds lists the node types that occur, sorted.
func (g *Graph) Kinds() []string {
	h := g.Histogram()
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Slot looks a named slot up by its exact name.
func (g *Graph) Slot(name string) (Slot, bool) {
	for _, ns := range g.NamedSlots {
		if ns.Name == name {
			return ns.Slot, true
		}
	}
	return Slot{}, false
}

// Meta returns the tensor metadata of tensor slot t, or nil.
func (g *Graph) Meta(t Tid) *TensorMeta {
	if int(t) < len(g.TensorMeta) {
		return g.TensorMeta[t]
	}
	return nil
}

// maxCount bounds the slot counts so that sizes computed from them cannot
// overflow; real graphs are far below it.
const maxCount = 1 << 24

// Parse reads an MLX delegate blob (header + flatbuffer).
func Parse(blob []byte) (*Graph, error) {
	if len(blob) < HeaderSize+4 {
		return nil, fmt.Errorf("mlxgraph: blob of %d bytes is too short for the %d-byte header", len(blob), HeaderSize)
	}
	if string(blob[4:8]) != Magic {
		return nil, fmt.Errorf("mlxgraph: bad magic %q (want %q)", blob[4:8], Magic)
	}
	dataOff := binary.LittleEndian.Uint64(blob[8:])
	dataSize := binary.LittleEndian.Uint64(blob[16:])
	if dataOff < HeaderSize || dataOff > uint64(len(blob)) || dataSize > uint64(len(blob))-dataOff {
		return nil, fmt.Errorf("mlxgraph: data segment [%d, +%d) outside the %d-byte blob", dataOff, dataSize, len(blob))
	}
	g, err := ParseFlatbuffer(blob[HeaderSize:dataOff])
	if err != nil {
		return nil, err
	}
	g.DataSegmentOffset, g.DataSegmentSize = dataOff, dataSize
	return g, nil
}

// ParseFlatbuffer reads a bare MLXGraph flatbuffer (no blob header).
func ParseFlatbuffer(fb []byte) (*Graph, error) {
	r := newReader(fb)
	root := int(r.u32(0))
	t := r.table(root, "MLXGraph")
	if r.err != nil {
		return nil, fmt.Errorf("mlxgraph: %w", r.err)
	}
	g := &Graph{Version: t.str(0)}
	counts := []*int{&g.NumConstantTensors, &g.NumInputTensors, &g.NumOutputTensors,
		&g.NumMutableBufferTensors, &g.NumTempTensors, &g.NumValues}
	names := []string{"num_constant_tensors", "num_input_tensors", "num_output_tensors",
		"num_mutable_buffer_tensors", "num_temp_tensors", "num_values"}
	for i, p := range counts {
		v := t.u32(1+i, 0)
		if v > maxCount {
			return nil, fmt.Errorf("mlxgraph: %s = %d is implausibly large", names[i], v)
		}
		*p = int(v)
	}

	if !t.required(7, "instruction_chains") {
		return nil, fmt.Errorf("mlxgraph: %w", r.err)
	}
	for ci, ct := range t.tables(7, "InstructionChain") {
		if !ct.required(0, "instructions") {
			break
		}
		its := ct.tables(0, "Instruction")
		chain := make([]Instruction, 0, len(its))
		for ii, it := range its {
			in, err := readInstruction(it)
			if err != nil {
				return nil, fmt.Errorf("mlxgraph: chain %d instruction %d: %w", ci, ii, err)
			}
			chain = append(chain, in)
		}
		g.Chains = append(g.Chains, chain)
	}
	g.MainChain = int(t.u32(8, 0))
	g.InitChain = int(t.i32(9, -1))

	g.Inputs = slots(t, 10)
	g.Outputs = slots(t, 11)
	g.MutableBuffers = slots(t, 12)
	for _, nt := range t.tables(13, "NamedSlot") {
		nt.required(0, "name")
		nt.required(1, "slot")
		st, _ := nt.sub(1, "SlotVariant")
		g.NamedSlots = append(g.NamedSlots, NamedSlot{Name: nt.str(0), Slot: slot(st)})
	}
	for _, mt := range t.tables(14, "TensorMeta") {
		if !mt.required(0, "shape") {
			break
		}
		m := &TensorMeta{DType: int(mt.i8(1, 0)), DimOrder: mt.u8s(2)}
		for _, dt := range mt.tables(0, "ShapeDim") {
			m.Shape = append(m.Shape, Dim{Value: int64(dt.i32(0, -1)), Min: int64(dt.i32(1, 0)), Max: int64(dt.i32(2, -1))})
		}
		g.TensorMeta = append(g.TensorMeta, m)
	}
	if r.err != nil {
		return nil, fmt.Errorf("mlxgraph: %w", r.err)
	}
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("mlxgraph: %w", err)
	}
	if g.MainChain < len(g.Chains) {
		g.Instructions = g.Chains[g.MainChain]
	}
	return g, nil
}

func slots(t table, id int) []Slot {
	ts := t.tables(id, "SlotVariant")
	out := make([]Slot, len(ts))
	for i, st := range ts {
		out[i] = slot(st)
	}
	return out
}

func slot(st table) Slot {
	return Slot{Idx: int(st.u32(0, 0)), Type: SlotType(st.u8(1, 0))}
}

// UnknownOpError: an instruction's op type is not a member of the OpNode
// union this reader was generated from: the graph was written by a newer
// MLX delegate serializer (its schema appends new ops at the end).
type UnknownOpError struct {
	Type  int // the union member's number
	Known int // the members this reader knows: 1..Known
}

func (e *UnknownOpError) Error() string {
	return fmt.Sprintf("unknown op union type %d (this reader knows 1..%d)", e.Type, e.Known)
}

func readInstruction(it table) (Instruction, error) {
	typ := int(it.u8(0, 0))
	if it.r.err != nil {
		return Instruction{}, it.r.err
	}
	name := OpName(typ)
	if name == "" {
		return Instruction{}, &UnknownOpError{Type: typ, Known: len(opNames)}
	}
	if !it.has(1) {
		return Instruction{}, fmt.Errorf("%s: op table missing", name)
	}
	nt, ok := it.sub(1, name)
	if !ok {
		return Instruction{}, it.r.err
	}
	in := Instruction{Kind: name}
	if dec := decoders[name]; dec != nil {
		in.Op = dec(nt)
	}
	if it.r.err != nil {
		return Instruction{}, it.r.err
	}
	return in, nil
}

// check validates the counts and slot references against each other.
func (g *Graph) check() error {
	if len(g.Chains) == 0 {
		return errors.New("graph has no instruction chains")
	}
	if g.MainChain >= len(g.Chains) {
		return fmt.Errorf("main_chain_idx %d out of range (%d chains)", g.MainChain, len(g.Chains))
	}
	if g.InitChain < -1 || g.InitChain >= len(g.Chains) {
		return fmt.Errorf("init_chain_idx %d out of range (%d chains)", g.InitChain, len(g.Chains))
	}
	nt := g.NumTensors()
	if nt > maxCount {
		return fmt.Errorf("%d tensor slots is implausibly many", nt)
	}
	if len(g.TensorMeta) > nt {
		return fmt.Errorf("%d tensor_meta entries for %d tensor slots", len(g.TensorMeta), nt)
	}
	checkSlot := func(what string, s Slot) error {
		switch {
		case s.Type == TensorSlot && s.Idx >= nt:
			return fmt.Errorf("%s: tensor slot %d out of range (%d tensors)", what, s.Idx, nt)
		case s.Type != TensorSlot && s.Type <= BoolValueSlot && s.Idx >= g.NumValues:
			return fmt.Errorf("%s: value slot %d out of range (%d values)", what, s.Idx, g.NumValues)
		case s.Type > BoolValueSlot:
			return fmt.Errorf("%s: unknown slot type %d", what, s.Type)
		}
		return nil
	}
	for _, l := range []struct {
		what string
		s    []Slot
	}{{"input_map", g.Inputs}, {"output_map", g.Outputs}, {"mutable_buffer_map", g.MutableBuffers}} {
		for _, s := range l.s {
			if err := checkSlot(l.what, s); err != nil {
				return err
			}
		}
	}
	for _, ns := range g.NamedSlots {
		if err := checkSlot("named slot "+ns.Name, ns.Slot); err != nil {
			return err
		}
	}
	return nil
}

// String is the node type and its operands, for logs and dumps.
func (in Instruction) String() string {
	if in.Op == nil {
		return in.Kind
	}
	return fmt.Sprintf("%s%+v", in.Kind, in.Op)
}
