package ptetest

import (
	"encoding/binary"
	"math"

	"etchat/inference/pte"
)

// Seed is a named synthetic file for fuzz corpora.
type Seed struct {
	Name string
	Data []byte
}

// SmallGraph is a valid MLX graph of a few nodes, one of each field shape
// (tensor and value slots, scalars, strings, vectors and the IntOrVid,
// FloatOrVid, VidOrTid and IntOrVidOrTid tables): small enough to keep a
// .pte seed at a few hundred bytes.
func SmallGraph() MLXGraph {
	g := EveryNodeGraph()
	g.Chains[0] = nil
	for i, k := range []string{"AddmmNode", "RopeNode", "TakeNode", "FullNode", "SplitNode", "GeluNode", "AddIntNode"} {
		n, _ := MLXNodeOf(k, uint32(i))
		g.Chains[0] = append(g.Chains[0], n)
	}
	g.TensorMeta = g.TensorMeta[:1]
	return g
}

func constData() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[16:], math.Float32bits(1.5)) // buffer 1: Float [2]
	binary.LittleEndian.PutUint32(b[20:], math.Float32bits(-2))
	binary.LittleEndian.PutUint64(b[32:], 1<<40)  // buffer 2: Long [1]
	binary.LittleEndian.PutUint16(b[48:], 0x3fc0) // buffer 3: BFloat16 1.5, Half 1.9375
	binary.LittleEndian.PutUint16(b[50:], 0xc000)
	return b
}

// constants is one constant method of every value kind the reader
// evaluates, tensors reading constant buffers 1–3.
func constants() []Method {
	return []Method{
		Constant("get_int", IntValue(-7)),
		Constant("get_double", Value{Kind: pte.KindDouble, Double: 0.25}),
		Constant("get_bool", Value{Kind: pte.KindBool, Bool: true}),
		Constant("get_string", Value{Kind: pte.KindString, String: "llama"}),
		Constant("get_ints", Value{Kind: pte.KindIntList, Ints: []int64{128001, 128009}}),
		Constant("get_doubles", Value{Kind: pte.KindDoubleList, Doubles: []float64{0.5, 2}}),
		Constant("get_bools", Value{Kind: pte.KindBoolList, Bools: []bool{true, false}}),
		Constant("get_null", Value{Kind: pte.KindNull}),
		Constant("get_tensors", Value{Kind: pte.KindTensorList, Ints: []int64{0}}),
		Constant("get_opt_tensors", Value{Kind: pte.KindOptionalTensorList, Ints: []int64{0, -1}}),
		Constant("get_f32", TensorValue(pte.Float, []int32{2}, 1)),
		Constant("get_i64", TensorValue(pte.Long, []int32{1}, 2)),
		Constant("get_bf16", TensorValue(pte.BFloat16, []int32{1, 2}, 3)),
		Constant("get_f16", TensorValue(pte.Half, []int32{2}, 3)),
	}
}

// forward is a method with inputs and outputs of several kinds, a kernel
// call, two delegate calls (MLX in segment mlxSeg, another inline) and
// planned memory.
func forward(mlxSeg uint32) Method {
	return Method{
		Name: "forward",
		Values: []Value{
			{Kind: pte.KindTensor, Tensor: &Tensor{DType: pte.Long, Sizes: []int32{1, 8}, Dynamism: pte.DynamicBound}},
			TensorValue(pte.Long, []int32{8}, 0),
			TensorValue(pte.Float, []int32{1, 8, 16}, 0),
			IntValue(3),
			{Kind: pte.KindDoubleList, Doubles: []float64{1e-5}},
			{Kind: pte.KindTensorList, Ints: []int64{0, 1}},
		},
		Inputs:  []int32{0, 1},
		Outputs: []int32{2},
		Instructions: []Instruction{
			{Kernel: true, Index: 0, Args: []int32{0, 3, 2}},
			{Index: 0, Args: []int32{0, 1, 2}},
			{Index: 1, Args: []int32{2}},
		},
		Operators: []string{"aten::add"},
		Delegates: []Delegate{
			{ID: "MLXBackend", Index: mlxSeg, CompileSpecs: []CompileSpec{{Key: "use_offgraph_cache", Value: []byte{1}}}},
			{ID: "OtherBackend", Inline: true, Index: 0},
		},
		NonConstBufferSizes: []int64{0, 256},
	}
}

// FullProgram is a small .pte that uses every section the reader follows:
// the extended header, segments (constant data, an MLX delegate blob holding
// graph, named weights), a tensor constant, a method with segment and
// inline delegates, named data and inline delegate data. Segments are
// 8-aligned to keep it small.
func FullProgram(graph MLXGraph) Program {
	return Program{
		Segments:           [][]byte{constData(), MLXBlob(graph), make([]byte, 32)},
		SegmentAlign:       8,
		ConstantSegment:    &ConstantSegment{Index: 0, Offsets: []uint64{0, 16, 32, 48}},
		NamedData:          []NamedData{{Key: "model.w", Segment: 2}, {Key: "model.b", Segment: 2}},
		InlineDelegateData: [][]byte{[]byte("inline-delegate")},
		Methods:            []Method{forward(1), constants()[12]},
	}
}

// Seeds are the synthetic .pte files fuzz targets start from, each a few
// hundred bytes to a few KB: the full program with a small graph and with
// a graph of every node kind, constant methods of every kind (scalars and
// lists; tensors in a constant segment), deprecated inline constant
// buffers with an inline MLX delegate, a file without the extended header,
// and aliased methods.
func Seeds() []Seed {
	cs := constants()
	inline := Program{
		ConstantBuffers:    [][]byte{nil, constData()[16:24], constData()[32:40], constData()[48:52]},
		InlineDelegateData: [][]byte{MLXBlob(SmallGraph())},
		Methods: []Method{
			cs[10], cs[13],
			{Name: "forward", Values: []Value{TensorValue(pte.Long, []int32{1}, 0)}, Inputs: []int32{0}, Outputs: []int32{0},
				Instructions: []Instruction{{Index: 0, Args: []int32{0}}},
				Delegates:    []Delegate{{ID: "MLXBackend", Inline: true, Index: 0}}},
		},
	}
	return []Seed{
		{"full", Build(FullProgram(SmallGraph()))},
		{"every-node", Build(FullProgram(EveryNodeGraph()))},
		{"scalar-constants", Build(Program{Methods: cs[:10]})},
		{"tensor-constants", Build(Program{Segments: [][]byte{constData()}, SegmentAlign: 8,
			ConstantSegment: &ConstantSegment{Index: 0, Offsets: []uint64{0, 16, 32, 48}}, Methods: cs[10:]})},
		{"inline", Build(inline)},
		{"no-extended-header", Build(Program{NoExtendedHeader: true, Methods: cs[:2]})},
		{"aliased-methods", Build(Program{AliasMethods: 4, Methods: cs[:1]})},
	}
}

// Truncations are b cut at n evenly spaced lengths (never whole).
func Truncations(b []byte, n int) [][]byte {
	var out [][]byte
	for i := 1; i <= n; i++ {
		out = append(out, b[:len(b)*i/(n+1)])
	}
	return out
}

// BitFlips are n copies of b, each with one bit flipped at spread,
// deterministic positions.
func BitFlips(b []byte, n int) [][]byte {
	var out [][]byte
	if len(b) == 0 {
		return nil
	}
	for i := range n {
		c := append([]byte(nil), b...)
		pos := (i*7919 + 13) % len(c)
		c[pos] ^= 1 << (i % 8)
		out = append(out, c)
	}
	return out
}
