package mlxgraph

import (
	"encoding/binary"
	"testing"

	"etchat/inference/pte"
	"etchat/internal/fixtures"
)

// blobOf reads forward's MLX delegate blob from a fixture .pte.
func blobOf(tb testing.TB, name string) []byte {
	tb.Helper()
	f, err := pte.Open(fixtures.PTE(name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	m, ok := f.Method("forward")
	if !ok || len(m.Delegates) != 1 {
		tb.Fatalf("%s: no single forward delegate", name)
	}
	d := m.Delegates[0]
	b, err := f.ReadRange(d.Offset, d.Size)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type want struct {
	blob, insts                           int
	consts, ins, outs, mut, temps, values int
	hist                                  map[string]int
}

// The expectations are pte-format.md §3 and §4 (and §6 for the bf16 model).
var wants = map[string]want{
	fixtures.Llama3: {8544, 108, 23, 2, 1, 0, 12, 1, map[string]int{
		"AddNode": 8, "AddmmNode": 16, "AsTypeNode": 1, "BroadcastToNode": 1, "ConcatenateNode": 5, "CosNode": 1,
		"ExpandDimsNode": 6, "MultiplyNode": 12, "NegNode": 4, "RMSNormNode": 5, "ReshapeNode": 9, "SiluNode": 2,
		"SinNode": 1, "SliceNode": 8, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 24, "UpdateAndAttendNode": 2}},
	fixtures.Gemma3: {21360, 248, 86, 2, 1, 0, 36, 1, map[string]int{
		"AddNode": 41, "AddmmNode": 31, "AsTypeNode": 1, "BroadcastToNode": 2, "ConcatenateNode": 10, "CosNode": 2,
		"ExpandDimsNode": 10, "GeluNode": 4, "MultiplyNode": 25, "NegNode": 8, "RMSNormNode": 25, "ReshapeNode": 17,
		"SinNode": 2, "SliceNode": 16, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 47, "UpdateAndAttendNode": 4}},
	fixtures.Qwen3: {9184, 112, 27, 2, 1, 0, 12, 1, map[string]int{
		"AddNode": 8, "AddmmNode": 16, "AsTypeNode": 1, "BroadcastToNode": 1, "ConcatenateNode": 5, "CosNode": 1,
		"ExpandDimsNode": 6, "MultiplyNode": 12, "NegNode": 4, "RMSNormNode": 9, "ReshapeNode": 9, "SiluNode": 2,
		"SinNode": 1, "SliceNode": 8, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 24, "UpdateAndAttendNode": 2}},
	fixtures.InGraph: {11280, 151, 24, 2, 3, 4, 11, 6, map[string]int{
		"ARangeNode": 1, "AddIntNode": 6, "AddNode": 9, "AddmmNode": 16, "AsTypeNode": 2, "BroadcastToNode": 1,
		"ConcatenateNode": 5, "CosNode": 1, "ExpandDimsNode": 6, "FullNode": 1, "IdCopyNode": 4, "ItemIntNode": 4,
		"MultiplyNode": 12, "NegNode": 4, "NotEqualNode": 1, "RMSNormNode": 5, "ReshapeNode": 10, "SdpaNode": 2,
		"SiluNode": 2, "SinNode": 1, "SliceNode": 12, "SliceUpdateNode": 4, "SumNode": 1, "SymSizeNode": 7,
		"TakeNode": 10, "TransposeNode": 24}},
	fixtures.BenchBF16: {28000, 368, 77, 2, 1, 0, 12, 1, map[string]int{
		"AddNode": 32, "AddmmNode": 58, "AsTypeNode": 3, "BroadcastToNode": 1, "ConcatenateNode": 17, "CosNode": 1,
		"ExpandDimsNode": 6, "MultiplyNode": 42, "NegNode": 16, "RMSNormNode": 17, "ReshapeNode": 33, "SiluNode": 8,
		"SinNode": 1, "SliceNode": 32, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 90, "UpdateAndAttendNode": 8}},
}

func TestFixtures(t *testing.T) {
	for name, w := range wants {
		t.Run(name, func(t *testing.T) {
			blob := blobOf(t, name)
			if len(blob) != w.blob {
				t.Errorf("blob bytes %d, want %d", len(blob), w.blob)
			}
			g, err := Parse(blob)
			if err != nil {
				t.Fatal(err)
			}
			if g.Version != "1" {
				t.Errorf("version %q", g.Version)
			}
			got := []int{g.NumConstantTensors, g.NumInputTensors, g.NumOutputTensors, g.NumMutableBufferTensors, g.NumTempTensors, g.NumValues}
			exp := []int{w.consts, w.ins, w.outs, w.mut, w.temps, w.values}
			for i := range got {
				if got[i] != exp[i] {
					t.Errorf("counts %v, want %v", got, exp)
					break
				}
			}
			if len(g.Chains) != 1 || g.MainChain != 0 || g.InitChain != -1 {
				t.Errorf("chains %d main %d init %d", len(g.Chains), g.MainChain, g.InitChain)
			}
			if len(g.Instructions) != w.insts {
				t.Errorf("%d instructions, want %d", len(g.Instructions), w.insts)
			}
			h := g.Histogram()
			if len(h) != len(w.hist) {
				t.Errorf("histogram %v, want %v", h, w.hist)
			}
			for k, v := range w.hist {
				if h[k] != v {
					t.Errorf("%s: %d, want %d", k, h[k], v)
				}
			}
			for i, in := range g.Instructions {
				if in.Op == nil {
					t.Errorf("instruction %d (%s) not decoded", i, in.Kind)
				}
			}
			if len(g.Inputs) != 2 || len(g.Outputs) != w.outs || len(g.MutableBuffers) != w.mut {
				t.Errorf("maps: %d inputs, %d outputs, %d mutable", len(g.Inputs), len(g.Outputs), len(g.MutableBuffers))
			}
			if g.DataSegmentSize != 0 || g.DataSegmentOffset != uint64(len(blob)) {
				t.Errorf("data segment %d+%d", g.DataSegmentOffset, g.DataSegmentSize)
			}
		})
	}
}

func TestDetails(t *testing.T) {
	g, err := Parse(blobOf(t, fixtures.Gemma3))
	if err != nil {
		t.Fatal(err)
	}
	layers := 0
	for _, in := range g.Instructions {
		switch n := in.Op.(type) {
		case *UpdateAndAttendNode:
			if n.LayerID == nil || int(*n.LayerID) != layers || n.Scale == nil || *n.Scale != 0.25 || n.OutDType == nil || *n.OutDType != 6 {
				t.Errorf("UpdateAndAttend %d: %+v", layers, n)
			}
			layers++
		case *GeluNode:
			if n.Approximate != "tanh" && n.Approximate != "none" {
				t.Errorf("gelu approximate %q", n.Approximate)
			}
		}
	}
	if layers != 4 {
		t.Errorf("%d UpdateAndAttend nodes", layers)
	}
	// Inputs are named and typed: input_ids LONG [1, dyn(2..8)].
	in0 := g.Inputs[0]
	m := g.Meta(Tid(in0.Idx))
	if !in0.IsTensor() || m == nil || m.DType != 4 || len(m.Shape) != 2 || m.Shape[0].Value != 1 ||
		!m.Shape[1].Dynamic() || m.Shape[1].Min != 2 || m.Shape[1].Max != 8 {
		t.Errorf("input 0: %+v %+v", in0, m)
	}
	named := 0
	for _, ns := range g.NamedSlots {
		if ns.Slot.IsTensor() && ns.Slot.Idx < g.NumConstantTensors {
			named++
		}
	}
	if named != g.NumConstantTensors {
		t.Errorf("%d named constant slots of %d", named, g.NumConstantTensors)
	}
	if got := g.Instructions[0].String(); got != "SymSizeNode&{A:86 Dim:1 Out:0}" {
		t.Errorf("instruction 0 prints as %q", got)
	}
	if s, ok := g.Slot(g.NamedSlots[0].Name); !ok || s != g.NamedSlots[0].Slot {
		t.Errorf("Slot lookup failed")
	}

	ig, err := Parse(blobOf(t, fixtures.InGraph))
	if err != nil {
		t.Fatal(err)
	}
	caches := 0
	for _, s := range ig.MutableBuffers {
		m := ig.Meta(Tid(s.Idx))
		if m == nil || m.DType != 6 || len(m.Shape) != 4 || m.Shape[2].Value != 128 {
			t.Errorf("mutable buffer %d meta %+v", s.Idx, m)
		}
		caches++
	}
	if caches != 4 {
		t.Errorf("%d caches", caches)
	}
}

func TestOpNames(t *testing.T) {
	if NumOpTypes() != 134 {
		t.Errorf("%d op types, want 134", NumOpTypes())
	}
	for typ, name := range map[int]string{1: "NoopNode", 3: "AddmmNode", 13: "AddNode", 26: "ARangeNode",
		46: "AsTypeNode", 59: "NotEqualNode", 90: "NegNode", 96: "SumNode", 134: "UpdateAndAttendNode"} {
		if OpName(typ) != name {
			t.Errorf("OpName(%d) = %q, want %q", typ, OpName(typ), name)
		}
	}
	if OpName(0) != "" || OpName(135) != "" {
		t.Error("out-of-range union types must have no name")
	}
	for name := range decoders {
		found := false
		for _, n := range opNames {
			found = found || n == name
		}
		if !found {
			t.Errorf("decoder for unknown node %s", name)
		}
	}
}

func TestHostile(t *testing.T) {
	blob := blobOf(t, fixtures.Llama3)
	// Every truncation errors cleanly.
	for n := 0; n < len(blob); n += 7 {
		b := append([]byte(nil), blob[:n]...)
		if n >= 24 {
			binary.LittleEndian.PutUint64(b[8:], uint64(n)) // keep the header self-consistent
			binary.LittleEndian.PutUint64(b[16:], 0)
		}
		if _, err := Parse(b); err == nil && n < len(blob)-64 {
			t.Fatalf("truncated to %d: no error", n)
		}
	}
	bad := func(name string, mut func(b []byte)) {
		b := append([]byte(nil), blob...)
		mut(b)
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	bad("magic", func(b []byte) { b[4] = 'X' })
	bad("data offset", func(b []byte) { binary.LittleEndian.PutUint64(b[8:], 1<<60) })
	bad("data size", func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1<<62) })
	bad("root", func(b []byte) { binary.LittleEndian.PutUint32(b[24:], 0xfffffff0) })
	bad("vtable", func(b []byte) {
		root := 24 + int(binary.LittleEndian.Uint32(b[24:]))
		binary.LittleEndian.PutUint32(b[root:], 0x7fffffff)
	})
	// Huge vector counts: overwrite every u32 that equals the instruction
	// count (108) with a huge one; at least the chain's vector length is hit.
	bad("huge count", func(b []byte) {
		for i := 24; i+4 <= len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:]) == 108 {
				binary.LittleEndian.PutUint32(b[i:], 0x3fffffff)
			}
		}
	})
	// Random single-byte corruptions never panic.
	for i := 24; i < len(blob); i += 3 {
		b := append([]byte(nil), blob...)
		b[i] ^= 0xff
		_, _ = Parse(b)
	}
}
