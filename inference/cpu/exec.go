package cpu

import (
	"fmt"
	"math"
	"slices"

	g "etchat/inference/mlxgraph"
)

// Each node kind the interpreter executes belongs to one op family, and
// each family is a method that runs the nodes it owns and reports false
// for any other. exec tries the families in opFamilies' order, so adding
// a node touches one small function, and the families a decoder step runs
// most come first. The kinds refused at load are listed by supported.

// opFamilies is exec's order: matmuls and the element-wise arithmetic of
// every layer first, then the block ops, views and indexing, the rest
// after.
var opFamilies = [...]func(*session, any) (bool, error){
	(*session).execMatmul,
	(*session).execArith,
	(*session).execBlock,
	(*session).execView,
	(*session).execIndex,
	(*session).execUnary,
	(*session).execValue,
	(*session).execLayout,
	(*session).execReduce,
	(*session).execCreate,
	(*session).execCompare,
	(*session).execAlongAxis,
}

// exec runs one instruction.
func (s *session) exec(in g.Instruction) error {
	for _, family := range opFamilies {
		if done, err := family(s, in.Op); done {
			return err
		}
	}
	return fmt.Errorf("unsupported MLX node %s", in.Kind)
}

// execMatmul: the dense and quantized matmuls and dequantization.
func (s *session) execMatmul(op any) (bool, error) {
	switch n := op.(type) {
	case *g.AddmmNode:
		return true, s.addmm(n)
	case *g.QuantizedMatmulNode:
		return true, s.quantizedMatmul(n)
	case *g.DequantizeNode:
		return true, s.dequantize(n)
	}
	return false, nil
}

// execArith: element-wise arithmetic of two broadcast tensors.
func (s *session) execArith(op any) (bool, error) {
	switch n := op.(type) {
	case *g.AddNode:
		return true, s.binaryOp(g.BinaryNode(*n), opAdd)
	case *g.SubtractNode:
		return true, s.binaryOp(g.BinaryNode(*n), opSub)
	case *g.MultiplyNode:
		return true, s.binaryOp(g.BinaryNode(*n), opMul)
	case *g.DivideNode:
		return true, s.binaryOp(g.BinaryNode(*n), opDiv)
	case *g.MaximumNode:
		return true, s.binaryOp(g.BinaryNode(*n), opMax)
	case *g.MinimumNode:
		return true, s.binaryOp(g.BinaryNode(*n), opMin)
	case *g.PowerNode:
		return true, s.binary(g.BinaryNode(*n), func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) }, ipow)
	case *g.FloorDivideNode:
		return true, s.binary(g.BinaryNode(*n), func(a, b float32) float32 { return float32(math.Floor(float64(a / b))) }, floorDiv)
	case *g.RemainderNode:
		return true, s.binary(g.BinaryNode(*n), remainderF, remainderI)
	case *g.Atan2Node:
		return true, s.binary(g.BinaryNode(*n), func(a, b float32) float32 { return float32(math.Atan2(float64(a), float64(b))) }, nil)
	case *g.LogAddExpNode:
		return true, s.binary(g.BinaryNode(*n), logAddExp, nil)
	}
	return false, nil
}

// execBlock: the fused transformer-block ops: norms, RoPE and attention.
func (s *session) execBlock(op any) (bool, error) {
	switch n := op.(type) {
	case *g.RMSNormNode:
		return true, s.rmsNorm(n)
	case *g.LayerNormNode:
		return true, s.layerNorm(n)
	case *g.RopeNode:
		return true, s.rope(n)
	case *g.SdpaNode:
		return true, s.sdpa(n)
	case *g.UpdateAndAttendNode:
		return true, s.updateAndAttend(n)
	}
	return false, nil
}

// execView: shape ops that make a view (or an alias) without copying,
// and the dtype conversion.
func (s *session) execView(op any) (bool, error) {
	switch n := op.(type) {
	case *g.NoopNode:
		return true, nil
	case *g.IdCopyNode:
		return true, s.idCopy(n.X, n.Out)
	case *g.ContiguousNode:
		return true, s.alias(n.X, n.Out)
	case *g.ExpandDimsNode:
		return true, s.expandDims(n)
	case *g.ReshapeNode:
		return true, s.reshape(n)
	case *g.TransposeNode:
		return true, s.transpose(n)
	case *g.BroadcastToNode:
		return true, s.broadcastTo(n)
	case *g.SqueezeNode:
		return true, s.squeeze(n)
	case *g.AsTypeNode:
		return true, s.asType(n.X, n.Out, int(n.ScalarType))
	}
	return false, nil
}

// execLayout: shape ops that copy: joining, splitting, tiling, shifting
// and padding.
func (s *session) execLayout(op any) (bool, error) {
	switch n := op.(type) {
	case *g.ConcatenateNode:
		return true, s.concat(n)
	case *g.SplitNode:
		return true, s.split(n)
	case *g.StackNode:
		return true, s.stack(n)
	case *g.TileNode:
		return true, s.tile(n)
	case *g.RepeatNode:
		return true, s.repeat(n)
	case *g.RollNode:
		return true, s.roll(n)
	case *g.PadNode:
		return true, s.pad(n)
	}
	return false, nil
}

// execIndex: gathers, slices and the writes into slices and rows.
func (s *session) execIndex(op any) (bool, error) {
	switch n := op.(type) {
	case *g.TakeNode:
		return true, s.take(n)
	case *g.TakeAlongAxisNode:
		return true, s.takeAlongAxis(n)
	case *g.SliceNode:
		return true, s.slice(n)
	case *g.SliceUpdateNode:
		return true, s.sliceUpdate(n)
	case *g.IndexCopyNode:
		return true, s.indexCopy(n)
	}
	return false, nil
}

// execUnary: element-wise ops of one tensor: those with typed loops or
// their own rules here, the plain float functions from mathUnary.
func (s *session) execUnary(op any) (bool, error) {
	switch n := op.(type) {
	case *g.SiluNode:
		return true, s.unaryOp(n.X, n.Out, opSilu)
	case *g.SigmoidNode:
		return true, s.unaryOp(n.X, n.Out, opSigmoid)
	case *g.RsqrtNode:
		return true, s.unaryOp(n.X, n.Out, opRsqrt)
	case *g.ExpNode:
		return true, s.unaryOp(n.X, n.Out, opExp)
	case *g.SquareNode:
		return true, s.unaryOp(n.X, n.Out, opSquare)
	case *g.NegNode:
		return true, s.neg(n)
	case *g.GeluNode:
		return true, s.gelu(n)
	case *g.RoundNode:
		p := math.Pow(10, float64(n.Decimals))
		// MLX rounds half to even (std::rint).
		return true, s.unary(n.X, n.Out, func(x float32) float32 { return float32(math.RoundToEven(float64(x)*p) / p) })
	case *g.ClipNode:
		return true, s.clip(n)
	case *g.LogicalNotNode:
		return true, s.mapBool(n.X, n.Out, func(v float64) bool { return v == 0 })
	case *g.BitwiseInvertNode:
		return true, s.bitwiseInvert(n)
	}
	for _, m := range mathUnary {
		if u, ok := m.node(op); ok {
			return true, s.unary(u.X, u.Out, m.fn)
		}
	}
	return false, nil
}

// unaryNode matches one unary node type and gives its operands.
func unaryNode[T ~struct{ X, Out g.Tid }](op any) (g.UnaryNode, bool) {
	n, ok := op.(*T)
	if !ok {
		return g.UnaryNode{}, false
	}
	return g.UnaryNode(*n), true
}

// mathUnary: the unary nodes that are one float function of each element
// (a table, not cases: none is on a hot path, and a row is all each
// needs).
var mathUnary = [...]struct {
	node func(any) (g.UnaryNode, bool)
	fn   func(float32) float32
}{
	{unaryNode[g.TanhNode], f64(math.Tanh)},
	{unaryNode[g.SqrtNode], f64(math.Sqrt)},
	{unaryNode[g.SinNode], f64(math.Sin)},
	{unaryNode[g.CosNode], f64(math.Cos)},
	{unaryNode[g.AbsNode], f64(math.Abs)},
	{unaryNode[g.LogNode], f64(math.Log)},
	{unaryNode[g.ErfNode], f64(math.Erf)},
	{unaryNode[g.ReciprocalNode], func(x float32) float32 { return 1 / x }},
	{unaryNode[g.FloorNode], f64(math.Floor)},
	{unaryNode[g.CeilNode], f64(math.Ceil)},
	{unaryNode[g.TanNode], f64(math.Tan)},
	{unaryNode[g.ArcsinNode], f64(math.Asin)},
	{unaryNode[g.ArccosNode], f64(math.Acos)},
	{unaryNode[g.ArctanNode], f64(math.Atan)},
	{unaryNode[g.SinhNode], f64(math.Sinh)},
	{unaryNode[g.CoshNode], f64(math.Cosh)},
	{unaryNode[g.ArcsinhNode], f64(math.Asinh)},
	{unaryNode[g.ArccoshNode], f64(math.Acosh)},
	{unaryNode[g.ArctanhNode], f64(math.Atanh)},
	{unaryNode[g.Log2Node], f64(math.Log2)},
	{unaryNode[g.Log10Node], f64(math.Log10)},
	{unaryNode[g.Log1pNode], f64(math.Log1p)},
	{unaryNode[g.Expm1Node], f64(math.Expm1)},
	{unaryNode[g.SignNode], sign32},
}

// execValue: the scalar value slots: reads of a tensor's item or size and
// int32 arithmetic.
func (s *session) execValue(op any) (bool, error) {
	switch n := op.(type) {
	case *g.ItemIntNode:
		return true, s.itemInt(n)
	case *g.SymSizeNode:
		return true, s.symSize(n)
	case *g.AddIntNode:
		return true, s.intOp(g.IntBinaryNode(*n), "AddInt", func(a, b int64) (int64, error) { return a + b, nil })
	case *g.SubtractIntNode:
		return true, s.intOp(g.IntBinaryNode(*n), "SubtractInt", func(a, b int64) (int64, error) { return a - b, nil })
	case *g.MultiplyIntNode:
		return true, s.intOp(g.IntBinaryNode(*n), "MultiplyInt", func(a, b int64) (int64, error) { return a * b, nil })
	case *g.FloorDivideIntNode:
		return true, s.intOp(g.IntBinaryNode(*n), "FloorDivideInt", floorDivInt)
	case *g.ModIntNode:
		return true, s.intOp(g.IntBinaryNode(*n), "ModInt", modInt)
	}
	return false, nil
}

// execReduce: reductions over axes.
func (s *session) execReduce(op any) (bool, error) {
	switch n := op.(type) {
	case *g.SumNode:
		return true, s.sum(n)
	case *g.MeanNode:
		return true, s.reduceF(g.ReduceNode(*n), "Mean", func(v []float32) float32 { return float32(sum64(v) / float64(len(v))) })
	case *g.MaxNode:
		return true, s.reduceF(g.ReduceNode(*n), "Max", slices.Max[[]float32])
	case *g.MinNode:
		return true, s.reduceF(g.ReduceNode(*n), "Min", slices.Min[[]float32])
	case *g.ProdNode:
		return true, s.reduceF(g.ReduceNode(*n), "Prod", prod)
	case *g.LogSumExpNode:
		return true, s.reduceF(g.ReduceNode(*n), "LogSumExp", logSumExp)
	case *g.VarNode:
		return true, s.reduceF(n.ReduceNode, "Var", variance(int(n.DDof), false))
	case *g.StdNode:
		return true, s.reduceF(n.ReduceNode, "Std", variance(int(n.DDof), true))
	case *g.AnyNode:
		return true, s.reduceB(g.ReduceNode(*n), "Any", func(v []float32) bool { return slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) })
	case *g.AllNode:
		return true, s.reduceB(g.ReduceNode(*n), "All", func(v []float32) bool { return !slices.Contains(v, 0) })
	case *g.ArgmaxNode:
		return true, s.argReduce(n.X, n.Out, n.Axis, n.KeepDims, func(a, b float32) bool { return a > b })
	case *g.ArgminNode:
		return true, s.argReduce(n.X, n.Out, n.Axis, n.KeepDims, func(a, b float32) bool { return a < b })
	}
	return false, nil
}

// execAlongAxis: ops over each lane of one axis that keep its length.
func (s *session) execAlongAxis(op any) (bool, error) {
	switch n := op.(type) {
	case *g.SoftmaxNode:
		return true, s.alongAxis(n.X, n.Out, n.Axis, "Softmax", softmaxLane)
	case *g.CumsumNode:
		return true, s.alongAxis(n.X, n.Out, n.Axis, "Cumsum", func(dst, v []float32) { cumsumLane(dst, v, n.Reverse, n.Inclusive) })
	case *g.SortNode:
		return true, s.alongAxis(n.X, n.Out, n.Axis, "Sort", func(dst, v []float32) {
			copy(dst, v)
			slices.Sort(dst)
		})
	case *g.ArgsortNode:
		return true, s.argsort(n)
	}
	return false, nil
}

// execCreate: tensors made from a shape and a value: fills, ranges and
// triangles.
func (s *session) execCreate(op any) (bool, error) {
	switch n := op.(type) {
	case *g.FullNode:
		return true, s.full(n)
	case *g.FullLikeNode:
		return true, s.fullLike(n)
	case *g.ARangeNode:
		return true, s.arange(n)
	case *g.TriNode:
		return true, s.tri(n)
	case *g.TrilNode:
		return true, s.triangle(n.X, n.Out, int(n.K), true)
	case *g.TriuNode:
		return true, s.triangle(n.X, n.Out, int(n.K), false)
	}
	return false, nil
}

// execCompare: comparisons, logic, bitwise ops and the selection by a
// mask.
func (s *session) execCompare(op any) (bool, error) {
	switch n := op.(type) {
	case *g.EqualNode:
		return true, s.compare(g.BinaryNode(*n), func(c int) bool { return c == 0 })
	case *g.NotEqualNode:
		return true, s.compare(g.BinaryNode(*n), func(c int) bool { return c != 0 })
	case *g.LessNode:
		return true, s.compare(g.BinaryNode(*n), func(c int) bool { return c < 0 })
	case *g.LessEqualNode:
		return true, s.compare(g.BinaryNode(*n), func(c int) bool { return c <= 0 })
	case *g.GreaterNode:
		return true, s.compare(g.BinaryNode(*n), func(c int) bool { return c > 0 })
	case *g.GreaterEqualNode:
		return true, s.compare(g.BinaryNode(*n), func(c int) bool { return c >= 0 })
	case *g.LogicalAndNode:
		return true, s.logical(g.BinaryNode(*n), func(a, b bool) bool { return a && b })
	case *g.LogicalOrNode:
		return true, s.logical(g.BinaryNode(*n), func(a, b bool) bool { return a || b })
	case *g.BitwiseAndNode:
		return true, s.bitwise(g.BinaryNode(*n), func(a, b int64) int64 { return a & b })
	case *g.BitwiseOrNode:
		return true, s.bitwise(g.BinaryNode(*n), func(a, b int64) int64 { return a | b })
	case *g.BitwiseXorNode:
		return true, s.bitwise(g.BinaryNode(*n), func(a, b int64) int64 { return a ^ b })
	case *g.WhereNode:
		return true, s.where(n)
	}
	return false, nil
}

// The node bodies that were cases of the one big switch, unchanged.

func (s *session) idCopy(xt, out g.Tid) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	if xt == out {
		return nil
	}
	return s.set(out, x)
}

// alias makes out name xt's tensor: ContiguousNode copies nothing, as
// every reader takes strides (fl copies where it needs dense data).
func (s *session) alias(xt, out g.Tid) error {
	x, err := s.get(xt)
	if err != nil {
		return err
	}
	return s.set(out, x)
}

func (s *session) itemInt(n *g.ItemIntNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if x.numel() != 1 {
		return fmt.Errorf("item of a tensor of shape %v", x.shape)
	}
	var v int64
	if x.isInt() {
		v = x.ints()[0]
	} else {
		v = int64(s.fl(x)[0])
	}
	return s.setVal(n.Out, value{i: int64(int32(v))})
}

func (s *session) symSize(n *g.SymSizeNode) error {
	x, err := s.get(n.A)
	if err != nil {
		return err
	}
	d, err := normAxis(int(n.Dim), len(x.shape), "SymSize")
	if err != nil {
		return err
	}
	return s.setVal(n.Out, value{i: int64(x.shape[d])})
}

func (s *session) expandDims(n *g.ExpandDimsNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	ax, err := normAxis(int(n.Axis), len(x.shape)+1, "ExpandDims")
	if err != nil {
		return err
	}
	shape := append(append(s.tmp(0, x.shape[:ax]...), 1), x.shape[ax:]...)
	st := append(append(s.tmp(1, x.strides[:ax]...), 0), x.strides[ax:]...)
	s.scratch[0], s.scratch[1] = shape, st
	return s.set(n.Out, s.view(x, shape, st, x.off))
}

func (s *session) transpose(n *g.TransposeNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if len(n.Perm) != len(x.shape) {
		return fmt.Errorf("transpose: perm %v for rank %d", n.Perm, len(x.shape))
	}
	shape, st := s.tmp(0, x.shape...), s.tmp(1, x.strides...)
	seen := s.tmp(2, x.shape...)
	clear(seen)
	for i, p := range n.Perm {
		a, err := normAxis(int(p), len(x.shape), "Transpose")
		if err != nil {
			return err
		}
		if seen[a] != 0 {
			return fmt.Errorf("transpose: perm %v repeats an axis", n.Perm)
		}
		seen[a] = 1
		shape[i], st[i] = x.shape[a], x.strides[a]
	}
	return s.set(n.Out, s.view(x, shape, st, x.off))
}

func (s *session) broadcastTo(n *g.BroadcastToNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	shape, err := s.resolveInts(n.Shape)
	if err != nil {
		return err
	}
	lead := len(shape) - len(x.shape)
	for i := range shape {
		if shape[i] == -1 && i-lead >= 0 && i-lead < len(x.shape) {
			shape[i] = x.shape[i-lead]
		}
	}
	if _, err := checkElems(shape); err != nil {
		return fmt.Errorf("BroadcastTo: %w", err)
	}
	v, err := s.broadcastView(x, shape)
	if err != nil {
		return fmt.Errorf("BroadcastTo: %w", err)
	}
	return s.set(n.Out, v)
}

func (s *session) neg(n *g.NegNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if x.isInt() {
		v := x.ints()
		o := make([]int64, len(v))
		for i := range v {
			o[i] = -v[i]
		}
		return s.set(n.Out, s.newI(x.dt, x.shape, o))
	}
	return s.unaryOp(n.X, n.Out, opNeg)
}

func (s *session) gelu(n *g.GeluNode) error {
	if n.Approximate == "tanh" {
		return s.unary(n.X, n.Out, func(x float32) float32 {
			x3 := x * x * x
			return 0.5 * x * (1 + float32(math.Tanh(float64(0.7978845608*(x+0.044715*x3)))))
		})
	}
	return s.unary(n.X, n.Out, func(x float32) float32 {
		return 0.5 * x * (1 + float32(math.Erf(float64(x*0.7071067812))))
	})
}

func (s *session) bitwiseInvert(n *g.BitwiseInvertNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if !x.isInt() {
		return fmt.Errorf("bitwise invert of a float tensor")
	}
	if x.dt == stBool {
		return s.mapBool(n.X, n.Out, func(v float64) bool { return v == 0 })
	}
	v := x.ints()
	o := make([]int64, len(v))
	for i := range v {
		o[i] = ^v[i]
	}
	return s.set(n.Out, s.newI(x.dt, x.shape, o))
}

func sign32(x float32) float32 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0, NaN
}

func remainderF(a, b float32) float32 {
	r := float32(math.Mod(float64(a), float64(b)))
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

func remainderI(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	r := a % b
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

func logAddExp(a, b float32) float32 {
	m := max(a, b)
	if math.IsInf(float64(m), -1) {
		return m
	}
	return m + float32(math.Log1p(math.Exp(-math.Abs(float64(a-b)))))
}

func floorDivInt(a, b int64) (int64, error) {
	if b == 0 {
		return 0, fmt.Errorf("division by zero")
	}
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q, nil
}

func modInt(a, b int64) (int64, error) {
	if b == 0 {
		return 0, fmt.Errorf("modulo by zero")
	}
	r := a % b
	if r != 0 && ((r < 0) != (b < 0)) {
		r += b
	}
	return r, nil
}

func prod(v []float32) float32 {
	p := 1.0
	for _, x := range v {
		p *= float64(x)
	}
	return float32(p)
}

func logSumExp(v []float32) float32 {
	m := float64(slices.Max(v))
	if math.IsInf(m, 0) {
		return float32(m)
	}
	var acc float64
	for _, x := range v {
		acc += math.Exp(float64(x) - m)
	}
	return float32(m + math.Log(acc))
}

func softmaxLane(dst, v []float32) {
	m := slices.Max(v)
	var acc float64
	for i, x := range v {
		e := math.Exp(float64(x - m))
		dst[i] = float32(e)
		acc += e
	}
	for i := range dst {
		dst[i] = float32(float64(dst[i]) / acc)
	}
}

func cumsumLane(dst, v []float32, reverse, inclusive bool) {
	var acc float64
	for k := range v {
		i := k
		if reverse {
			i = len(v) - 1 - k
		}
		if inclusive {
			acc += float64(v[i])
			dst[i] = float32(acc)
		} else {
			dst[i] = float32(acc)
			acc += float64(v[i])
		}
	}
}

func (s *session) full(n *g.FullNode) error {
	shape, err := s.resolveInts(n.Shape)
	if err != nil {
		return err
	}
	cnt, err := checkElems(shape)
	if err != nil {
		return fmt.Errorf("full: %w", err)
	}
	fv, err := s.floatOrVid(n.V)
	if err != nil {
		return err
	}
	st := int(n.ScalarType)
	if isIntST(st) {
		o := make([]int64, cnt)
		for i := range o {
			o[i] = int64(fv)
		}
		return s.set(n.Out, s.newI(st, shape, o))
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	for i := range o {
		o[i] = float32(fv)
	}
	return s.set(n.Out, s.newF(st, shape, o))
}

func (s *session) fullLike(n *g.FullLikeNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	v, err := s.floatOrVid(n.V)
	if err != nil {
		return err
	}
	dt := x.dt
	if n.ScalarType != nil {
		dt = int(*n.ScalarType)
	}
	return s.fill(n.Out, dt, x.shape, func([]int) float64 { return v })
}

func (s *session) arange(n *g.ARangeNode) error {
	start, err := s.resolveInt(n.Start)
	if err != nil {
		return err
	}
	stop, err := s.resolveInt(n.Stop)
	if err != nil {
		return err
	}
	step, err := s.resolveInt(n.Step)
	if err != nil {
		return err
	}
	if step == 0 {
		return fmt.Errorf("ARange: step 0")
	}
	cnt := 0
	if r := stop - start; (r > 0 && step > 0) || (r < 0 && step < 0) {
		cnt = (r + step - sign(step)) / step
	}
	if cnt > maxElems {
		return fmt.Errorf("ARange: %d elements", cnt)
	}
	st := stI32
	if n.ScalarType != nil {
		st = int(*n.ScalarType)
	}
	if isFloatST(st) {
		o, _ := s.allocF(cnt)
		for i := range o {
			o[i] = float32(start + i*step)
		}
		return s.set(n.Out, s.newF(st, []int{cnt}, o))
	}
	o := make([]int64, cnt)
	for i := range o {
		o[i] = int64(start + i*step)
	}
	return s.set(n.Out, s.newI(st, []int{cnt}, o))
}

func (s *session) tri(n *g.TriNode) error {
	rows, err := s.resolveInt(n.N)
	if err != nil {
		return err
	}
	cols, err := s.resolveInt(n.M)
	if err != nil {
		return err
	}
	dt := stF32
	if n.ScalarType != nil {
		dt = int(*n.ScalarType)
	}
	k := int(n.K)
	return s.fill(n.Out, dt, []int{rows, cols}, func(idx []int) float64 {
		if idx[1] <= idx[0]+k {
			return 1
		}
		return 0
	})
}
