package cpu

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	g "etchat/inference/mlxgraph"
	"etchat/inference/pte"
	"etchat/inference/pte/ptetest"
)

// The op table: every one of schema.fbs's node kinds is either executed —
// and then checked here on a one-node synthetic graph against a plain
// reference — or refused when the program loads, with the node named.

func ft(shape []int, v ...float32) *tensor {
	return &tensor{dt: stF32, shape: shape, strides: contiguousStrides(shape), f: v}
}

func it(dt int, shape []int, v ...int64) *tensor {
	return &tensor{dt: dt, shape: shape, strides: contiguousStrides(shape), i: v}
}

// opCase runs op with inputs in tensor slots 0, 1, … and values in value
// slots 0, 1, …, and compares the tensors at want's slots.
type opCase struct {
	kind string
	op   any
	in   []*tensor
	vals []value
	want map[g.Tid]*tensor
	tol  float64
}

const out0 = g.Tid(10)

func runOp(c opCase) (*session, error) {
	s := &session{m: &model{graph: &g.Graph{}}, threads: 1, slots: make([]*tensor, 16), vals: make([]value, 4)}
	copy(s.slots, c.in)
	for i, v := range c.vals {
		v.set = true
		s.vals[i] = v
	}
	err := s.run(context.Background(), []g.Instruction{{Kind: c.kind, Op: c.op}})
	return s, err
}

func checkOp(t *testing.T, c opCase) {
	t.Helper()
	s, err := runOp(c)
	if err != nil {
		t.Fatalf("%s: %v", c.kind, err)
	}
	for slot, want := range c.want {
		got := s.slots[slot]
		if got == nil {
			t.Fatalf("%s: slot %d not written", c.kind, slot)
		}
		if !slices.Equal(got.shape, want.shape) {
			t.Fatalf("%s: shape %v, want %v", c.kind, got.shape, want.shape)
		}
		if got.isInt() != want.isInt() {
			t.Fatalf("%s: integer result %v, want %v", c.kind, got.isInt(), want.isInt())
		}
		gv, wv := got.floats(nil), want.floats(nil)
		for i := range wv {
			a, b := float64(gv[i]), float64(wv[i])
			if math.IsNaN(a) && math.IsNaN(b) {
				continue
			}
			if math.Abs(a-b) > c.tol+1e-6*math.Abs(b) {
				t.Fatalf("%s: out[%d] = %v, want %v (all %v, want %v)", c.kind, i, gv[i], wv[i], gv, wv)
			}
		}
	}
}

// elementwise reference: float64 math on every element.
func mapF(x *tensor, fn func(float64) float64) *tensor {
	o := make([]float32, len(x.f))
	for i, v := range x.f {
		o[i] = float32(fn(float64(v)))
	}
	return ft(x.shape, o...)
}

// binary reference over a [2,3] and a [3] broadcast along rows.
func zipF(a, b *tensor, fn func(x, y float64) float64) *tensor {
	o := make([]float32, len(a.f))
	for i := range o {
		o[i] = float32(fn(float64(a.f[i]), float64(b.f[i%len(b.f)])))
	}
	return ft(a.shape, o...)
}

func zipB(a, b *tensor, fn func(x, y float64) bool) *tensor {
	o := make([]int64, len(a.f))
	for i := range o {
		if fn(float64(a.f[i]), float64(b.f[i%len(b.f)])) {
			o[i] = 1
		}
	}
	return it(stBool, a.shape, o...)
}

func un(x, out g.Tid) g.UnaryNode    { return g.UnaryNode{X: x, Out: out} }
func bin(a, b, o g.Tid) g.BinaryNode { return g.BinaryNode{A: a, B: b, Out: o} }
func lit(v int64) g.IntOrVid         { return g.IntOrVid{Literal: v} }
func p[T any](v T) *T                { return &v }

func opCases() []opCase {
	x := ft([]int{2, 3}, -1.5, -0.5, 0.25, 0.75, 2, 3.5)
	pos := ft([]int{2, 3}, 0.1, 0.5, 1, 2, 4, 9)
	unit := ft([]int{2, 3}, -0.9, -0.5, 0, 0.25, 0.5, 0.9)
	ge1 := ft([]int{2, 3}, 1, 1.5, 2, 3, 5, 10)
	a := ft([]int{2, 3}, 1, 2, 3, -4, 5, -6)
	b := ft([]int{3}, 2, -3, 0.5)
	sq := func(v float64) float64 { return v * v }
	unary := []struct {
		kind string
		op   func(g.UnaryNode) any
		in   *tensor
		ref  func(float64) float64
	}{
		{"SiluNode", func(u g.UnaryNode) any { n := g.SiluNode(u); return &n }, x, func(v float64) float64 { return v / (1 + math.Exp(-v)) }},
		{"SigmoidNode", func(u g.UnaryNode) any { n := g.SigmoidNode(u); return &n }, x, func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
		{"TanhNode", func(u g.UnaryNode) any { n := g.TanhNode(u); return &n }, x, math.Tanh},
		{"RsqrtNode", func(u g.UnaryNode) any { n := g.RsqrtNode(u); return &n }, pos, func(v float64) float64 { return 1 / math.Sqrt(v) }},
		{"SqrtNode", func(u g.UnaryNode) any { n := g.SqrtNode(u); return &n }, pos, math.Sqrt},
		{"SinNode", func(u g.UnaryNode) any { n := g.SinNode(u); return &n }, x, math.Sin},
		{"CosNode", func(u g.UnaryNode) any { n := g.CosNode(u); return &n }, x, math.Cos},
		{"ExpNode", func(u g.UnaryNode) any { n := g.ExpNode(u); return &n }, x, math.Exp},
		{"SquareNode", func(u g.UnaryNode) any { n := g.SquareNode(u); return &n }, x, sq},
		{"AbsNode", func(u g.UnaryNode) any { n := g.AbsNode(u); return &n }, x, math.Abs},
		{"NegNode", func(u g.UnaryNode) any { n := g.NegNode(u); return &n }, x, func(v float64) float64 { return -v }},
		{"ContiguousNode", func(u g.UnaryNode) any { n := g.ContiguousNode(u); return &n }, x, func(v float64) float64 { return v }},
		{"LogNode", func(u g.UnaryNode) any { n := g.LogNode(u); return &n }, pos, math.Log},
		{"ErfNode", func(u g.UnaryNode) any { n := g.ErfNode(u); return &n }, x, math.Erf},
		{"ReciprocalNode", func(u g.UnaryNode) any { n := g.ReciprocalNode(u); return &n }, x, func(v float64) float64 { return 1 / v }},
		{"FloorNode", func(u g.UnaryNode) any { n := g.FloorNode(u); return &n }, x, math.Floor},
		{"CeilNode", func(u g.UnaryNode) any { n := g.CeilNode(u); return &n }, x, math.Ceil},
		{"TanNode", func(u g.UnaryNode) any { n := g.TanNode(u); return &n }, unit, math.Tan},
		{"ArcsinNode", func(u g.UnaryNode) any { n := g.ArcsinNode(u); return &n }, unit, math.Asin},
		{"ArccosNode", func(u g.UnaryNode) any { n := g.ArccosNode(u); return &n }, unit, math.Acos},
		{"ArctanNode", func(u g.UnaryNode) any { n := g.ArctanNode(u); return &n }, x, math.Atan},
		{"SinhNode", func(u g.UnaryNode) any { n := g.SinhNode(u); return &n }, x, math.Sinh},
		{"CoshNode", func(u g.UnaryNode) any { n := g.CoshNode(u); return &n }, x, math.Cosh},
		{"ArcsinhNode", func(u g.UnaryNode) any { n := g.ArcsinhNode(u); return &n }, x, math.Asinh},
		{"ArccoshNode", func(u g.UnaryNode) any { n := g.ArccoshNode(u); return &n }, ge1, math.Acosh},
		{"ArctanhNode", func(u g.UnaryNode) any { n := g.ArctanhNode(u); return &n }, unit, math.Atanh},
		{"Log2Node", func(u g.UnaryNode) any { n := g.Log2Node(u); return &n }, pos, math.Log2},
		{"Log10Node", func(u g.UnaryNode) any { n := g.Log10Node(u); return &n }, pos, math.Log10},
		{"Log1pNode", func(u g.UnaryNode) any { n := g.Log1pNode(u); return &n }, pos, math.Log1p},
		{"Expm1Node", func(u g.UnaryNode) any { n := g.Expm1Node(u); return &n }, x, math.Expm1},
		{"SignNode", func(u g.UnaryNode) any { n := g.SignNode(u); return &n }, unit, func(v float64) float64 {
			if v == 0 {
				return 0
			}
			return math.Copysign(1, v)
		}},
	}
	var cs []opCase
	for _, u := range unary {
		cs = append(cs, opCase{kind: u.kind, op: u.op(un(0, out0)), in: []*tensor{u.in}, want: map[g.Tid]*tensor{out0: mapF(u.in, u.ref)}, tol: 1e-6})
	}
	binary := []struct {
		kind string
		op   func(g.BinaryNode) any
		ref  func(x, y float64) float64
	}{
		{"AddNode", func(b g.BinaryNode) any { n := g.AddNode(b); return &n }, func(x, y float64) float64 { return x + y }},
		{"SubtractNode", func(b g.BinaryNode) any { n := g.SubtractNode(b); return &n }, func(x, y float64) float64 { return x - y }},
		{"MultiplyNode", func(b g.BinaryNode) any { n := g.MultiplyNode(b); return &n }, func(x, y float64) float64 { return x * y }},
		{"DivideNode", func(b g.BinaryNode) any { n := g.DivideNode(b); return &n }, func(x, y float64) float64 { return x / y }},
		{"MaximumNode", func(b g.BinaryNode) any { n := g.MaximumNode(b); return &n }, math.Max},
		{"MinimumNode", func(b g.BinaryNode) any { n := g.MinimumNode(b); return &n }, math.Min},
		{"PowerNode", func(b g.BinaryNode) any { n := g.PowerNode(b); return &n }, math.Pow},
		{"FloorDivideNode", func(b g.BinaryNode) any { n := g.FloorDivideNode(b); return &n }, func(x, y float64) float64 { return math.Floor(x / y) }},
		{"RemainderNode", func(b g.BinaryNode) any { n := g.RemainderNode(b); return &n }, func(x, y float64) float64 { return x - y*math.Floor(x/y) }},
		{"Atan2Node", func(b g.BinaryNode) any { n := g.Atan2Node(b); return &n }, math.Atan2},
		{"LogAddExpNode", func(b g.BinaryNode) any { n := g.LogAddExpNode(b); return &n }, func(x, y float64) float64 { return math.Log(math.Exp(x) + math.Exp(y)) }},
	}
	for _, c := range binary {
		cs = append(cs, opCase{kind: c.kind, op: c.op(bin(0, 1, out0)), in: []*tensor{a, b}, want: map[g.Tid]*tensor{out0: zipF(a, b, c.ref)}, tol: 1e-5})
	}
	compare := []struct {
		kind string
		op   func(g.BinaryNode) any
		ref  func(x, y float64) bool
	}{
		{"LessNode", func(b g.BinaryNode) any { n := g.LessNode(b); return &n }, func(x, y float64) bool { return x < y }},
		{"LessEqualNode", func(b g.BinaryNode) any { n := g.LessEqualNode(b); return &n }, func(x, y float64) bool { return x <= y }},
		{"GreaterNode", func(b g.BinaryNode) any { n := g.GreaterNode(b); return &n }, func(x, y float64) bool { return x > y }},
		{"GreaterEqualNode", func(b g.BinaryNode) any { n := g.GreaterEqualNode(b); return &n }, func(x, y float64) bool { return x >= y }},
		{"EqualNode", func(b g.BinaryNode) any { n := g.EqualNode(b); return &n }, func(x, y float64) bool { return x == y }},
		{"NotEqualNode", func(b g.BinaryNode) any { n := g.NotEqualNode(b); return &n }, func(x, y float64) bool { return x != y }},
		{"LogicalAndNode", func(b g.BinaryNode) any { n := g.LogicalAndNode(b); return &n }, func(x, y float64) bool { return x != 0 && y != 0 }},
		{"LogicalOrNode", func(b g.BinaryNode) any { n := g.LogicalOrNode(b); return &n }, func(x, y float64) bool { return x != 0 || y != 0 }},
	}
	ca := ft([]int{2, 3}, 2, 0, 0.5, -3, 1, 0)
	cb := ft([]int{3}, 2, 0, 1)
	for _, c := range compare {
		cs = append(cs, opCase{kind: c.kind, op: c.op(bin(0, 1, out0)), in: []*tensor{ca, cb}, want: map[g.Tid]*tensor{out0: zipB(ca, cb, c.ref)}})
	}
	ia := it(stI32, []int{4}, 12, 10, -7, 5)
	ib := it(stI32, []int{4}, 10, 6, 3, -2)
	for _, c := range []struct {
		kind string
		op   any
		want []int64
	}{
		{"BitwiseAndNode", &g.BitwiseAndNode{A: 0, B: 1, Out: out0}, []int64{12 & 10, 10 & 6, -7 & 3, 5 & -2}},
		{"BitwiseOrNode", &g.BitwiseOrNode{A: 0, B: 1, Out: out0}, []int64{12 | 10, 10 | 6, -7 | 3, 5 | -2}},
		{"BitwiseXorNode", &g.BitwiseXorNode{A: 0, B: 1, Out: out0}, []int64{12 ^ 10, 10 ^ 6, -7 ^ 3, 5 ^ -2}},
		// integer floor division and remainder take the divisor's sign
		{"FloorDivideNode", &g.FloorDivideNode{A: 0, B: 1, Out: out0}, []int64{1, 1, -3, -3}},
		{"RemainderNode", &g.RemainderNode{A: 0, B: 1, Out: out0}, []int64{2, 4, 2, -1}},
	} {
		cs = append(cs, opCase{kind: c.kind, op: c.op, in: []*tensor{ia, ib}, want: map[g.Tid]*tensor{out0: it(stI32, []int{4}, c.want...)}})
	}
	cs = append(cs,
		opCase{kind: "BitwiseInvertNode", op: &g.BitwiseInvertNode{X: 0, Out: out0}, in: []*tensor{ia},
			want: map[g.Tid]*tensor{out0: it(stI32, []int{4}, ^12, ^10, ^-7, ^5)}},
		opCase{kind: "LogicalNotNode", op: &g.LogicalNotNode{X: 0, Out: out0}, in: []*tensor{ft([]int{3}, 0, 2, -1)},
			want: map[g.Tid]*tensor{out0: it(stBool, []int{3}, 1, 0, 0)}},
		opCase{kind: "RoundNode", op: &g.RoundNode{X: 0, Out: out0}, in: []*tensor{ft([]int{4}, 0.5, 1.5, -2.5, 2.6)},
			want: map[g.Tid]*tensor{out0: ft([]int{4}, 0, 2, -2, 3)}},
		opCase{kind: "RoundNode", op: &g.RoundNode{X: 0, Out: out0, Decimals: 1}, in: []*tensor{ft([]int{2}, 1.26, -0.04)},
			want: map[g.Tid]*tensor{out0: ft([]int{2}, 1.3, 0)}, tol: 1e-6},
	)

	// Reductions over m = [[1, 5, 2], [-3, 4, 0]].
	m := ft([]int{2, 3}, 1, 5, 2, -3, 4, 0)
	red := func(r g.ReduceNode) g.ReduceNode { r.X, r.Out = 0, out0; return r }
	cs = append(cs,
		opCase{kind: "SumNode", op: p(g.SumNode(red(g.ReduceNode{Axes: []int32{1}}))), in: []*tensor{m}, want: map[g.Tid]*tensor{out0: ft([]int{2}, 8, 1)}},
		opCase{kind: "MeanNode", op: p(g.MeanNode(red(g.ReduceNode{Axes: []int32{-1}, KeepDims: true}))), in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 1}, 8.0/3, 1.0/3)}, tol: 1e-6},
		opCase{kind: "MaxNode", op: p(g.MaxNode(red(g.ReduceNode{Axes: []int32{0}}))), in: []*tensor{m}, want: map[g.Tid]*tensor{out0: ft([]int{3}, 1, 5, 2)}},
		opCase{kind: "MinNode", op: p(g.MinNode(red(g.ReduceNode{}))), in: []*tensor{m}, want: map[g.Tid]*tensor{out0: ft([]int{}, -3)}},
		opCase{kind: "ProdNode", op: p(g.ProdNode(red(g.ReduceNode{Axes: []int32{1}}))), in: []*tensor{m}, want: map[g.Tid]*tensor{out0: ft([]int{2}, 10, 0)}},
		opCase{kind: "LogSumExpNode", op: p(g.LogSumExpNode(red(g.ReduceNode{Axes: []int32{1}}))), in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2}, float32(math.Log(math.E+math.Exp(5)+math.Exp(2))), float32(math.Log(math.Exp(-3)+math.Exp(4)+1)))}, tol: 1e-5},
		opCase{kind: "VarNode", op: &g.VarNode{ReduceNode: red(g.ReduceNode{Axes: []int32{1}}), DDof: 1}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2}, 13.0/3, 37.0/3)}, tol: 1e-5},
		opCase{kind: "StdNode", op: &g.StdNode{ReduceNode: red(g.ReduceNode{Axes: []int32{1}})}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2}, float32(math.Sqrt(26.0/9)), float32(math.Sqrt(74.0/9)))}, tol: 1e-5},
		opCase{kind: "AnyNode", op: p(g.AnyNode(red(g.ReduceNode{Axes: []int32{0}}))), in: []*tensor{ft([]int{2, 2}, 0, 1, 0, 0)},
			want: map[g.Tid]*tensor{out0: it(stBool, []int{2}, 0, 1)}},
		opCase{kind: "AllNode", op: p(g.AllNode(red(g.ReduceNode{Axes: []int32{1}}))), in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: it(stBool, []int{2}, 1, 0)}},
		opCase{kind: "ArgmaxNode", op: &g.ArgmaxNode{X: 0, Out: out0, Axis: 1}, in: []*tensor{m}, want: map[g.Tid]*tensor{out0: it(stU32, []int{2}, 1, 1)}},
		opCase{kind: "ArgminNode", op: &g.ArgminNode{X: 0, Out: out0, Axis: 0, KeepDims: true}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: it(stU32, []int{1, 3}, 1, 1, 1)}},
		opCase{kind: "SoftmaxNode", op: &g.SoftmaxNode{X: 0, Out: out0, Axis: 0}, in: []*tensor{ft([]int{2, 2}, 0, 1, math.Float32frombits(0x3f317218), 1)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 1.0/3, 0.5, 2.0/3, 0.5)}, tol: 1e-6},
		opCase{kind: "CumsumNode", op: &g.CumsumNode{X: 0, Out: out0, Axis: 1, Inclusive: true}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 1, 6, 8, -3, 1, 1)}},
		opCase{kind: "CumsumNode", op: &g.CumsumNode{X: 0, Out: out0, Axis: 1, Reverse: true}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 7, 2, 0, 4, 0, 0)}},
		opCase{kind: "SortNode", op: &g.SortNode{X: 0, Out: out0, Axis: -1}, in: []*tensor{m}, want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 1, 2, 5, -3, 0, 4)}},
		opCase{kind: "ArgsortNode", op: &g.ArgsortNode{X: 0, Out: out0, Axis: 0}, in: []*tensor{m}, want: map[g.Tid]*tensor{out0: it(stU32, []int{2, 3}, 1, 1, 1, 0, 0, 0)}},
	)

	// Norms, RoPE, attention-free layer pieces.
	rows := ft([]int{2, 4}, 1, 2, 3, 4, -1, 0, 1, 6)
	lnRef := func(w, b []float64) *tensor {
		var o []float32
		for r := 0; r < 2; r++ {
			v := rows.f[r*4 : r*4+4]
			mean := (float64(v[0]) + float64(v[1]) + float64(v[2]) + float64(v[3])) / 4
			var vr float64
			for _, x := range v {
				vr += (float64(x) - mean) * (float64(x) - mean)
			}
			sd := math.Sqrt(vr/4 + 1e-5)
			for i, x := range v {
				o = append(o, float32((float64(x)-mean)/sd*w[i]+b[i]))
			}
		}
		return ft([]int{2, 4}, o...)
	}
	rmsRef := func() *tensor {
		var o []float32
		for r := 0; r < 2; r++ {
			v := rows.f[r*4 : r*4+4]
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			inv := 1 / math.Sqrt(ss/4+1e-6)
			for i, x := range v {
				o = append(o, float32(float64(x)*inv*float64(i+1)))
			}
		}
		return ft([]int{2, 4}, o...)
	}
	cs = append(cs,
		opCase{kind: "LayerNormNode", op: &g.LayerNormNode{X: 0, Out: out0, Weight: p(g.Tid(1)), Bias: p(g.Tid(2)), Eps: 1e-5},
			in:   []*tensor{rows, ft([]int{4}, 1, 2, 0.5, -1), ft([]int{4}, 0, 0.1, 0.2, 0.3)},
			want: map[g.Tid]*tensor{out0: lnRef([]float64{1, 2, 0.5, -1}, []float64{0, 0.1, 0.2, 0.3})}, tol: 1e-5},
		opCase{kind: "LayerNormNode", op: &g.LayerNormNode{X: 0, Out: out0, Eps: 1e-5}, in: []*tensor{rows},
			want: map[g.Tid]*tensor{out0: lnRef([]float64{1, 1, 1, 1}, []float64{0, 0, 0, 0})}, tol: 1e-5},
		opCase{kind: "RMSNormNode", op: &g.RMSNormNode{X: 0, Out: out0, Weight: p(g.Tid(1)), Eps: 1e-6}, in: []*tensor{rows, ft([]int{4}, 1, 2, 3, 4)},
			want: map[g.Tid]*tensor{out0: rmsRef()}, tol: 1e-5},
		ropeCase(false, nil), ropeCase(true, nil), ropeCase(false, []float32{1, 10, 100}),
	)

	// Selection and shape.
	cs = append(cs,
		opCase{kind: "WhereNode", op: &g.WhereNode{Condition: 0, X: 1, Y: 2, Out: out0},
			in:   []*tensor{it(stBool, []int{2, 1}, 1, 0), ft([]int{2, 2}, 1, 2, 3, 4), ft([]int{2}, -1, -2)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 1, 2, -1, -2)}},
		opCase{kind: "ClipNode", op: &g.ClipNode{X: 0, Out: out0, AMin: p(g.Tid(1)), AMax: p(g.Tid(2))},
			in:   []*tensor{m, ft([]int{}, 0), ft([]int{3}, 4, 4, 1)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 1, 4, 1, 0, 4, 0)}},
		opCase{kind: "SqueezeNode", op: &g.SqueezeNode{X: 0, Out: out0, Dims: []int32{0}}, in: []*tensor{ft([]int{1, 3, 1}, 1, 2, 3)},
			want: map[g.Tid]*tensor{out0: ft([]int{3, 1}, 1, 2, 3)}},
		opCase{kind: "SqueezeNode", op: &g.SqueezeNode{X: 0, Out: out0}, in: []*tensor{ft([]int{1, 3, 1}, 1, 2, 3)},
			want: map[g.Tid]*tensor{out0: ft([]int{3}, 1, 2, 3)}},
		opCase{kind: "SplitNode", op: &g.SplitNode{X: 0, Outs: []g.Tid{10, 11}, Sizes: []g.IntOrVid{lit(1), {Vid: 0, IsVid: true}}, Axis: -1},
			in: []*tensor{m}, vals: []value{{i: 2}},
			want: map[g.Tid]*tensor{10: ft([]int{2, 1}, 1, -3), 11: ft([]int{2, 2}, 5, 2, 4, 0)}},
		opCase{kind: "StackNode", op: &g.StackNode{Tensors: []g.Tid{0, 1}, Out: out0, Axis: 1}, in: []*tensor{ft([]int{2}, 1, 2), ft([]int{2}, 3, 4)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 1, 3, 2, 4)}},
		opCase{kind: "ConcatenateNode", op: &g.ConcatenateNode{Tensors: []g.Tid{0, 1}, Out: out0, Axis: 0}, in: []*tensor{ft([]int{1, 2}, 1, 2), ft([]int{2, 2}, 3, 4, 5, 6)},
			want: map[g.Tid]*tensor{out0: ft([]int{3, 2}, 1, 2, 3, 4, 5, 6)}},
		opCase{kind: "TileNode", op: &g.TileNode{X: 0, Out: out0, Reps: []g.IntOrVid{lit(2), lit(2)}}, in: []*tensor{ft([]int{2}, 1, 2)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 4}, 1, 2, 1, 2, 1, 2, 1, 2)}},
		opCase{kind: "RepeatNode", op: &g.RepeatNode{X: 0, Out: out0, Repeats: lit(2), Axis: 0}, in: []*tensor{ft([]int{2, 2}, 1, 2, 3, 4)},
			want: map[g.Tid]*tensor{out0: ft([]int{4, 2}, 1, 2, 1, 2, 3, 4, 3, 4)}},
		opCase{kind: "RollNode", op: &g.RollNode{X: 0, Out: out0, Shift: []g.IntOrVid{lit(1)}, Axes: []int32{1}}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 2, 1, 5, 0, -3, 4)}},
		opCase{kind: "PadNode", op: &g.PadNode{X: 0, Out: out0, PadWidth: []g.IntOrVid{lit(0), lit(1), lit(1), lit(0)}, Mode: "constant", ConstantValue: 9},
			in: []*tensor{ft([]int{1, 2}, 1, 2)}, want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 9, 1, 2, 9, 9, 9)}},
		opCase{kind: "TakeAlongAxisNode", op: &g.TakeAlongAxisNode{X: 0, Indices: 1, Out: out0, Axis: 1}, in: []*tensor{m, it(stI32, []int{2, 2}, 2, 0, -1, 1)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 2, 1, 0, 4)}},
		opCase{kind: "TakeNode", op: &g.TakeNode{X: 0, Out: out0, Index: g.IntOrVidOrTid{Tid: 1, Kind: g.KindTid}, Axis: 0}, in: []*tensor{m, it(stI64, []int{3}, 1, 0, 1)},
			want: map[g.Tid]*tensor{out0: ft([]int{3, 3}, -3, 4, 0, 1, 5, 2, -3, 4, 0)}},
		opCase{kind: "IndexCopyNode", op: &g.IndexCopyNode{Dst: 0, Update: 1, Indices: 2, Out: out0, Axis: 1},
			in:   []*tensor{m, ft([]int{2, 1}, 7, 8), it(stI64, []int{1}, 2)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 1, 5, 7, -3, 4, 8)}},
		opCase{kind: "SliceUpdateNode", op: &g.SliceUpdateNode{Dst: 0, Update: 1, Out: out0, Axis: lit(1), Start: lit(1), Stop: lit(3), Step: 1},
			in:   []*tensor{m, ft([]int{2, 2}, 7, 8, 9, 10)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 1, 7, 8, -3, 9, 10)}},
		opCase{kind: "SliceNode", op: &g.SliceNode{X: 0, Out: out0, Axis: lit(1), Start: lit(1), Stop: lit(1 << 40), Step: 1}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 5, 2, 4, 0)}},
		opCase{kind: "TransposeNode", op: &g.TransposeNode{X: 0, Out: out0, Perm: []int32{1, 0}}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{3, 2}, 1, -3, 5, 4, 2, 0)}},
		opCase{kind: "ReshapeNode", op: &g.ReshapeNode{X: 0, Out: out0, Shape: []g.IntOrVid{lit(3), lit(-1)}}, in: []*tensor{m},
			want: map[g.Tid]*tensor{out0: ft([]int{3, 2}, 1, 5, 2, -3, 4, 0)}},
		opCase{kind: "ExpandDimsNode", op: &g.ExpandDimsNode{X: 0, Out: out0, Axis: -1}, in: []*tensor{ft([]int{2}, 1, 2)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 1}, 1, 2)}},
		opCase{kind: "BroadcastToNode", op: &g.BroadcastToNode{X: 0, Out: out0, Shape: []g.IntOrVid{lit(2), lit(-1)}}, in: []*tensor{ft([]int{1, 2}, 1, 2)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 1, 2, 1, 2)}},
		opCase{kind: "AsTypeNode", op: &g.AsTypeNode{X: 0, Out: out0, ScalarType: stI32}, in: []*tensor{ft([]int{2}, 1.7, -2.2)},
			want: map[g.Tid]*tensor{out0: it(stI32, []int{2}, 1, -2)}},
		opCase{kind: "IdCopyNode", op: &g.IdCopyNode{X: 0, Out: out0}, in: []*tensor{m}, want: map[g.Tid]*tensor{out0: m}},
		opCase{kind: "NoopNode", op: &g.NoopNode{}, in: []*tensor{m}, want: map[g.Tid]*tensor{0: m}},
		opCase{kind: "FullNode", op: &g.FullNode{Out: out0, Shape: []g.IntOrVid{lit(2)}, V: g.FloatOrVid{Literal: 1.5}, ScalarType: stF32},
			want: map[g.Tid]*tensor{out0: ft([]int{2}, 1.5, 1.5)}},
		opCase{kind: "FullLikeNode", op: &g.FullLikeNode{X: 0, Out: out0, V: g.FloatOrVid{Vid: 0, IsVid: true}}, in: []*tensor{ft([]int{1, 2}, 0, 0)},
			vals: []value{{f: -2, isFloat: true}}, want: map[g.Tid]*tensor{out0: ft([]int{1, 2}, -2, -2)}},
		opCase{kind: "ARangeNode", op: &g.ARangeNode{Out: out0, Start: lit(1), Stop: lit(8), Step: lit(3)},
			want: map[g.Tid]*tensor{out0: it(stI32, []int{3}, 1, 4, 7)}},
		opCase{kind: "TrilNode", op: &g.TrilNode{X: 0, Out: out0}, in: []*tensor{ft([]int{2, 2}, 1, 2, 3, 4)}, want: map[g.Tid]*tensor{out0: ft([]int{2, 2}, 1, 0, 3, 4)}},
		opCase{kind: "TriuNode", op: &g.TriuNode{X: 0, Out: out0, K: 1}, in: []*tensor{ft([]int{2, 3}, 1, 2, 3, 4, 5, 6)},
			want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 0, 2, 3, 0, 0, 6)}},
		opCase{kind: "TriNode", op: &g.TriNode{Out: out0, N: lit(2), M: lit(3), K: 0}, want: map[g.Tid]*tensor{out0: ft([]int{2, 3}, 1, 0, 0, 1, 1, 0)}},
		opCase{kind: "GeluNode", op: &g.GeluNode{X: 0, Out: out0, Approximate: "none"}, in: []*tensor{x},
			want: map[g.Tid]*tensor{out0: mapF(x, func(v float64) float64 { return v / 2 * (1 + math.Erf(v/math.Sqrt2)) })}, tol: 1e-6},
		opCase{kind: "GeluNode", op: &g.GeluNode{X: 0, Out: out0, Approximate: "tanh"}, in: []*tensor{x},
			want: map[g.Tid]*tensor{out0: mapF(x, func(v float64) float64 {
				return v / 2 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
			})}, tol: 1e-6},
		opCase{kind: "AddmmNode", op: &g.AddmmNode{Mat1: 0, Mat2: 1, Out: out0, Bias: p(g.Tid(2)), Alpha: 1, Beta: 1},
			in:   []*tensor{ft([]int{1, 2}, 1, 2), ft([]int{2, 2}, 1, 2, 3, 4), ft([]int{2}, 0.5, -1)},
			want: map[g.Tid]*tensor{out0: ft([]int{1, 2}, 7.5, 9)}},
	)
	return cs
}

// ropeCase checks RopeNode against HF's rotate-half formulation (or, for
// traditional, interleaved pairs) on x [1, 1, 3, 8] at offset 5 (a value
// slot), rotating the first 6 features.
func ropeCase(traditional bool, freqs []float32) opCase {
	const T, D, dims, off, base = 3, 8, 6, 5, 10000.0
	x := make([]float32, T*D)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.7)) * 2
	}
	want := append([]float32(nil), x...)
	for t := 0; t < T; t++ {
		for i := 0; i < dims/2; i++ {
			inv := math.Pow(base, -2*float64(i)/dims)
			if freqs != nil {
				inv = 1 / float64(freqs[i])
			}
			th := float64(off+t) * inv
			a, b := t*D+i, t*D+i+dims/2
			if traditional {
				a, b = t*D+2*i, t*D+2*i+1
			}
			x1, x2 := float64(x[a]), float64(x[b])
			want[a] = float32(x1*math.Cos(th) - x2*math.Sin(th))
			want[b] = float32(x2*math.Cos(th) + x1*math.Sin(th))
		}
	}
	c := opCase{kind: "RopeNode", in: []*tensor{ft([]int{1, 1, T, D}, x...)}, vals: []value{{i: off}},
		want: map[g.Tid]*tensor{out0: ft([]int{1, 1, T, D}, want...)}, tol: 1e-5}
	n := &g.RopeNode{X: 0, Out: out0, Dims: dims, Offset: g.VidOrTid{Vid: 0, IsVid: true}, Traditional: traditional, Base: base, Scale: 1}
	if freqs != nil {
		c.in = append(c.in, ft([]int{dims / 2}, freqs...))
		n.Freqs = p(g.Tid(1))
	}
	c.op = n
	return c
}

// Ops the fixtures' and the other tests' graphs exercise end to end (the
// KV-cache attention, SDPA, quantized matmul and dequantize, value-slot
// arithmetic, ItemInt, SymSize): named here so the table test knows they
// are covered.
var coveredElsewhere = map[string]string{
	"UpdateAndAttendNode": "TestGreedyOffGraph, TestQuantizedFixtures",
	"SdpaNode":            "TestInGraph",
	"QuantizedMatmulNode": "TestQuantizedFixtures, TestQuantizedMatmulNode",
	"DequantizeNode":      "TestQuantizedFixtures, TestDequantizeNode",
	"AddIntNode":          "TestInGraph", "SubtractIntNode": "TestIntValueNodes", "MultiplyIntNode": "TestIntValueNodes",
	"FloorDivideIntNode": "TestIntValueNodes", "ModIntNode": "TestIntValueNodes",
	"ItemIntNode": "TestInGraph", "SymSizeNode": "TestGreedyOffGraph",
}

func TestOpTable(t *testing.T) {
	tested := map[string]bool{}
	for _, c := range opCases() {
		tested[c.kind] = true
		t.Run(c.kind, func(t *testing.T) { checkOp(t, c) })
	}
	var refused []string
	for i := 1; i <= g.NumOpTypes(); i++ {
		kind := g.OpName(i)
		switch {
		case supported[kind]:
			if !tested[kind] && coveredElsewhere[kind] == "" {
				t.Errorf("%s is executed but has no case in the op table", kind)
			}
		default:
			refused = append(refused, kind)
			// Refused at load, by name, whether or not it decodes.
			gr := &g.Graph{Instructions: []g.Instruction{{Kind: "AddNode", Op: &g.AddNode{}}, {Kind: kind}}}
			if err := checkNodes(gr); err == nil || !strings.Contains(err.Error(), kind) {
				t.Errorf("%s: checkNodes: %v", kind, err)
			}
		}
	}
	if g.NumOpTypes() != 134 {
		t.Errorf("%d node kinds; schema.fbs at cff6f4dd has 134", g.NumOpTypes())
	}
	t.Logf("%d node kinds: %d executed, %d refused at load: %s", g.NumOpTypes(), g.NumOpTypes()-len(refused), len(refused), strings.Join(refused, ", "))
}

func TestIntValueNodes(t *testing.T) {
	for _, c := range []struct {
		kind string
		op   any
		want int64
	}{
		{"AddIntNode", &g.AddIntNode{A: lit(7), B: g.IntOrVid{Vid: 0, IsVid: true}, Out: 1}, 4},
		{"SubtractIntNode", &g.SubtractIntNode{A: lit(7), B: g.IntOrVid{Vid: 0, IsVid: true}, Out: 1}, 10},
		{"MultiplyIntNode", &g.MultiplyIntNode{A: lit(7), B: g.IntOrVid{Vid: 0, IsVid: true}, Out: 1}, -21},
		{"FloorDivideIntNode", &g.FloorDivideIntNode{A: lit(7), B: g.IntOrVid{Vid: 0, IsVid: true}, Out: 1}, -3},
		{"ModIntNode", &g.ModIntNode{A: lit(7), B: g.IntOrVid{Vid: 0, IsVid: true}, Out: 1}, -2},
	} {
		s, err := runOp(opCase{kind: c.kind, op: c.op, vals: []value{{i: -3}}})
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		if v := s.vals[1]; !v.set || v.i != c.want {
			t.Errorf("%s: %+v, want %d", c.kind, v, c.want)
		}
	}
}

// QuantizedMatmulNode built at run time (weights not constants) and with
// transpose false, against a dense product of the dequantized matrix.
func TestQuantizedMatmulNode(t *testing.T) {
	for _, bits := range []int{4, 8} {
		for _, transpose := range []bool{true, false} {
			rows, cols, gs := 8, 64, 32
			w := make([]float32, rows*cols)
			for i := range w {
				w[i] = float32(math.Sin(float64(i)))
			}
			q := quantizeAffine(w, rows, cols, bits, gs)
			dense := make([]float32, rows*cols)
			for r := 0; r < rows; r++ {
				qDequantRow(dense[r*cols:(r+1)*cols], q, r)
			}
			K, N := cols, rows
			if !transpose {
				K, N = rows, cols
			}
			x := make([]float32, 2*K)
			for i := range x {
				x[i] = float32(math.Cos(float64(i) * 0.3))
			}
			want := make([]float32, 2*N)
			for i := 0; i < 2; i++ {
				for j := 0; j < N; j++ {
					var acc float64
					for k := 0; k < K; k++ {
						var wv float32
						if transpose {
							wv = dense[j*cols+k]
						} else {
							wv = dense[k*cols+j]
						}
						acc += float64(x[i*K+k]) * float64(wv)
					}
					want[i*N+j] = float32(acc)
				}
			}
			packed := &tensor{dt: stU32, shape: []int{rows, cols * bits / 32}, u: q.Packed}
			packed.strides = contiguousStrides(packed.shape)
			c := opCase{kind: "QuantizedMatmulNode",
				op:   &g.QuantizedMatmulNode{X: 0, W: 1, Scales: 2, Biases: p(g.Tid(3)), Out: out0, GroupSize: int32(gs), Bits: int32(bits), Mode: "affine", Transpose: transpose},
				in:   []*tensor{ft([]int{1, 2, K}, x...), packed, ft([]int{rows, cols / gs}, q.Scales...), ft([]int{rows, cols / gs}, q.Biases...)},
				want: map[g.Tid]*tensor{out0: ft([]int{1, 2, N}, want...)}, tol: 1e-4}
			t.Run(fmt.Sprintf("q%d_transpose_%v", bits, transpose), func(t *testing.T) { checkOp(t, c) })
		}
	}
}

// DequantizeNode over rows gathered by TakeNode, as the embedding does.
func TestDequantizeNode(t *testing.T) {
	for _, bits := range []int{4, 8} {
		rows, cols, gs := 5, 64, 64
		w := make([]float32, rows*cols)
		for i := range w {
			w[i] = float32(math.Cos(float64(i) * 0.1))
		}
		q := quantizeAffine(w, rows, cols, bits, gs)
		packed := &tensor{dt: stU32, shape: []int{rows, cols * bits / 32}, u: q.Packed}
		packed.strides = contiguousStrides(packed.shape)
		ids := it(stI64, []int{1, 2}, 3, 1)
		s, err := runOp(opCase{kind: "TakeNode", op: &g.TakeNode{X: 0, Out: 4, Index: g.IntOrVidOrTid{Tid: 1, Kind: g.KindTid}}, in: []*tensor{packed, ids}})
		if err != nil {
			t.Fatal(err)
		}
		gathered := s.slots[4]
		want := make([]float32, 2*cols)
		qDequantRow(want[:cols], q, 3)
		qDequantRow(want[cols:], q, 1)
		sc := ft([]int{1, 2, 1}, q.Scales[3], q.Scales[1])
		bi := ft([]int{1, 2, 1}, q.Biases[3], q.Biases[1])
		c := opCase{kind: "DequantizeNode", op: &g.DequantizeNode{W: 0, Scales: 1, Biases: p(g.Tid(2)), Out: out0, GroupSize: int32(gs), Bits: int32(bits), Mode: "affine"},
			in: []*tensor{gathered, sc, bi}, want: map[g.Tid]*tensor{out0: ft([]int{1, 2, cols}, want...)}}
		// and against the float weights, within half a quantization step
		for i, v := range want {
			r := []int{3, 1}[i/cols]
			step := float64(q.Scales[r])
			if d := math.Abs(float64(v - w[r*cols+i%cols])); d > step/2+1e-6 {
				t.Fatalf("%d-bit: dequantized %v vs float %v", bits, v, w[r*cols+i%cols])
			}
		}
		checkOp(t, c)
	}
}

// The load path refuses a program with an unsupported node, or a quantized
// node in a format the engine does not run, naming it.
func TestLoadRefusesByName(t *testing.T) {
	qmm := func(bits, gs int32, mode string) ptetest.MLXNode {
		n, _ := ptetest.MLXNodeOf("QuantizedMatmulNode", 0)
		n.Fields[5], n.Fields[6], n.Fields[7] = gs, bits, mode
		return n
	}
	pad, _ := ptetest.MLXNodeOf("PadNode", 0)
	pad.Fields[3] = "edge"
	median, _ := ptetest.MLXNodeOf("MedianNode", 0)
	for _, c := range []struct {
		node ptetest.MLXNode
		init bool
		want string
	}{
		{median, false, "MedianNode"},
		{median, true, "MedianNode"},
		{qmm(3, 32, "affine"), false, "3-bit affine weights are not supported"},
		{qmm(6, 64, "affine"), true, "6-bit"},
		{qmm(2, 32, "affine"), false, "2-bit"},
		{qmm(4, 16, "nvfp4"), false, "nvfp4 takes no biases"},
		{qmm(8, 16, "nvfp4"), false, "nvfp4 with 8 bits in groups of 16"},
		{qmm(4, 32, "nvfp4"), true, "nvfp4 with 4 bits in groups of 32"},
		{qmm(4, 32, "mxfp4"), false, `mode "mxfp4"`},
		{qmm(8, 32, "mxfp8"), false, `mode "mxfp8"`},
		{pad, false, `pad mode "edge"`},
	} {
		gr := ptetest.EveryNodeGraph()
		noop := ptetest.MLXNode{Kind: "NoopNode", Fields: ptetest.Fields{}}
		gr.Chains = [][]ptetest.MLXNode{{noop}, {noop}}
		if c.init {
			gr.Chains[1] = []ptetest.MLXNode{c.node}
		} else {
			gr.Chains[0] = []ptetest.MLXNode{c.node}
		}
		path := filepath.Join(t.TempDir(), "m.pte")
		prog := ptetest.Program{Segments: [][]byte{ptetest.MLXBlob(gr)}, SegmentAlign: 8, Methods: []ptetest.Method{{
			Name:         "forward",
			Values:       []ptetest.Value{ptetest.TensorValue(pte.Long, []int32{1, 8}, 0)},
			Inputs:       []int32{0},
			Outputs:      []int32{0},
			Instructions: []ptetest.Instruction{{Index: 0, Args: []int32{0}}},
			Delegates:    []ptetest.Delegate{{ID: "MLXBackend", Index: 0}},
		}}}
		if err := os.WriteFile(path, ptetest.Build(prog), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (init chain %v): load error %v, want one naming %q", c.node.Kind, c.init, err, c.want)
		}
	}
}
