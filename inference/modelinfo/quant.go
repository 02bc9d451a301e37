package modelinfo

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
)

// QuantGroup is a set of quantized weight matrices that share a format:
// bits, group size and mode, and a use (matmul: linears multiplied by
// QuantizedMatmulNode; embedding: rows gathered and dequantized by
// DequantizeNode). Bytes counts the packed words, the scales and any
// biases stored in the file (not placeholders the init chain computes); a matrix shared by both uses (a tied
// embedding and LM head) is in both groups' Matrices but its bytes are
// counted once, under matmul.
type QuantGroup struct {
	Bits      int    `json:"bits"`
	GroupSize int    `json:"group_size"`
	Mode      string `json:"mode"`
	Use       string `json:"use"`
	Matrices  int    `json:"matrices"`
	Bytes     int64  `json:"bytes"`
}

// Quantization says how a model's weights are stored. Summary is what a
// list shows: "4-bit", "8-bit", "4/8-bit" (mixed widths), "nvfp4",
// "4-bit + nvfp4", or for an unquantized model the float type that holds
// most weight bytes ("bf16", "fp32", "fp16"); "" when the file has no MLX
// graph.
type Quantization struct {
	Summary string       `json:"summary"`
	Groups  []QuantGroup `json:"groups"`
	// QuantizedBytes is the sum of the groups' bytes; Weights.Bytes is the
	// whole model's.
	QuantizedBytes int64 `json:"quantized_bytes"`
}

// String is the summary and the groups, one line: "4-bit (4-bit g32
// affine matmul ×15, 4-bit g32 affine embedding ×1)".
func (q Quantization) String() string {
	if len(q.Groups) == 0 {
		return q.Summary
	}
	parts := make([]string, len(q.Groups))
	for i, g := range q.Groups {
		parts[i] = g.String()
	}
	return fmt.Sprintf("%s (%s)", q.Summary, strings.Join(parts, ", "))
}

// String is "4-bit g32 affine matmul ×15".
func (g QuantGroup) String() string {
	return fmt.Sprintf("%d-bit g%d %s %s ×%d", g.Bits, g.GroupSize, g.Mode, g.Use, g.Matrices)
}

// quantization fills info.Quantization from the graph's quantized nodes
// and the named data's sizes.
func (info *Info) quantization(f *pte.File) {
	q := &info.Quantization
	g := info.Graph
	if g == nil {
		return
	}
	// The init chain overwrites placeholders (MLX's affine biases): those
	// bytes in the file are not the weights'.
	initOut := map[int]bool{}
	if g.InitChain >= 0 {
		for _, in := range g.Chains[g.InitChain] {
			if v := reflect.ValueOf(in.Op); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
				if o := v.Elem().FieldByName("Out"); o.IsValid() && o.Type() == reflect.TypeFor[mlxgraph.Tid]() {
					initOut[int(o.Uint())] = true
				}
			}
		}
	}
	size := map[int]int64{} // constant tensor slot → bytes in the file
	for _, nd := range f.NamedData {
		if s, ok := g.Slot(nd.Key); ok && s.IsTensor() && s.Idx < g.NumConstantTensors && !initOut[s.Idx] {
			size[s.Idx] = nd.Size
		}
	}
	// A DequantizeNode's operands are rows gathered from the constants by
	// TakeNodes: follow them back.
	taken := map[mlxgraph.Tid]mlxgraph.Tid{}
	for _, in := range g.Instructions {
		if n, ok := in.Op.(*mlxgraph.TakeNode); ok && int(n.X) < g.NumConstantTensors {
			taken[n.Out] = n.X
		}
	}
	src := func(t mlxgraph.Tid) mlxgraph.Tid {
		if c, ok := taken[t]; ok {
			return c
		}
		return t
	}
	counted := map[mlxgraph.Tid]bool{}
	bytesOf := func(ts ...mlxgraph.Tid) int64 {
		var b int64
		for _, t := range ts {
			if !counted[t] {
				counted[t] = true
				b += size[int(t)]
			}
		}
		return b
	}
	type key struct {
		bits, gs  int
		mode, use string
	}
	type group struct {
		QuantGroup
		seen map[mlxgraph.Tid]bool
	}
	groups := map[key]*group{}
	var order []key
	// Each packed matrix's logical elements are parameters (Weights
	// counted its words and scales, named …original1/2, as buffers).
	params := map[mlxgraph.Tid]bool{}
	countParams := func(bits int, w mlxgraph.Tid, ts ...mlxgraph.Tid) {
		m := g.Meta(w)
		if params[w] || int(w) >= g.NumConstantTensors || m == nil || len(m.Shape) < 2 || bits <= 0 || bits > 32 {
			return
		}
		params[w] = true
		n := int64(1)
		for _, d := range m.Shape {
			if d.Value < 0 || (d.Value > 0 && n > (1<<40)/d.Value) {
				return
			}
			n *= d.Value
		}
		info.Weights.BufferElements -= n
		info.Weights.Params += n * 32 / int64(bits)
		for _, t := range ts {
			if sm := g.Meta(t); sm != nil && int(t) < g.NumConstantTensors && !initOut[int(t)] && !params[t] {
				params[t] = true
				e := int64(1)
				for _, d := range sm.Shape {
					e *= max(d.Value, 0)
				}
				info.Weights.BufferElements -= e
			}
		}
	}
	add := func(k key, w mlxgraph.Tid, ts ...mlxgraph.Tid) {
		countParams(k.bits, w, ts...)
		qg := groups[k]
		if qg == nil {
			qg = &group{QuantGroup{Bits: k.bits, GroupSize: k.gs, Mode: k.mode, Use: k.use}, map[mlxgraph.Tid]bool{}}
			groups[k] = qg
			order = append(order, k)
		}
		if !qg.seen[w] {
			qg.seen[w] = true
			qg.Matrices++
		}
		qg.Bytes += bytesOf(append([]mlxgraph.Tid{w}, ts...)...)
	}
	// Matmuls first, so a tied matrix's bytes go to its matmul group.
	for _, in := range g.Instructions {
		if n, ok := in.Op.(*mlxgraph.QuantizedMatmulNode); ok {
			ts := []mlxgraph.Tid{n.Scales}
			if n.Biases != nil {
				ts = append(ts, *n.Biases)
			}
			add(key{int(n.Bits), int(n.GroupSize), n.Mode, "matmul"}, n.W, ts...)
		}
	}
	for _, in := range g.Instructions {
		if n, ok := in.Op.(*mlxgraph.DequantizeNode); ok {
			ts := []mlxgraph.Tid{src(n.Scales)}
			if n.Biases != nil {
				ts = append(ts, src(*n.Biases))
			}
			add(key{int(n.Bits), int(n.GroupSize), n.Mode, "embedding"}, src(n.W), ts...)
		}
	}
	widths, modes := map[string]bool{}, map[string]bool{}
	for _, k := range order {
		qg := groups[k]
		q.Groups = append(q.Groups, qg.QuantGroup)
		q.QuantizedBytes += qg.Bytes
		if k.mode == "affine" {
			widths[fmt.Sprint(k.bits)] = true
		} else {
			modes[k.mode] = true
		}
	}
	if len(order) == 0 {
		q.Summary = floatSummary(g, size)
		return
	}
	var parts []string
	if len(widths) > 0 {
		parts = append(parts, strings.Join(sortedSet(widths), "/")+"-bit")
	}
	parts = append(parts, sortedSet(modes)...)
	q.Summary = strings.Join(parts, " + ")
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// floatSummary names the float type holding most constant bytes.
func floatSummary(g *mlxgraph.Graph, size map[int]int64) string {
	by := map[string]int64{}
	for slot, b := range size {
		m := g.Meta(mlxgraph.Tid(slot))
		if m == nil {
			continue
		}
		switch pte.ScalarType(m.DType) {
		case pte.Float:
			by["fp32"] += b
		case pte.BFloat16:
			by["bf16"] += b
		case pte.Half:
			by["fp16"] += b
		}
	}
	best := ""
	for k, b := range by {
		if best == "" || b > by[best] || (b == by[best] && k < best) {
			best = k
		}
	}
	return best
}
