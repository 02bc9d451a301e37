package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	g "etchat/inference/mlxgraph"

	"etchat/internal/fixtures"
)

// Every fixture's rotary embeddings fuse (two a layer: queries and keys),
// and the logits are bit for bit those of the seven instructions each:
// prefill in chunks of 7 and whole, then decode steps, fp32 and bf16 KV.
func TestRoPEFusionBitIdentical(t *testing.T) {
	defer func(f bool) { fuseRoPE = f }(fuseRoPE)
	names := []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.Llama3Q4, fixtures.Qwen3Q8, fixtures.InGraph}
	if !testing.Short() && !raceEnabled {
		names = append(names, fixtures.BenchBF16, fixtures.BenchQ4)
	}
	for _, name := range names {
		for _, kv := range []string{"fp32", "bf16"} {
			if name == fixtures.InGraph && kv == "bf16" {
				continue // no off-graph cache to configure
			}
			run := func(fuse bool) [][]float32 {
				fuseRoPE = fuse
				s, _ := openFixture(t, name, kv)
				m := s.(*session).m
				attn := 0 // attention nodes: one rotary embedding each for queries and keys
				for _, in := range m.graph.Instructions {
					if in.Kind == "UpdateAndAttendNode" || in.Kind == "SdpaNode" {
						attn++
					}
				}
				if attn == 0 || len(m.ropes) != 2*attn {
					t.Errorf("%s: %d rotary embeddings fused for %d attention nodes", name, len(m.ropes), attn)
				}
				var out [][]float32
				ids := []int64{1, 17, 300, 5, 9, 77, 2, 40, 41, 42, 600, 3}
				for i := 0; i < len(ids); i += 7 {
					j := min(i+7, len(ids))
					pos := make([]int64, j-i)
					for k := range pos {
						pos[k] = int64(s.Len() + k)
					}
					lg, err := s.Forward(context.Background(), ids[i:j], pos)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, append([]float32(nil), lg...))
				}
				for step := 0; step < 5; step++ {
					lg, err := s.Forward(context.Background(), []int64{int64(argmax(out[len(out)-1]))}, []int64{int64(s.Len())})
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, append([]float32(nil), lg...))
				}
				return out
			}
			fused, plain := run(true), run(false)
			for i := range plain {
				for j := range plain[i] {
					if math.Float32bits(fused[i][j]) != math.Float32bits(plain[i][j]) {
						t.Fatalf("%s kv=%s: step %d logit %d: fused %v, unfused %v", name, kv, i, j, fused[i][j], plain[i][j])
					}
				}
			}
		}
	}
}

// ropeGraph is the seven instructions of a rotary embedding on x (slot 0)
// with cos and sin (slots 1, 2) into slot 9, operand orders as given;
// extra instructions are appended after the add.
func ropeGraph(cosFirst, sinFirst, rotFirst bool, extra ...g.Instruction) []g.Instruction {
	lit := func(v int64) g.IntOrVid { return g.IntOrVid{Literal: v} }
	mul := func(a, b, out g.Tid, swap bool) g.Instruction {
		if swap {
			a, b = b, a
		}
		return g.Instruction{Kind: "MultiplyNode", Op: &g.MultiplyNode{A: a, B: b, Out: out}}
	}
	addA, addB := g.Tid(3), g.Tid(8)
	if rotFirst {
		addA, addB = addB, addA
	}
	ins := []g.Instruction{
		mul(0, 1, 3, cosFirst), // p1 = x·cos
		{Kind: "SliceNode", Op: &g.SliceNode{X: 0, Out: 4, Axis: lit(3), Start: lit(0), Stop: lit(4), Step: 1}},
		{Kind: "SliceNode", Op: &g.SliceNode{X: 0, Out: 5, Axis: lit(3), Start: lit(4), Stop: lit(math.MaxInt64), Step: 1}},
		{Kind: "NegNode", Op: &g.NegNode{X: 5, Out: 5}},
		{Kind: "ConcatenateNode", Op: &g.ConcatenateNode{Tensors: []g.Tid{5, 4}, Out: 6, Axis: -1}},
		mul(6, 2, 8, sinFirst), // p2 = r·sin
		{Kind: "AddNode", Op: &g.AddNode{A: addA, B: addB, Out: 9}},
	}
	return append(ins, extra...)
}

// Synthetic rotary embeddings, every operand order, NaN (of distinct
// payloads) and ±Inf inputs included, fused or not: the same bits; an intermediate read elsewhere
// keeps the seven instructions.
func TestRoPEFusionSynthetic(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	x, c, sn := make([]float32, 2*3*8), make([]float32, 3*8), make([]float32, 3*8)
	for _, v := range [][]float32{x, c, sn} {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	}
	nan := func(p uint32) float32 { return math.Float32frombits(0x7fc00000 | p) }
	// NaNs meet NaNs of other payloads in both products and the sum, so
	// every operand order shows
	x[1], x[3], x[5], c[5], sn[7] = nan(5), nan(4), nan(1), nan(2), nan(3)
	x[13], c[2] = float32(math.Inf(1)), float32(math.Inf(-1))
	run := func(ins []g.Instruction, fuse bool) (*session, int) {
		m := &model{graph: &g.Graph{Instructions: ins}}
		m.planRoPE()
		s := &session{m: m, threads: 1, slots: make([]*tensor, 16), vals: make([]value, 2)}
		s.slots[0] = ft([]int{1, 2, 3, 8}, x...)
		s.slots[1], s.slots[2] = ft([]int{1, 1, 3, 8}, c...), ft([]int{1, 1, 3, 8}, sn...)
		if fuse {
			s.acts = m.acts
		}
		if err := s.run(context.Background(), ins); err != nil {
			t.Fatal(err)
		}
		return s, len(m.ropes)
	}
	for _, o := range [][3]bool{{false, false, false}, {true, false, false}, {false, true, false}, {false, false, true}, {true, true, true}} {
		ins := ropeGraph(o[0], o[1], o[2])
		fused, n := run(ins, true)
		plain, _ := run(ins, false)
		if n != 1 {
			t.Fatalf("orders %v: %d fused", o, n)
		}
		got, want := fused.slots[9], plain.slots[9]
		if !slices.Equal(got.shape, want.shape) || got.dt != want.dt {
			t.Fatalf("orders %v: %v %d, want %v %d", o, got.shape, got.dt, want.shape, want.dt)
		}
		for i, w := range want.floats(nil) {
			if gv := got.floats(nil)[i]; math.Float32bits(gv) != math.Float32bits(w) {
				t.Fatalf("orders %v: element %d = %v, want %v", o, i, gv, w)
			}
		}
	}
	// the concatenation read again after the add: no fusion
	extra := g.Instruction{Kind: "AddNode", Op: &g.AddNode{A: 6, B: 9, Out: 10}}
	if _, n := run(ropeGraph(false, false, false, extra), true); n != 0 {
		t.Errorf("an intermediate read twice: %d fused", n)
	}
}

// tidUses finds every tensor a node reads and writes, through pointers,
// lists and the value-or-tensor kinds, for every node kind executed.
func TestTidUses(t *testing.T) {
	b := g.Tid(7)
	for _, c := range []struct {
		op            any
		reads, writes []g.Tid
	}{
		{&g.AddNode{A: 1, B: 2, Out: 3}, []g.Tid{1, 2}, []g.Tid{3}},
		{&g.ConcatenateNode{Tensors: []g.Tid{4, 5}, Out: 6}, []g.Tid{4, 5}, []g.Tid{6}},
		{&g.SplitNode{X: 1, Outs: []g.Tid{2, 3}}, []g.Tid{1}, []g.Tid{2, 3}},
		{&g.QuantizedMatmulNode{X: 1, W: 2, Scales: 3, Biases: &b, Out: 4}, []g.Tid{1, 2, 3, 7}, []g.Tid{4}},
		{&g.TakeNode{X: 1, Index: g.IntOrVidOrTid{Tid: 9, Kind: g.KindTid}, Out: 2}, []g.Tid{1, 9}, []g.Tid{2}},
		{&g.TakeNode{X: 1, Index: g.IntOrVidOrTid{Tid: 9, Kind: g.KindLiteral}, Out: 2}, []g.Tid{1}, []g.Tid{2}},
	} {
		r, w := tidUses(c.op)
		slices.Sort(r)
		if !slices.Equal(r, c.reads) || !slices.Equal(w, c.writes) {
			t.Errorf("%T: reads %v writes %v, want %v and %v", c.op, r, w, c.reads, c.writes)
		}
	}
	// every executed kind of the op table: the slots its case checks are
	// among the writes
	for _, c := range opCases() {
		if c.kind == "NoopNode" {
			continue // its case checks that slot 0 is left alone
		}
		_, w := tidUses(c.op)
		for slot := range c.want {
			if !slices.Contains(w, slot) {
				t.Errorf("%s: writes %v miss slot %d", c.kind, w, slot)
			}
		}
	}
}
