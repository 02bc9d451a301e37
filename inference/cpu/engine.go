// Package cpu is etchat's pure-Go CPU engine. It memory-maps a .pte written
// by ExecuTorch's MLX backend, binds the named weights straight from the
// mapping (fp32, bf16 and fp16 views, no copies) and interprets the MLX
// delegate's instruction chain for the forward method. Float arithmetic is
// fp32 throughout; bf16/fp16 weights and KV caches are converted as they are
// read. Off-graph models keep their KV cache in per-layer pools that follow
// kvcache.Sequence's plans; in-graph models keep it in the program's mutable
// buffers.
package cpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/mlxgraph"
	"etchat/inference/modelinfo"
	"etchat/inference/pte"
)

// Options configure the engine.
type Options struct {
	// Threads is the number of goroutines for matrix work; 0 = GOMAXPROCS.
	Threads int
	// Numerics is the numerics mode of quantized matmuls: NumericsExact
	// ("" too: fp32 products, the reference) or NumericsFast (inputs
	// quantized to 8 bits per block, integer products; qkernel_int8.go).
	// It is per engine, so per loaded program.
	Numerics string
}

// Engine is the CPU engine. Sessions it opens on the same file share one
// loaded program (see programs).
type Engine struct {
	opts  Options
	progs programs
}

// New makes a CPU engine.
func New(opts Options) engine.Engine { return &Engine{opts: opts} }

// Name is "cpu".
func (e *Engine) Name() string { return "cpu" }

// Threads is how many goroutines its sessions use for matrix work (bench
// records it as llama-bench's n_threads).
func (e *Engine) Threads() int {
	if e.opts.Threads > 0 {
		return e.opts.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// supported lists the node types the interpreter executes.
var supported = map[string]bool{
	"NoopNode": true, "IdCopyNode": true, "AddmmNode": true, "ItemIntNode": true, "ExpandDimsNode": true,
	"TakeNode": true, "RMSNormNode": true, "SdpaNode": true, "UpdateAndAttendNode": true, "AddNode": true,
	"AddIntNode": true, "SubtractIntNode": true, "MultiplyIntNode": true, "FloorDivideIntNode": true, "ModIntNode": true,
	"SymSizeNode": true, "MultiplyNode": true, "DivideNode": true, "SubtractNode": true, "GeluNode": true,
	"ARangeNode": true, "SiluNode": true, "SigmoidNode": true, "TanhNode": true, "RsqrtNode": true,
	"BroadcastToNode": true, "ReshapeNode": true, "TransposeNode": true, "ContiguousNode": true, "SliceNode": true,
	"AsTypeNode": true, "ConcatenateNode": true, "FullNode": true, "SliceUpdateNode": true, "NotEqualNode": true,
	"EqualNode": true, "SinNode": true, "CosNode": true, "NegNode": true, "ExpNode": true, "SqrtNode": true,
	"SumNode": true, "MaximumNode": true, "MinimumNode": true, "SquareNode": true, "AbsNode": true,
	"QuantizedMatmulNode": true, "DequantizeNode": true,
	// ops.go
	"LogNode": true, "ErfNode": true, "ReciprocalNode": true, "FloorNode": true, "CeilNode": true, "TanNode": true,
	"ArcsinNode": true, "ArccosNode": true, "ArctanNode": true, "SinhNode": true, "CoshNode": true, "ArcsinhNode": true,
	"ArccoshNode": true, "ArctanhNode": true, "Log2Node": true, "Log10Node": true, "Log1pNode": true, "Expm1Node": true,
	"SignNode": true, "RoundNode": true, "LogicalNotNode": true, "BitwiseInvertNode": true,
	"LessNode": true, "LessEqualNode": true, "GreaterNode": true, "GreaterEqualNode": true, "LogicalAndNode": true,
	"LogicalOrNode": true, "PowerNode": true, "FloorDivideNode": true, "RemainderNode": true, "Atan2Node": true,
	"LogAddExpNode": true, "BitwiseAndNode": true, "BitwiseOrNode": true, "BitwiseXorNode": true,
	"MeanNode": true, "MaxNode": true, "MinNode": true, "ProdNode": true, "LogSumExpNode": true, "VarNode": true,
	"StdNode": true, "AnyNode": true, "AllNode": true, "ArgmaxNode": true, "ArgminNode": true,
	"SoftmaxNode": true, "CumsumNode": true, "SortNode": true, "ArgsortNode": true, "LayerNormNode": true,
	"RopeNode": true, "WhereNode": true, "ClipNode": true, "SqueezeNode": true, "SplitNode": true, "StackNode": true,
	"TileNode": true, "RepeatNode": true, "RollNode": true, "PadNode": true, "TakeAlongAxisNode": true,
	"IndexCopyNode": true, "FullLikeNode": true, "TrilNode": true, "TriuNode": true, "TriNode": true,
}

// checkNodes refuses a graph with a node type the interpreter does not
// execute, in the main or the init chain, naming every such type, and a
// quantized node in a format it does not run.
func checkNodes(g *mlxgraph.Graph) error {
	chains := [][]mlxgraph.Instruction{g.Instructions}
	if g.InitChain >= 0 && g.InitChain != g.MainChain && g.InitChain < len(g.Chains) {
		chains = append(chains, g.Chains[g.InitChain])
	}
	var bad []string
	seen := map[string]bool{}
	for _, c := range chains {
		for _, in := range c {
			if (!supported[in.Kind] || in.Op == nil) && !seen[in.Kind] {
				seen[in.Kind] = true
				bad = append(bad, in.Kind)
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("unsupported MLX node type(s): %s", strings.Join(bad, ", "))
	}
	for _, c := range chains {
		for _, in := range c {
			if err := checkParams(in); err != nil {
				return err
			}
		}
	}
	return nil
}

// model is a loaded program: the mapping, the graph and the bound weights.
type model struct {
	data   []byte
	unmap  func() error
	graph  *mlxgraph.Graph
	consts []*tensor // by constant slot
	inIDs  mlxgraph.Tid
	inPos  mlxgraph.Tid
	// logitsMode is the program's get_logits_to_keep_mode; a
	// LogitsSelected program's third input, inRows, takes the rows to
	// return.
	logitsMode  engine.LogitsMode
	inRows      mlxgraph.Tid
	logits      mlxgraph.Tid
	vocab       int
	maxStep     int
	offgraph    bool
	layers      int // UpdateAndAttend layer count
	weightBytes int64
	// headInst is the index of the Addmm that writes the logits when only
	// IdCopy nodes of other slots follow it (-1 otherwise): Forward then
	// computes that product for the last row only.
	headInst int
	maxCtx   int
	// initSlots: what the init chain wrote outside the constant slots
	// (results it wrote into constant slots replace consts); qmats: each
	// QuantizedMatmulNode's prepared matrix; heapBytes: what both hold on
	// the heap.
	initSlots []initSlot
	qmats     map[*mlxgraph.QuantizedMatmulNode]*qMatrix
	fp4mats   map[*mlxgraph.QuantizedMatmulNode]*fp4Matrix
	// qfused: the QuantizedMatmulNodes that directly follow one of the
	// same input (a layer's q, k and v projections; gate and up), run
	// with it as one shared job (planQFusion).
	qfused map[*mlxgraph.QuantizedMatmulNode][]*mlxgraph.QuantizedMatmulNode
	// deaths: per main-chain instruction, the temporaries it reads last
	// (planDeaths; a pass of many rows reuses their buffers)
	deaths [][]mlxgraph.Tid
	// replaced: per instruction, the temporaries it reads and overwrites
	replaced [][]mlxgraph.Tid
	// ropes: the rotary embeddings computed in one pass (planRoPE); acts:
	// what run does at each main-chain instruction for them (nil: none)
	ropes     []ropePlan
	acts      []fuseAct
	heapBytes int64
	initRuns  int // times the init chain ran (once)
	// refs counts the sessions using the program (guarded by the
	// engine's programs); release drops one.
	refs    int
	release func() error
}

// Open loads the program at path.
func (e *Engine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n := e.opts.Numerics; n != "" && n != NumericsExact && n != NumericsFast {
		return nil, fmt.Errorf("cpu: numerics %q: want %s or %s", n, NumericsExact, NumericsFast)
	}
	m, err := e.progs.acquire(path, e.opts.Numerics == NumericsFast)
	if err != nil {
		return nil, err
	}
	s, err := newSession(m, cfg, e.Threads())
	if err != nil {
		m.done()
		return nil, err
	}
	return s, nil
}

func (m *model) close() error {
	if m.unmap != nil {
		err := m.unmap()
		m.unmap = nil
		return err
	}
	return nil
}

func load(path string) (*model, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	m := &model{data: data, unmap: unmap}
	if err := m.bind(); err != nil {
		m.close()
		return nil, fmt.Errorf("cpu: %s: %w", path, err)
	}
	return m, nil
}

func (m *model) bind() error {
	f, err := pte.Parse(bytes.NewReader(m.data), int64(len(m.data)))
	if err != nil {
		return err
	}
	fwd, ok := f.Method("forward")
	if !ok {
		return errors.New("no forward method")
	}
	var blob []byte
	for _, d := range fwd.Delegates {
		if d.ID != "MLXBackend" {
			return fmt.Errorf("forward has a %q delegate; only MLXBackend is supported", d.ID)
		}
		if blob != nil {
			return errors.New("forward has more than one MLX delegate; not supported")
		}
		if d.Offset < 0 || d.Size < 0 || d.Offset+d.Size > int64(len(m.data)) {
			return errors.New("delegate blob outside the file")
		}
		blob = m.data[d.Offset : d.Offset+d.Size]
	}
	if blob == nil {
		return errors.New("forward has no MLX delegate")
	}
	g, err := mlxgraph.Parse(blob)
	if err != nil {
		return err
	}
	m.graph = g
	if err := checkNodes(g); err != nil {
		return err
	}
	for _, in := range g.Instructions {
		if in.Kind == "UpdateAndAttendNode" {
			m.offgraph = true
			m.layers++
		}
	}
	// The capacity and logits mode under either generation's names (the
	// one table, modelinfo's).
	md, err := modelinfo.ReadMetadata(f)
	if err != nil {
		return err
	}
	m.maxCtx, m.logitsMode = md.MaxCtxLen, md.LogitsMode

	named := map[string]pte.NamedData{}
	for _, nd := range f.NamedData {
		named[nd.Key] = nd
	}
	m.consts = make([]*tensor, g.NumConstantTensors)
	for _, ns := range g.NamedSlots {
		if !ns.Slot.IsTensor() || ns.Slot.Idx >= g.NumConstantTensors {
			continue
		}
		nd, ok := named[ns.Name]
		if !ok {
			return fmt.Errorf("constant %q has no named data in the file", ns.Name)
		}
		meta := g.Meta(mlxgraph.Tid(ns.Slot.Idx))
		if meta == nil {
			return fmt.Errorf("constant %q has no tensor metadata", ns.Name)
		}
		t, err := m.weight(ns.Name, meta, nd)
		if err != nil {
			return err
		}
		m.consts[ns.Slot.Idx] = t
		m.weightBytes += nd.Size
	}
	for i, t := range m.consts {
		if t == nil {
			return fmt.Errorf("constant tensor slot %d is not bound to any named data", i)
		}
	}
	if err := m.runInit(); err != nil {
		return err
	}
	if err := m.prepareQuant(); err != nil {
		return err
	}
	m.planQFusion()
	m.planRoPE()
	m.planDeaths()

	// I/O: input_ids and cache_position tensors, and the float output with
	// a vocabulary dimension (in-graph programs return two more int64
	// scalars, the start positions that the program copies into its
	// cumulative-length buffers; they are not needed here).
	if err := m.bindInputs(g); err != nil {
		return err
	}
	im := g.Meta(m.inIDs)
	if im == nil || len(im.Shape) != 2 {
		return errors.New("input_ids has no [1, n] tensor metadata")
	}
	d := im.Shape[1]
	switch {
	case d.Value > 0:
		m.maxStep = int(d.Value)
	case d.Max > 0:
		m.maxStep = int(d.Max)
	default:
		return errors.New("input_ids has no upper bound on its length")
	}
	found := false
	for _, o := range g.Outputs {
		om := g.Meta(mlxgraph.Tid(o.Idx))
		if o.IsTensor() && om != nil && isFloatST(om.DType) && len(om.Shape) == 3 && om.Shape[2].Value > 0 {
			if found {
				return errors.New("more than one logits-shaped output")
			}
			found = true
			m.logits, m.vocab = mlxgraph.Tid(o.Idx), int(om.Shape[2].Value)
		}
	}
	if !found {
		return errors.New("no [1, n, vocab] float output")
	}
	m.headInst = -1
	for i := len(g.Instructions) - 1; i >= 0; i-- {
		switch n := g.Instructions[i].Op.(type) {
		case *mlxgraph.IdCopyNode:
			if n.X == m.logits || n.Out == m.logits {
				return nil
			}
			continue
		case *mlxgraph.AddmmNode:
			if n.Out == m.logits {
				m.headInst = i
			}
		case *mlxgraph.QuantizedMatmulNode:
			if n.Out == m.logits {
				m.headInst = i
			}
		}
		break
	}
	return nil
}

// skipsRows says whether a step that needs the last row only may compute
// the LM head for that row alone: a program that returns every row has
// rows to skip; one that keeps the last or selected rows (modes 1 and 2)
// already returns just those asked for.
func (m *model) skipsRows() bool {
	return m.headInst >= 0 && m.logitsMode == engine.LogitsFull
}

// bindInputs finds forward's inputs: input_ids and cache_position, and for
// a program that selects its logits rows (get_logits_to_keep_mode 2) the
// Long row indices the engine feeds.
func (m *model) bindInputs(g *mlxgraph.Graph) error {
	want := 2
	if m.logitsMode == engine.LogitsSelected {
		want = 3
	}
	if len(g.Inputs) != want {
		return fmt.Errorf("forward's delegate has %d inputs; want %d (input_ids and cache_position tensors, and the row indices when get_logits_to_keep_mode is 2)", len(g.Inputs), want)
	}
	for _, in := range g.Inputs {
		if !in.IsTensor() {
			return errors.New("forward's delegate has an input that is not a tensor")
		}
	}
	m.inIDs, m.inPos = mlxgraph.Tid(g.Inputs[0].Idx), mlxgraph.Tid(g.Inputs[1].Idx)
	if want == 3 {
		m.inRows = mlxgraph.Tid(g.Inputs[2].Idx)
	}
	return nil
}

// weight views a named-data entry as a tensor without copying.
func (m *model) weight(name string, meta *mlxgraph.TensorMeta, nd pte.NamedData) (*tensor, error) {
	shape := make([]int, len(meta.Shape))
	n := int64(1)
	for i, d := range meta.Shape {
		if d.Value < 0 {
			return nil, fmt.Errorf("constant %q has a dynamic shape", name)
		}
		shape[i] = int(d.Value)
		n *= d.Value
		if n > int64(len(m.data)) {
			return nil, fmt.Errorf("constant %q: shape %v larger than the file", name, shape)
		}
	}
	var size int64
	switch meta.DType {
	case stF32, stI32, stU32:
		size = 4
	case stBF16, stF16:
		size = 2
	case stI64:
		size = 8
	case stBool, stU8, stI8:
		size = 1
	default:
		return nil, fmt.Errorf("constant %q: dtype %d not supported", name, meta.DType)
	}
	if nd.Size != n*size {
		return nil, fmt.Errorf("constant %q: %d bytes in the file, want %d for %v of dtype %d", name, nd.Size, n*size, shape, meta.DType)
	}
	if nd.Offset < 0 || nd.Offset+nd.Size > int64(len(m.data)) {
		return nil, fmt.Errorf("constant %q outside the file", name)
	}
	raw := m.data[nd.Offset : nd.Offset+nd.Size]
	t := &tensor{dt: meta.DType, shape: shape, strides: contiguousStrides(shape)}
	switch meta.DType {
	case stF32:
		if n > 0 && uintptr(unsafe.Pointer(&raw[0]))%4 == 0 {
			t.f = unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), n)
		} else {
			t.f = make([]float32, n)
			for i := range t.f {
				t.f[i] = float32frombytes(raw[4*i:])
			}
		}
		if t.f == nil {
			t.f = []float32{}
		}
	case stU32:
		if n > 0 && uintptr(unsafe.Pointer(&raw[0]))%4 == 0 {
			t.u = unsafe.Slice((*uint32)(unsafe.Pointer(&raw[0])), n)
		} else {
			t.u = make([]uint32, n)
			for i := range t.u {
				t.u[i] = le32(raw[4*i:])
			}
		}
		if t.u == nil {
			t.u = []uint32{}
		}
	case stBF16, stF16:
		if n > 0 && uintptr(unsafe.Pointer(&raw[0]))%2 == 0 {
			t.h = unsafe.Slice((*uint16)(unsafe.Pointer(&raw[0])), n)
		} else {
			t.h = make([]uint16, n)
			for i := range t.h {
				t.h[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
			}
		}
		if t.h == nil {
			t.h = []uint16{}
		}
	default:
		t.i = make([]int64, n)
		for i := range t.i {
			switch size {
			case 8:
				t.i[i] = int64(le64(raw[8*i:]))
			case 4:
				t.i[i] = int64(int32(le32(raw[4*i:])))
			default:
				t.i[i] = int64(raw[i])
			}
		}
	}
	return t, nil
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

func float32frombytes(b []byte) float32 { return math.Float32frombits(le32(b)) }

// mapFile maps path read-only, or reads it whole where mapping fails.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() <= 0 || st.Size() > 1<<40 {
		return nil, nil, fmt.Errorf("%s: size %d", path, st.Size())
	}
	if data, unmap, err := mmapFile(f, int(st.Size())); err == nil {
		return data, unmap, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
