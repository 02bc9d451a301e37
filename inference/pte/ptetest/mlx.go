package ptetest

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"etchat/inference/mlxgraph"
)

// Fields is a flatbuffer table given as field id → value. Values are
// uint8, int8, bool, uint32, int32, float32, int64, float64, string, []byte,
// []int32, Fields or []Fields; anything else panics.
type Fields map[int]any

func (fs Fields) table() table {
	t := table{}
	for id, v := range fs {
		switch v := v.(type) {
		case uint8:
			t[id] = u8(v)
		case int8:
			t[id] = u8(uint8(v))
		case bool:
			t[id] = u8(0)
			if v {
				t[id] = u8(1)
			}
		case uint32:
			t[id] = u32(v)
		case int32:
			t[id] = i32(uint32(v))
		case float32:
			t[id] = f32(v)
		case int64:
			t[id] = i64(v)
		case float64:
			t[id] = f64(v)
		case string:
			t[id] = str(v)
		case []byte:
			t[id] = ubytes(v)
		case []int32:
			t[id] = i32s(v)
		case Fields:
			t[id] = v.table()
		case []Fields:
			ts := make(tables, len(v))
			for i, f := range v {
				ts[i] = f.table()
			}
			t[id] = ts
		default:
			panic(fmt.Sprintf("ptetest: field %d has unsupported type %T", id, v))
		}
	}
	return t
}

// MLXNode is one instruction of an MLX graph: the OpNode union member by
// name and its table.
type MLXNode struct {
	Kind   string
	Fields Fields
	// Type, with Kind "", writes that union member number as it is: a
	// member past the reader's schema stands for a newer serializer's op.
	Type uint8
}

// MLXSlot is a SlotVariant: a tensor (Type 0) or value slot.
type MLXSlot struct {
	Idx  uint32
	Type uint8
}

// MLXGraph is what MLXBlob writes; fields mirror the MLX delegate's
// schema.fbs (MLXGraph).
type MLXGraph struct {
	Version string
	// Counts are num_constant_tensors, num_input_tensors,
	// num_output_tensors, num_mutable_buffer_tensors, num_temp_tensors and
	// num_values.
	Counts                          [6]uint32
	Chains                          [][]MLXNode
	MainChain                       uint32
	InitChain                       int32 // -1: none
	Inputs, Outputs, MutableBuffers []MLXSlot
	NamedSlots                      map[string]MLXSlot
	// TensorMeta: one entry per tensor slot, shape as (value, min, max).
	TensorMeta []MLXTensorMeta
	Data       []byte // the blob's own data segment, after the flatbuffer
}

// MLXTensorMeta is one TensorMeta entry.
type MLXTensorMeta struct {
	DType    int8
	Shape    [][3]int32
	DimOrder []byte
}

var opTypes = func() map[string]uint8 {
	m := map[string]uint8{}
	for i := 1; i <= mlxgraph.NumOpTypes(); i++ {
		m[mlxgraph.OpName(i)] = uint8(i)
	}
	return m
}()

func slotTables(ss []MLXSlot) tables {
	out := tables{}
	for _, s := range ss {
		out = append(out, table{0: u32(s.Idx), 1: u8(s.Type)})
	}
	return out
}

// MLXBlob writes an MLX delegate blob: the 24-byte header ("MLX0", data
// offset and size), the MLXGraph flatbuffer and the data segment. A node
// kind the union does not know panics.
func MLXBlob(g MLXGraph) []byte {
	chains := tables{}
	for _, c := range g.Chains {
		ins := tables{}
		for _, n := range c {
			typ, ok := opTypes[n.Kind]
			if n.Kind == "" && n.Type != 0 {
				typ, ok = n.Type, true
			}
			if !ok {
				panic("ptetest: unknown MLX node kind " + n.Kind)
			}
			ins = append(ins, table{0: u8(typ), 1: n.Fields.table()})
		}
		chains = append(chains, table{0: ins})
	}
	root := table{0: str(g.Version), 7: chains, 8: u32(g.MainChain), 9: i32(uint32(g.InitChain)),
		10: slotTables(g.Inputs), 11: slotTables(g.Outputs), 12: slotTables(g.MutableBuffers)}
	for i, c := range g.Counts {
		root[1+i] = u32(c)
	}
	if len(g.NamedSlots) > 0 {
		ns := tables{}
		for _, name := range slices.Sorted(maps.Keys(g.NamedSlots)) {
			s := g.NamedSlots[name]
			ns = append(ns, table{0: str(name), 1: table{0: u32(s.Idx), 1: u8(s.Type)}})
		}
		root[13] = ns
	}
	if len(g.TensorMeta) > 0 {
		ms := tables{}
		for _, m := range g.TensorMeta {
			dims := tables{}
			for _, d := range m.Shape {
				dims = append(dims, table{0: i32(uint32(d[0])), 1: i32(uint32(d[1])), 2: i32(uint32(d[2]))})
			}
			ms = append(ms, table{0: dims, 1: u8(uint8(m.DType)), 2: ubytes(m.DimOrder)})
		}
		root[14] = ms
	}
	w := &writer{b: make([]byte, 4)}
	w.put32(0, uint32(w.writeTable(root)))
	w.align(8)
	head := make([]byte, mlxgraph.HeaderSize)
	copy(head[4:], mlxgraph.Magic)
	binary.LittleEndian.PutUint64(head[8:], uint64(mlxgraph.HeaderSize+len(w.b)))
	binary.LittleEndian.PutUint64(head[16:], uint64(len(g.Data)))
	out := append(head, w.b...)
	return append(out, g.Data...)
}

// nodeShapes gives, for every node kind package mlxgraph decodes into a
// typed struct, its table's fields in id order, one letter each:
// t tensor slot, v value slot (both uint32), i int32, f float32, b bool,
// 8 int8, s string, I []int32, T []Tid, o IntOrVid, O []IntOrVid,
// F FloatOrVid, V VidOrTid, X IntOrVidOrTid. Read from mlxgraph's decoders;
// TestMLXNodesCoverDecoders (package mlxgraph_test) fails when a decoded kind
// is missing here.
var nodeShapes = map[string]string{
	"NoopNode": "", "IdCopyNode": "tt", "AddmmNode": "ttttff", "ItemIntNode": "tv", "ExpandDimsNode": "tti",
	"TileNode": "ttO", "TakeAlongAxisNode": "ttti", "TakeNode": "ttXi", "RMSNormNode": "tttf",
	"LayerNormNode": "ttttf", "RopeNode": "ttiVtbff", "SdpaNode": "ttttftb", "UpdateAndAttendNode": "tttttif8",
	"SymSizeNode": "tiv", "GeluNode": "tts", "ARangeNode": "tooo8", "SqueezeNode": "ttI", "SplitNode": "tTOi",
	"SoftmaxNode": "ttib", "BroadcastToNode": "ttO", "WhereNode": "tttt", "ReshapeNode": "ttO",
	"TransposeNode": "ttI", "SliceNode": "ttoooi", "AsTypeNode": "tt8", "ConcatenateNode": "Tti",
	"FullNode": "tOF8", "FullLikeNode": "ttF8", "ArgmaxNode": "ttib", "ArgminNode": "ttib",
	"SliceUpdateNode": "tttoooi", "IndexCopyNode": "tttti", "TrilNode": "tti", "TriuNode": "tti",
	"CumsumNode": "ttibb", "QuantizedMatmulNode": "tttttiisb", "DequantizeNode": "ttttiist8", "StackNode": "Tti",
}

func init() {
	for _, k := range []string{"AddNode", "MultiplyNode", "DivideNode", "SubtractNode", "MaximumNode", "MinimumNode",
		"LessNode", "LessEqualNode", "GreaterNode", "GreaterEqualNode", "EqualNode", "NotEqualNode", "LogicalAndNode",
		"LogicalOrNode", "PowerNode", "FloorDivideNode", "RemainderNode"} {
		nodeShapes[k] = "ttt"
	}
	for _, k := range []string{"AddIntNode", "SubtractIntNode", "MultiplyIntNode", "FloorDivideIntNode", "ModIntNode"} {
		nodeShapes[k] = "oov"
	}
	for _, k := range []string{"SiluNode", "SigmoidNode", "TanhNode", "RsqrtNode", "LogNode", "ContiguousNode",
		"LogicalNotNode", "ExpNode", "SinNode", "CosNode", "ErfNode", "SqrtNode", "AbsNode", "NegNode", "SquareNode",
		"ReciprocalNode"} {
		nodeShapes[k] = "tt"
	}
	for _, k := range []string{"SumNode", "MeanNode", "MaxNode", "MinNode"} {
		nodeShapes[k] = "ttIb"
	}
	// Decoded for the CPU engine's op table (issue 13).
	for _, k := range []string{"FloorNode", "CeilNode", "TanNode", "ArcsinNode", "ArccosNode", "ArctanNode", "SinhNode",
		"CoshNode", "ArcsinhNode", "ArccoshNode", "ArctanhNode", "Log2Node", "Log10Node", "Log1pNode", "Expm1Node", "SignNode",
		"BitwiseInvertNode"} {
		nodeShapes[k] = "tt"
	}
	for _, k := range []string{"Atan2Node", "LogAddExpNode", "BitwiseAndNode", "BitwiseOrNode", "BitwiseXorNode"} {
		nodeShapes[k] = "ttt"
	}
	for _, k := range []string{"LogSumExpNode", "ProdNode", "AnyNode", "AllNode", "MedianNode"} {
		nodeShapes[k] = "ttIb"
	}
	for k, v := range map[string]string{"RoundNode": "tti", "VarNode": "ttIbi", "StdNode": "ttIbi", "ClipNode": "tttt",
		"RepeatNode": "ttoi", "SortNode": "tti", "ArgsortNode": "tti", "PadNode": "ttOsf", "TriNode": "tooi8", "RollNode": "ttOI"} {
		nodeShapes[k] = v
	}
}

// NodeKinds lists the node kinds MLXNodeOf can fill, sorted.
func NodeKinds() []string {
	var out []string
	for i := 1; i <= mlxgraph.NumOpTypes(); i++ {
		if _, ok := nodeShapes[mlxgraph.OpName(i)]; ok {
			out = append(out, mlxgraph.OpName(i))
		}
	}
	return out
}

// MLXNodeOf is a node of the given kind with every field set; the slots
// count up from base (seeded so that different nodes differ). ok is false
// for a kind without a known shape.
func MLXNodeOf(kind string, base uint32) (MLXNode, bool) {
	shape, ok := nodeShapes[kind]
	if !ok {
		return MLXNode{}, false
	}
	fs := Fields{}
	for id, c := range shape {
		n := base + uint32(id)
		switch c {
		case 't', 'v':
			fs[id] = n
		case 'i':
			fs[id] = int32(id) - 1
		case 'f':
			fs[id] = float32(0.5)
		case 'b':
			fs[id] = true
		case '8':
			fs[id] = int8(6)
		case 's':
			fs[id] = "tanh"
			if kind != "GeluNode" {
				fs[id] = "affine"
			}
		case 'I':
			fs[id] = []int32{0, 2, 1}
		case 'T':
			fs[id] = []int32{int32(n), int32(n + 1)}
		case 'o':
			fs[id] = Fields{0: int64(id), 1: n, 2: id%2 == 0}
		case 'O':
			fs[id] = []Fields{{0: int64(1)}, {1: n, 2: true}}
		case 'F':
			fs[id] = Fields{0: 1.5, 1: n, 2: false}
		case 'V':
			fs[id] = Fields{0: n, 1: n + 1, 2: true}
		case 'X':
			fs[id] = Fields{0: int64(3), 1: n, 2: n + 1, 3: uint8(id % 3)}
		}
	}
	return MLXNode{Kind: kind, Fields: fs}, true
}

// EveryNodeGraph is a small valid graph whose main chain holds one node of
// every kind in NodeKinds (plus an init chain with a Noop, named slots and
// tensor metadata), and 16 bytes of data.
func EveryNodeGraph() MLXGraph {
	var main []MLXNode
	for i, k := range NodeKinds() {
		n, _ := MLXNodeOf(k, uint32(i%8))
		main = append(main, n)
	}
	return MLXGraph{
		Version: "1",
		Counts:  [6]uint32{2, 2, 1, 1, 4, 3},
		Chains:  [][]MLXNode{main, {{Kind: "NoopNode", Fields: Fields{}}}},
		// Slots: constants 0-1, inputs 2-3, output 4, mutable buffer 5.
		MainChain: 0, InitChain: 1,
		Inputs:         []MLXSlot{{2, 0}, {0, 1}},
		Outputs:        []MLXSlot{{4, 0}},
		MutableBuffers: []MLXSlot{{5, 0}},
		NamedSlots:     map[string]MLXSlot{"w": {0, 0}, "b": {1, 0}, "n": {2, 2}},
		TensorMeta: []MLXTensorMeta{
			{DType: 6, Shape: [][3]int32{{4, 0, -1}, {8, 0, -1}}, DimOrder: []byte{0, 1}},
			{DType: 15, Shape: [][3]int32{{-1, 1, 64}}, DimOrder: []byte{0}},
		},
		Data: []byte("0123456789abcdef"),
	}
}
