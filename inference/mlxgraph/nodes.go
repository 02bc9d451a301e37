package mlxgraph

// Tid is a tensor slot index.
type Tid uint32

// Vid is a value slot index (an int64, float64 or bool at run time).
type Vid uint32

// IntOrVid is a literal integer or a run-time value.
type IntOrVid struct {
	Literal int64
	Vid     Vid
	IsVid   bool
}

// FloatOrVid is a literal float or a run-time value.
type FloatOrVid struct {
	Literal float64
	Vid     Vid
	IsVid   bool
}

// VidOrTid is a scalar value or a tensor.
type VidOrTid struct {
	Vid   Vid
	Tid   Tid
	IsVid bool
}

// IntOrVidOrTid is a literal, a value or a tensor, told apart by Kind
// (0 literal, 1 vid, 2 tid).
type IntOrVidOrTid struct {
	Literal int64
	Vid     Vid
	Tid     Tid
	Kind    uint8
}

// Kinds of IntOrVidOrTid.
const (
	KindLiteral = 0
	KindVid     = 1
	KindTid     = 2
)

// UnaryNode is the shape shared by the element-wise unary nodes.
type UnaryNode struct{ X, Out Tid }

// BinaryNode is the shape shared by the element-wise binary nodes.
type BinaryNode struct{ A, B, Out Tid }

// IntBinaryNode is the shape of the scalar integer arithmetic nodes.
type IntBinaryNode struct {
	A, B IntOrVid
	Out  Vid
}

// ReduceNode is the shape shared by the axis reductions.
type ReduceNode struct {
	X, Out   Tid
	Axes     []int32
	KeepDims bool
}

// Node types. Unary and binary element-wise nodes are named types of
// UnaryNode / BinaryNode so a type switch can tell them apart.
type (
	NoopNode    struct{}
	IdCopyNode  struct{ X, Out Tid }
	ItemIntNode struct {
		X   Tid
		Out Vid
	}
	AddmmNode struct {
		Mat1, Mat2, Out Tid
		Bias            *Tid
		Alpha, Beta     float32
	}
	ExpandDimsNode struct {
		X, Out Tid
		Axis   int32
	}
	TileNode struct {
		X, Out Tid
		Reps   []IntOrVid
	}
	TakeAlongAxisNode struct {
		X, Indices, Out Tid
		Axis            int32
	}
	TakeNode struct {
		X, Out Tid
		Index  IntOrVidOrTid
		Axis   int32
	}
	RMSNormNode struct {
		X      Tid
		Weight *Tid
		Out    Tid
		Eps    float32
	}
	LayerNormNode struct {
		X, Out       Tid
		Weight, Bias *Tid
		Eps          float32
	}
	RopeNode struct {
		X, Out      Tid
		Dims        int32
		Offset      VidOrTid
		Freqs       *Tid
		Traditional bool
		Base, Scale float32
	}
	SdpaNode struct {
		Q, K, V, Out Tid
		Scale        float32
		Mask         *Tid
		Causal       bool
	}
	UpdateAndAttendNode struct {
		Q, K, V, Position, Out Tid
		LayerID                *int32
		Scale                  *float32
		OutDType               *int8
	}
	SymSizeNode struct {
		A   Tid
		Dim int32
		Out Vid
	}
	GeluNode struct {
		X, Out      Tid
		Approximate string
	}
	ARangeNode struct {
		Out               Tid
		Start, Stop, Step IntOrVid
		ScalarType        *int8
	}
	SqueezeNode struct {
		X, Out Tid
		Dims   []int32
	}
	SplitNode struct {
		X     Tid
		Outs  []Tid
		Sizes []IntOrVid
		Axis  int32
	}
	SoftmaxNode struct {
		X, Out  Tid
		Axis    int32
		Precise bool
	}
	BroadcastToNode struct {
		X, Out Tid
		Shape  []IntOrVid
	}
	WhereNode   struct{ Condition, X, Y, Out Tid }
	ReshapeNode struct {
		X, Out Tid
		Shape  []IntOrVid
	}
	TransposeNode struct {
		X, Out Tid
		Perm   []int32
	}
	SliceNode struct {
		X, Out            Tid
		Axis, Start, Stop IntOrVid
		Step              int32
	}
	AsTypeNode struct {
		X, Out     Tid
		ScalarType int8
	}
	ConcatenateNode struct {
		Tensors []Tid
		Out     Tid
		Axis    int32
	}
	FullNode struct {
		Out        Tid
		Shape      []IntOrVid
		V          FloatOrVid
		ScalarType int8
	}
	FullLikeNode struct {
		X, Out     Tid
		V          FloatOrVid
		ScalarType *int8
	}
	ArgmaxNode struct {
		X, Out   Tid
		Axis     int32
		KeepDims bool
	}
	SliceUpdateNode struct {
		Dst, Update, Out  Tid
		Axis, Start, Stop IntOrVid
		Step              int32
	}
	IndexCopyNode struct {
		Dst, Update, Indices, Out Tid
		Axis                      int32
	}
	TrilNode struct {
		X, Out Tid
		K      int32
	}
	TriuNode   TrilNode
	CumsumNode struct {
		X, Out             Tid
		Axis               int32
		Reverse, Inclusive bool
	}
	StackNode struct {
		Tensors []Tid
		Out     Tid
		Axis    int32
	}
	ArgminNode ArgmaxNode

	// QuantizedMatmulNode is mlx::quantized_matmul(x, w, scales, biases,
	// transpose, group_size, bits, mode): w packed in uint32 words.
	QuantizedMatmulNode struct {
		X, W, Scales, Out Tid
		Biases            *Tid // affine mode only
		GroupSize, Bits   int32
		Mode              string
		Transpose         bool
	}
	// DequantizeNode is mlx::dequantize(w, scales, biases, group_size,
	// bits, mode, global_scale, dtype).
	DequantizeNode struct {
		W, Scales, Out  Tid
		Biases          *Tid
		GroupSize, Bits int32
		Mode            string
		GlobalScale     *Tid  // nvfp4 only
		DType           *int8 // ExecuTorch ScalarType of the output; nil: the scales'
	}

	AddNode          BinaryNode
	MultiplyNode     BinaryNode
	DivideNode       BinaryNode
	SubtractNode     BinaryNode
	MaximumNode      BinaryNode
	MinimumNode      BinaryNode
	LessNode         BinaryNode
	LessEqualNode    BinaryNode
	GreaterNode      BinaryNode
	GreaterEqualNode BinaryNode
	EqualNode        BinaryNode
	NotEqualNode     BinaryNode
	LogicalAndNode   BinaryNode
	LogicalOrNode    BinaryNode
	PowerNode        BinaryNode
	FloorDivideNode  BinaryNode
	RemainderNode    BinaryNode

	AddIntNode         IntBinaryNode
	SubtractIntNode    IntBinaryNode
	MultiplyIntNode    IntBinaryNode
	FloorDivideIntNode IntBinaryNode
	ModIntNode         IntBinaryNode

	SiluNode       UnaryNode
	SigmoidNode    UnaryNode
	TanhNode       UnaryNode
	RsqrtNode      UnaryNode
	LogNode        UnaryNode
	ContiguousNode UnaryNode
	LogicalNotNode UnaryNode
	ExpNode        UnaryNode
	SinNode        UnaryNode
	CosNode        UnaryNode
	ErfNode        UnaryNode
	SqrtNode       UnaryNode
	AbsNode        UnaryNode
	NegNode        UnaryNode
	SquareNode     UnaryNode
	ReciprocalNode UnaryNode

	SumNode  ReduceNode
	MeanNode ReduceNode
	MaxNode  ReduceNode
	MinNode  ReduceNode

	FloorNode         UnaryNode
	CeilNode          UnaryNode
	TanNode           UnaryNode
	ArcsinNode        UnaryNode
	ArccosNode        UnaryNode
	ArctanNode        UnaryNode
	SinhNode          UnaryNode
	CoshNode          UnaryNode
	ArcsinhNode       UnaryNode
	ArccoshNode       UnaryNode
	ArctanhNode       UnaryNode
	Log2Node          UnaryNode
	Log10Node         UnaryNode
	Log1pNode         UnaryNode
	Expm1Node         UnaryNode
	SignNode          UnaryNode
	BitwiseInvertNode UnaryNode
	Atan2Node         BinaryNode
	LogAddExpNode     BinaryNode
	BitwiseAndNode    BinaryNode
	BitwiseOrNode     BinaryNode
	BitwiseXorNode    BinaryNode
	LogSumExpNode     ReduceNode
	ProdNode          ReduceNode
	AnyNode           ReduceNode
	AllNode           ReduceNode
	MedianNode        ReduceNode
	RoundNode         struct {
		X, Out   Tid
		Decimals int32
	}
	// VarNode and StdNode reduce with ddof (the divisor is n − ddof).
	VarNode struct {
		ReduceNode
		DDof int32
	}
	StdNode  VarNode
	ClipNode struct {
		X, Out     Tid
		AMin, AMax *Tid
	}
	RepeatNode struct {
		X, Out  Tid
		Repeats IntOrVid
		Axis    int32
	}
	SortNode struct {
		X, Out Tid
		Axis   int32
	}
	ArgsortNode SortNode
	PadNode     struct {
		X, Out        Tid
		PadWidth      []IntOrVid // (before, after) per dimension
		Mode          string
		ConstantValue float32
	}
	TriNode struct {
		Out        Tid
		N, M       IntOrVid
		K          int32
		ScalarType *int8
	}
	RollNode struct {
		X, Out Tid
		Shift  []IntOrVid
		Axes   []int32
	}
)

// opNames is the OpNode union in schema order: union type value i+1 is
// opNames[i] (0 is NONE).
var opNames = []string{
	"NoopNode", "IdCopyNode", "AddmmNode", "ItemIntNode", "ExpandDimsNode",
	"TileNode", "TakeAlongAxisNode", "TakeNode", "RMSNormNode", "LayerNormNode",
	"RopeNode", "SdpaNode", "AddNode", "AddIntNode", "SubtractIntNode",
	"MultiplyIntNode", "FloorDivideIntNode", "SymSizeNode", "MultiplyNode", "DivideNode",
	"SubtractNode", "Conv1DNode", "Conv2DNode", "Conv3DNode", "GeluNode",
	"ARangeNode", "SiluNode", "SigmoidNode", "TanhNode", "SqueezeNode",
	"SplitNode", "RsqrtNode", "MaximumNode", "MinimumNode", "LogNode",
	"SoftmaxNode", "BroadcastToNode", "PadNode", "WhereNode", "ReshapeNode",
	"TransposeNode", "AsStridedNode", "ContiguousNode", "GatherNode", "SliceNode",
	"AsTypeNode", "ConcatenateNode", "FullNode", "FullLikeNode", "ArgmaxNode",
	"SliceUpdateNode", "IndexCopyNode", "DequantizeNode", "LessNode", "LessEqualNode",
	"GreaterNode", "GreaterEqualNode", "EqualNode", "NotEqualNode", "LogicalNotNode",
	"LogicalAndNode", "LogicalOrNode", "TriNode", "TrilNode", "TriuNode",
	"FloorNode", "CeilNode", "SquareNode", "ExpNode", "SinNode",
	"CosNode", "TanNode", "ArcsinNode", "ArccosNode", "ArctanNode",
	"SinhNode", "CoshNode", "ArcsinhNode", "ArccoshNode", "ArctanhNode",
	"Log2Node", "Log10Node", "Log1pNode", "ErfNode", "Expm1Node",
	"RoundNode", "ReciprocalNode", "SqrtNode", "AbsNode", "NegNode",
	"Atan2Node", "LogAddExpNode", "FloorDivideNode", "PowerNode", "LogSumExpNode",
	"SumNode", "MeanNode", "VarNode", "StdNode", "ProdNode",
	"MaxNode", "MinNode", "ArgminNode", "MedianNode", "ModIntNode",
	"RemainderNode", "ConvTranspose1DNode", "ConvTranspose2DNode", "ConvTranspose3DNode", "ClipNode",
	"CumsumNode", "StackNode", "SignNode", "AnyNode", "AllNode",
	"RepeatNode", "SortNode", "ArgsortNode", "PartitionNode", "ArgPartitionNode",
	"QuantizedMatmulNode", "ScatterAddNode", "GatherMmNode", "GatherQmmNode", "ScanNode",
	"MetalKernelNode", "BitwiseInvertNode", "RollNode", "BitwiseAndNode", "BitwiseOrNode",
	"BitwiseXorNode", "IfNode", "RandomBitsNode", "UpdateAndAttendNode",
}

// OpName is the node type name for an OpNode union type value, or "" when
// the value is outside the union this package knows.
func OpName(unionType int) string {
	if unionType < 1 || unionType > len(opNames) {
		return ""
	}
	return opNames[unionType-1]
}

// NumOpTypes is the number of members of the OpNode union.
func NumOpTypes() int { return len(opNames) }

func (t table) tid(id int, what string) Tid {
	if !t.required(id, what) {
		return 0
	}
	return Tid(t.u32(id, 0))
}

func (t table) optTid(id int) *Tid {
	if !t.has(id) {
		return nil
	}
	v := Tid(t.u32(id, 0))
	return &v
}

func (t table) vid(id int, what string) Vid {
	if !t.required(id, what) {
		return 0
	}
	return Vid(t.u32(id, 0))
}

func (t table) tids(id int) []Tid {
	start, n := t.vec(id, 4)
	out := make([]Tid, n)
	for i := range out {
		out[i] = Tid(t.r.u32(start + 4*i))
	}
	return out
}

func readIntOrVid(s table) IntOrVid {
	return IntOrVid{Literal: s.i64(0, 0), Vid: Vid(s.u32(1, 0)), IsVid: s.boolean(2, false)}
}

func (t table) intOrVid(id int, what string) IntOrVid {
	if !t.required(id, what) {
		return IntOrVid{}
	}
	s, ok := t.sub(id, "IntOrVid")
	if !ok {
		return IntOrVid{}
	}
	return readIntOrVid(s)
}

func (t table) intOrVids(id int) []IntOrVid {
	ts := t.tables(id, "IntOrVid")
	out := make([]IntOrVid, len(ts))
	for i, s := range ts {
		out[i] = readIntOrVid(s)
	}
	return out
}

func (t table) floatOrVid(id int, what string) FloatOrVid {
	if !t.required(id, what) {
		return FloatOrVid{}
	}
	s, ok := t.sub(id, "FloatOrVid")
	if !ok {
		return FloatOrVid{}
	}
	return FloatOrVid{Literal: s.f64(0, 0), Vid: Vid(s.u32(1, 0)), IsVid: s.boolean(2, false)}
}

func (t table) vidOrTid(id int, what string) VidOrTid {
	if !t.required(id, what) {
		return VidOrTid{}
	}
	s, ok := t.sub(id, "VidOrTid")
	if !ok {
		return VidOrTid{}
	}
	return VidOrTid{Vid: Vid(s.u32(0, 0)), Tid: Tid(s.u32(1, 0)), IsVid: s.boolean(2, false)}
}

func (t table) intOrVidOrTid(id int, what string) IntOrVidOrTid {
	if !t.required(id, what) {
		return IntOrVidOrTid{}
	}
	s, ok := t.sub(id, "IntOrVidOrTid")
	if !ok {
		return IntOrVidOrTid{}
	}
	v := IntOrVidOrTid{Literal: s.i64(0, 0), Vid: Vid(s.u32(1, 0)), Tid: Tid(s.u32(2, 0)), Kind: s.u8(3, 0)}
	if v.Kind > KindTid {
		t.r.fail("%s: IntOrVidOrTid kind %d is not 0, 1 or 2", t.name, v.Kind)
	}
	return v
}

func unary(t table) UnaryNode { return UnaryNode{X: t.tid(0, "x"), Out: t.tid(1, "out")} }

func binaryOp(t table) BinaryNode {
	return BinaryNode{A: t.tid(0, "a"), B: t.tid(1, "b"), Out: t.tid(2, "out")}
}

func intBinary(t table) IntBinaryNode {
	return IntBinaryNode{A: t.intOrVid(0, "a"), B: t.intOrVid(1, "b"), Out: t.vid(2, "out")}
}

func reduce(t table) ReduceNode {
	return ReduceNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axes: t.i32s(2), KeepDims: t.boolean(3, false)}
}

// decoders builds the typed node for each node type this package decodes.
// Types not listed are recorded by name with a nil Op.
var decoders = map[string]func(t table) any{
	"NoopNode":   func(t table) any { return &NoopNode{} },
	"IdCopyNode": func(t table) any { return &IdCopyNode{X: t.tid(0, "x"), Out: t.tid(1, "out")} },
	"AddmmNode": func(t table) any {
		return &AddmmNode{Mat1: t.tid(0, "mat1"), Mat2: t.tid(1, "mat2"), Out: t.tid(2, "out"), Bias: t.optTid(3),
			Alpha: t.f32(4, 1), Beta: t.f32(5, 1)}
	},
	"ItemIntNode":    func(t table) any { return &ItemIntNode{X: t.tid(0, "x"), Out: t.vid(1, "out")} },
	"ExpandDimsNode": func(t table) any { return &ExpandDimsNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0)} },
	"TileNode": func(t table) any {
		t.required(2, "reps")
		return &TileNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Reps: t.intOrVids(2)}
	},
	"TakeAlongAxisNode": func(t table) any {
		return &TakeAlongAxisNode{X: t.tid(0, "x"), Indices: t.tid(1, "indices"), Out: t.tid(2, "out"), Axis: t.i32(3, 0)}
	},
	"TakeNode": func(t table) any {
		return &TakeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Index: t.intOrVidOrTid(2, "index"), Axis: t.i32(3, 0)}
	},
	"RMSNormNode": func(t table) any {
		return &RMSNormNode{X: t.tid(0, "x"), Weight: t.optTid(1), Out: t.tid(2, "out"), Eps: t.f32(3, 0)}
	},
	"LayerNormNode": func(t table) any {
		return &LayerNormNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Weight: t.optTid(2), Bias: t.optTid(3), Eps: t.f32(4, 0)}
	},
	"RopeNode": func(t table) any {
		return &RopeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Dims: t.i32(2, 0), Offset: t.vidOrTid(3, "offset"),
			Freqs: t.optTid(4), Traditional: t.boolean(5, false), Base: t.f32(6, 500000), Scale: t.f32(7, 1)}
	},
	"SdpaNode": func(t table) any {
		return &SdpaNode{Q: t.tid(0, "q"), K: t.tid(1, "k"), V: t.tid(2, "v"), Out: t.tid(3, "out"), Scale: t.f32(4, 0),
			Mask: t.optTid(5), Causal: t.boolean(6, false)}
	},
	"UpdateAndAttendNode": func(t table) any {
		return &UpdateAndAttendNode{Q: t.tid(0, "q"), K: t.tid(1, "k"), V: t.tid(2, "v"), Position: t.tid(3, "position"),
			Out: t.tid(4, "out"), LayerID: t.optI32(5), Scale: t.optF32(6), OutDType: t.optI8(7)}
	},
	"SymSizeNode": func(t table) any { return &SymSizeNode{A: t.tid(0, "a"), Dim: t.i32(1, 0), Out: t.vid(2, "out")} },
	"GeluNode": func(t table) any {
		t.required(2, "approximate")
		return &GeluNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Approximate: t.str(2)}
	},
	"ARangeNode": func(t table) any {
		return &ARangeNode{Out: t.tid(0, "out"), Start: t.intOrVid(1, "start"), Stop: t.intOrVid(2, "stop"),
			Step: t.intOrVid(3, "step"), ScalarType: t.optI8(4)}
	},
	"SqueezeNode": func(t table) any { return &SqueezeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Dims: t.i32s(2)} },
	"SplitNode": func(t table) any {
		t.required(1, "outs")
		t.required(2, "sizes")
		return &SplitNode{X: t.tid(0, "x"), Outs: t.tids(1), Sizes: t.intOrVids(2), Axis: t.i32(3, 0)}
	},
	"SoftmaxNode": func(t table) any {
		return &SoftmaxNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0), Precise: t.boolean(3, false)}
	},
	"BroadcastToNode": func(t table) any {
		t.required(2, "shape")
		return &BroadcastToNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Shape: t.intOrVids(2)}
	},
	"WhereNode": func(t table) any {
		return &WhereNode{Condition: t.tid(0, "condition"), X: t.tid(1, "x"), Y: t.tid(2, "y"), Out: t.tid(3, "out")}
	},
	"ReshapeNode": func(t table) any {
		t.required(2, "shape")
		return &ReshapeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Shape: t.intOrVids(2)}
	},
	"TransposeNode": func(t table) any {
		t.required(2, "perm")
		return &TransposeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Perm: t.i32s(2)}
	},
	"SliceNode": func(t table) any {
		return &SliceNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.intOrVid(2, "axis"),
			Start: t.intOrVid(3, "start"), Stop: t.intOrVid(4, "stop"), Step: t.i32(5, 1)}
	},
	"AsTypeNode": func(t table) any { return &AsTypeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), ScalarType: t.i8(2, 0)} },
	"ConcatenateNode": func(t table) any {
		t.required(0, "tensors")
		return &ConcatenateNode{Tensors: t.tids(0), Out: t.tid(1, "out"), Axis: t.i32(2, 0)}
	},
	"FullNode": func(t table) any {
		t.required(1, "shape")
		return &FullNode{Out: t.tid(0, "out"), Shape: t.intOrVids(1), V: t.floatOrVid(2, "v"), ScalarType: t.i8(3, 0)}
	},
	"FullLikeNode": func(t table) any {
		return &FullLikeNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), V: t.floatOrVid(2, "v"), ScalarType: t.optI8(3)}
	},
	"ArgmaxNode": func(t table) any {
		return &ArgmaxNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0), KeepDims: t.boolean(3, false)}
	},
	"ArgminNode": func(t table) any {
		return &ArgminNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0), KeepDims: t.boolean(3, false)}
	},
	"SliceUpdateNode": func(t table) any {
		return &SliceUpdateNode{Dst: t.tid(0, "dst"), Update: t.tid(1, "update"), Out: t.tid(2, "out"),
			Axis: t.intOrVid(3, "axis"), Start: t.intOrVid(4, "start"), Stop: t.intOrVid(5, "stop"), Step: t.i32(6, 1)}
	},
	"IndexCopyNode": func(t table) any {
		return &IndexCopyNode{Dst: t.tid(0, "dst"), Update: t.tid(1, "update"), Indices: t.tid(2, "indices"),
			Out: t.tid(3, "out"), Axis: t.i32(4, 0)}
	},
	"TrilNode": func(t table) any { return &TrilNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), K: t.i32(2, 0)} },
	"TriuNode": func(t table) any { return &TriuNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), K: t.i32(2, 0)} },
	"CumsumNode": func(t table) any {
		return &CumsumNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0), Reverse: t.boolean(3, false),
			Inclusive: t.boolean(4, true)}
	},
	"QuantizedMatmulNode": func(t table) any {
		t.required(7, "mode")
		return &QuantizedMatmulNode{X: t.tid(0, "x"), W: t.tid(1, "w"), Scales: t.tid(2, "scales"), Out: t.tid(3, "out"),
			Biases: t.optTid(4), GroupSize: t.i32(5, 0), Bits: t.i32(6, 0), Mode: t.str(7), Transpose: t.boolean(8, true)}
	},
	"DequantizeNode": func(t table) any {
		t.required(6, "mode")
		return &DequantizeNode{W: t.tid(0, "w"), Scales: t.tid(1, "scales"), Out: t.tid(2, "out"), Biases: t.optTid(3),
			GroupSize: t.i32(4, 0), Bits: t.i32(5, 0), Mode: t.str(6), GlobalScale: t.optTid(7), DType: t.optI8(8)}
	},
	"StackNode": func(t table) any {
		t.required(0, "tensors")
		return &StackNode{Tensors: t.tids(0), Out: t.tid(1, "out"), Axis: t.i32(2, 0)}
	},

	"AddNode":          func(t table) any { n := AddNode(binaryOp(t)); return &n },
	"MultiplyNode":     func(t table) any { n := MultiplyNode(binaryOp(t)); return &n },
	"DivideNode":       func(t table) any { n := DivideNode(binaryOp(t)); return &n },
	"SubtractNode":     func(t table) any { n := SubtractNode(binaryOp(t)); return &n },
	"MaximumNode":      func(t table) any { n := MaximumNode(binaryOp(t)); return &n },
	"MinimumNode":      func(t table) any { n := MinimumNode(binaryOp(t)); return &n },
	"LessNode":         func(t table) any { n := LessNode(binaryOp(t)); return &n },
	"LessEqualNode":    func(t table) any { n := LessEqualNode(binaryOp(t)); return &n },
	"GreaterNode":      func(t table) any { n := GreaterNode(binaryOp(t)); return &n },
	"GreaterEqualNode": func(t table) any { n := GreaterEqualNode(binaryOp(t)); return &n },
	"EqualNode":        func(t table) any { n := EqualNode(binaryOp(t)); return &n },
	"NotEqualNode":     func(t table) any { n := NotEqualNode(binaryOp(t)); return &n },
	"LogicalAndNode":   func(t table) any { n := LogicalAndNode(binaryOp(t)); return &n },
	"LogicalOrNode":    func(t table) any { n := LogicalOrNode(binaryOp(t)); return &n },
	"PowerNode":        func(t table) any { n := PowerNode(binaryOp(t)); return &n },
	"FloorDivideNode":  func(t table) any { n := FloorDivideNode(binaryOp(t)); return &n },
	"RemainderNode":    func(t table) any { n := RemainderNode(binaryOp(t)); return &n },

	"AddIntNode":         func(t table) any { n := AddIntNode(intBinary(t)); return &n },
	"SubtractIntNode":    func(t table) any { n := SubtractIntNode(intBinary(t)); return &n },
	"MultiplyIntNode":    func(t table) any { n := MultiplyIntNode(intBinary(t)); return &n },
	"FloorDivideIntNode": func(t table) any { n := FloorDivideIntNode(intBinary(t)); return &n },
	"ModIntNode":         func(t table) any { n := ModIntNode(intBinary(t)); return &n },

	"SiluNode":       func(t table) any { n := SiluNode(unary(t)); return &n },
	"SigmoidNode":    func(t table) any { n := SigmoidNode(unary(t)); return &n },
	"TanhNode":       func(t table) any { n := TanhNode(unary(t)); return &n },
	"RsqrtNode":      func(t table) any { n := RsqrtNode(unary(t)); return &n },
	"LogNode":        func(t table) any { n := LogNode(unary(t)); return &n },
	"ContiguousNode": func(t table) any { n := ContiguousNode(unary(t)); return &n },
	"LogicalNotNode": func(t table) any { n := LogicalNotNode(unary(t)); return &n },
	"ExpNode":        func(t table) any { n := ExpNode(unary(t)); return &n },
	"SinNode":        func(t table) any { n := SinNode(unary(t)); return &n },
	"CosNode":        func(t table) any { n := CosNode(unary(t)); return &n },
	"ErfNode":        func(t table) any { n := ErfNode(unary(t)); return &n },
	"SqrtNode":       func(t table) any { n := SqrtNode(unary(t)); return &n },
	"AbsNode":        func(t table) any { n := AbsNode(unary(t)); return &n },
	"NegNode":        func(t table) any { n := NegNode(unary(t)); return &n },
	"SquareNode":     func(t table) any { n := SquareNode(unary(t)); return &n },
	"ReciprocalNode": func(t table) any { n := ReciprocalNode(unary(t)); return &n },

	"FloorNode":         func(t table) any { n := FloorNode(unary(t)); return &n },
	"CeilNode":          func(t table) any { n := CeilNode(unary(t)); return &n },
	"TanNode":           func(t table) any { n := TanNode(unary(t)); return &n },
	"ArcsinNode":        func(t table) any { n := ArcsinNode(unary(t)); return &n },
	"ArccosNode":        func(t table) any { n := ArccosNode(unary(t)); return &n },
	"ArctanNode":        func(t table) any { n := ArctanNode(unary(t)); return &n },
	"SinhNode":          func(t table) any { n := SinhNode(unary(t)); return &n },
	"CoshNode":          func(t table) any { n := CoshNode(unary(t)); return &n },
	"ArcsinhNode":       func(t table) any { n := ArcsinhNode(unary(t)); return &n },
	"ArccoshNode":       func(t table) any { n := ArccoshNode(unary(t)); return &n },
	"ArctanhNode":       func(t table) any { n := ArctanhNode(unary(t)); return &n },
	"Log2Node":          func(t table) any { n := Log2Node(unary(t)); return &n },
	"Log10Node":         func(t table) any { n := Log10Node(unary(t)); return &n },
	"Log1pNode":         func(t table) any { n := Log1pNode(unary(t)); return &n },
	"Expm1Node":         func(t table) any { n := Expm1Node(unary(t)); return &n },
	"SignNode":          func(t table) any { n := SignNode(unary(t)); return &n },
	"BitwiseInvertNode": func(t table) any { n := BitwiseInvertNode(unary(t)); return &n },
	"Atan2Node":         func(t table) any { n := Atan2Node(binaryOp(t)); return &n },
	"LogAddExpNode":     func(t table) any { n := LogAddExpNode(binaryOp(t)); return &n },
	"BitwiseAndNode":    func(t table) any { n := BitwiseAndNode(binaryOp(t)); return &n },
	"BitwiseOrNode":     func(t table) any { n := BitwiseOrNode(binaryOp(t)); return &n },
	"BitwiseXorNode":    func(t table) any { n := BitwiseXorNode(binaryOp(t)); return &n },
	"LogSumExpNode":     func(t table) any { n := LogSumExpNode(reduce(t)); return &n },
	"ProdNode":          func(t table) any { n := ProdNode(reduce(t)); return &n },
	"AnyNode":           func(t table) any { n := AnyNode(reduce(t)); return &n },
	"AllNode":           func(t table) any { n := AllNode(reduce(t)); return &n },
	"MedianNode":        func(t table) any { n := MedianNode(reduce(t)); return &n },
	"RoundNode": func(t table) any {
		return &RoundNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Decimals: t.i32(2, 0)}
	},
	"VarNode": func(t table) any { return &VarNode{ReduceNode: reduce(t), DDof: t.i32(4, 0)} },
	"StdNode": func(t table) any { return &StdNode{ReduceNode: reduce(t), DDof: t.i32(4, 0)} },
	"ClipNode": func(t table) any {
		return &ClipNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), AMin: t.optTid(2), AMax: t.optTid(3)}
	},
	"RepeatNode": func(t table) any {
		return &RepeatNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Repeats: t.intOrVid(2, "repeats"), Axis: t.i32(3, 0)}
	},
	"SortNode":    func(t table) any { return &SortNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0)} },
	"ArgsortNode": func(t table) any { return &ArgsortNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Axis: t.i32(2, 0)} },
	"PadNode": func(t table) any {
		t.required(2, "pad_width")
		t.required(3, "mode")
		return &PadNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), PadWidth: t.intOrVids(2), Mode: t.str(3), ConstantValue: t.f32(4, 0)}
	},
	"TriNode": func(t table) any {
		return &TriNode{Out: t.tid(0, "out"), N: t.intOrVid(1, "n"), M: t.intOrVid(2, "m"), K: t.i32(3, 0), ScalarType: t.optI8(4)}
	},
	"RollNode": func(t table) any {
		t.required(2, "shift")
		t.required(3, "axes")
		return &RollNode{X: t.tid(0, "x"), Out: t.tid(1, "out"), Shift: t.intOrVids(2), Axes: t.i32s(3)}
	},

	"SumNode":  func(t table) any { n := SumNode(reduce(t)); return &n },
	"MeanNode": func(t table) any { n := MeanNode(reduce(t)); return &n },
	"MaxNode":  func(t table) any { n := MaxNode(reduce(t)); return &n },
	"MinNode":  func(t table) any { n := MinNode(reduce(t)); return &n },
}
