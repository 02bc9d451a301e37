package cpu

import (
	"context"
	"fmt"

	g "etchat/inference/mlxgraph"
)

// Quantized exports (export_llm_hf.py --qlinear/--qembedding): MLX's
// QuantizedMatmulNode and DequantizeNode over uint32-packed weights, and
// the init chain that computes their affine biases at load.

// quantBits are the widths the engine runs; MLX also packs 2, 3, 5 and 6
// bits, which ExecuTorch's export does not produce.
var quantBits = map[int32]bool{4: true, 8: true}

// checkParams refuses, at load, a node whose parameters the engine does
// not run (a quantization format, a pad mode), naming the node and them.
func checkParams(in g.Instruction) error {
	var bits, gs int32
	var mode string
	var biases, global bool
	switch n := in.Op.(type) {
	case *g.PadNode:
		if n.Mode != "constant" {
			return fmt.Errorf("%s: pad mode %q is not supported (constant is)", in.Kind, n.Mode)
		}
		return nil
	case *g.QuantizedMatmulNode:
		bits, gs, mode, biases = n.Bits, n.GroupSize, n.Mode, n.Biases != nil
	case *g.DequantizeNode:
		bits, gs, mode, biases, global = n.Bits, n.GroupSize, n.Mode, n.Biases != nil, n.GlobalScale != nil
	default:
		return nil
	}
	switch mode {
	case "affine":
		switch {
		case !biases:
			return fmt.Errorf("%s: affine mode without biases", in.Kind)
		case global:
			return fmt.Errorf("%s: a global scale is only for nvfp4", in.Kind)
		case !quantBits[bits]:
			return fmt.Errorf("%s: %d-bit affine weights are not supported (4- and 8-bit are)", in.Kind, bits)
		case gs <= 0 || gs%(32/bits) != 0:
			return fmt.Errorf("%s: group size %d is not supported for %d-bit weights", in.Kind, gs, bits)
		}
	case "nvfp4":
		switch {
		case bits != 4 || gs != fp4Group:
			return fmt.Errorf("%s: nvfp4 with %d bits in groups of %d (MLX requires 4 and 16)", in.Kind, bits, gs)
		case biases:
			return fmt.Errorf("%s: nvfp4 takes no biases", in.Kind)
		}
	default:
		return fmt.Errorf("%s: quantization mode %q is not supported (affine 4- and 8-bit, and nvfp4, are)", in.Kind, mode)
	}
	return nil
}

// initSlot is a non-constant slot the init chain wrote, kept for every
// step.
type initSlot struct {
	t g.Tid
	x *tensor
}

// runInit executes the graph's init chain once, on a scratch session over
// the bound constants. What it writes (MLX's affine biases B = −2^(bits−1)·s,
// written into placeholder constant slots) replaces those constants, or is
// kept beside them, for every session and step of this program.
func (m *model) runInit() error {
	gr := m.graph
	if gr.InitChain < 0 || len(gr.Chains[gr.InitChain]) == 0 {
		return nil
	}
	m.initRuns++
	s := &session{m: m, threads: 1, slots: make([]*tensor, gr.NumTensors()), vals: make([]value, gr.NumValues), init: true}
	copy(s.slots, m.consts)
	// One instruction at a time, its results copied out and the scratch
	// arena recycled: the peak is then the results (what the program keeps)
	// and one instruction's buffers, not every instruction's buffers
	// beside the copies (a 1B model's biases are 154 MB in fp32).
	owned := map[*tensor]bool{}
	chain := gr.Chains[gr.InitChain]
	for i := range chain {
		if err := s.run(context.Background(), chain[i:i+1]); err != nil {
			return fmt.Errorf("init chain: %w", err)
		}
		m.keepInit(s, owned)
		s.arena.reset(false)
	}
	return nil
}

// keepInit copies what the init chain wrote into the scratch session s
// (slots neither a constant nor already copied) into the program: over
// the constant it replaces, or beside the constants.
func (m *model) keepInit(s *session, owned map[*tensor]bool) {
	for t, x := range s.slots {
		if x == nil || owned[x] || (t < len(m.consts) && x == m.consts[t]) {
			continue
		}
		// Own the result: a fresh contiguous copy, not a step header or a
		// view of the scratch session's buffers.
		own := &tensor{dt: x.dt, shape: append([]int(nil), x.shape...)}
		own.strides = contiguousStrides(own.shape)
		switch {
		case x.u != nil:
			own.u = append([]uint32(nil), x.uints()...)
			m.heapBytes += int64(len(own.u)) * 4
		case x.isInt():
			own.i = append([]int64(nil), x.ints()...)
			m.heapBytes += int64(len(own.i)) * 8
		default:
			own.f = append([]float32(nil), x.floats(nil)...)
			m.heapBytes += int64(len(own.f)) * 4
		}
		s.slots[t], owned[own] = own, true
		m.setInit(g.Tid(t), own, owned)
	}
}

// setInit keeps the init chain's result x for slot t, replacing (and
// uncounting) a result an earlier instruction wrote there.
func (m *model) setInit(t g.Tid, x *tensor, owned map[*tensor]bool) {
	heap := func(x *tensor) int64 { return int64(len(x.u))*4 + int64(len(x.i))*8 + int64(len(x.f))*4 }
	if int(t) < len(m.consts) {
		if old := m.consts[t]; owned[old] {
			m.heapBytes -= heap(old)
		}
		m.consts[t] = x
		return
	}
	for i := range m.initSlots {
		if m.initSlots[i].t == t {
			m.heapBytes -= heap(m.initSlots[i].x)
			m.initSlots[i].x = x
			return
		}
	}
	m.initSlots = append(m.initSlots, initSlot{t, x})
}

// prepareQuant builds, once per program, the qMatrix of every
// QuantizedMatmulNode whose weight, scales and biases are constants (after
// the init chain): scales and biases in fp32, the packed words a view of
// the mapping. Tied matrices share one.
func (m *model) prepareQuant() error {
	type key struct{ w, s, b g.Tid }
	built := map[key]*qMatrix{}
	m.qmats = map[*g.QuantizedMatmulNode]*qMatrix{}
	m.fp4mats = map[*g.QuantizedMatmulNode]*fp4Matrix{}
	fp4s := map[[2]g.Tid]*fp4Matrix{}
	for _, in := range m.graph.Instructions {
		n, ok := in.Op.(*g.QuantizedMatmulNode)
		if ok && n.Mode == "nvfp4" && int(n.W) < len(m.consts) && int(n.Scales) < len(m.consts) {
			k := [2]g.Tid{n.W, n.Scales}
			if fp4s[k] == nil {
				q, err := newFP4Matrix(m.consts[n.W], m.consts[n.Scales])
				if err != nil {
					return fmt.Errorf("%s: %w", in.Kind, err)
				}
				fp4s[k] = q
				m.heapBytes += int64(len(q.Scales)) * 4
			}
			m.fp4mats[n] = fp4s[k]
			continue
		}
		if !ok || n.Biases == nil {
			continue
		}
		k := key{n.W, n.Scales, *n.Biases}
		if q := built[k]; q != nil {
			m.qmats[n] = q
			continue
		}
		c := func(t g.Tid) *tensor {
			if int(t) < len(m.consts) {
				return m.consts[t]
			}
			return nil
		}
		w, sc, bi := c(n.W), c(n.Scales), c(*n.Biases)
		if w == nil || sc == nil || bi == nil {
			continue // computed at run time: built per step
		}
		q, err := newQMatrix(w, sc, bi, int(n.Bits), int(n.GroupSize))
		if err != nil {
			return fmt.Errorf("%s: %w", in.Kind, err)
		}
		m.heapBytes += q.copiedBytes(sc, bi)
		built[k] = q
		m.qmats[n] = q
	}
	m.dropFoldedBiases()
	return nil
}

// dropFoldedBiases releases the init chain's fp32 biases that only
// prepared, folded quantized matmuls read (they read none of them): 4
// bytes a group, as much as fp32 scales would be.
func (m *model) dropFoldedBiases() {
	readers := map[g.Tid]int{} // reads other than by a folded matrix's matmul
	folded := map[g.Tid]bool{}
	for _, in := range m.graph.Instructions {
		if n, ok := in.Op.(*g.QuantizedMatmulNode); ok && n.Biases != nil {
			if q := m.qmats[n]; q != nil && q.Biases == nil {
				folded[*n.Biases] = true
				continue
			}
		}
		reads, _ := tidUses(in.Op)
		for _, t := range reads {
			readers[t]++
		}
	}
	for t := range folded {
		if readers[t] > 0 || int(t) >= len(m.consts) || m.consts[t] == nil {
			continue
		}
		if x := m.consts[t]; x.f != nil {
			m.heapBytes -= int64(len(x.f)) * 4
		}
		m.consts[t] = nil
	}
}

// planQFusion finds runs of consecutive QuantizedMatmulNodes of the main
// chain on one input (transposed, prepared, the same packing, so one
// prepared input serves all) whose outputs are distinct slots other than
// the input's: quantizedMatmul runs such a run as one job, one
// preparation and one hand-over to the workers instead of several.
func (m *model) planQFusion() {
	m.qfused = map[*g.QuantizedMatmulNode][]*g.QuantizedMatmulNode{}
	ins := m.graph.Instructions
	fusable := func(n *g.QuantizedMatmulNode) *qMatrix {
		if q := m.qmats[n]; q != nil && n.Transpose && n.Mode != "nvfp4" && qFast(q) {
			return q
		}
		return nil
	}
	for i := 0; i < len(ins); i++ {
		n, ok := ins[i].Op.(*g.QuantizedMatmulNode)
		if !ok || fusable(n) == nil || n.Out == n.X {
			continue
		}
		q := m.qmats[n]
		outs := map[g.Tid]bool{n.Out: true}
		var run []*g.QuantizedMatmulNode
		for j := i + 1; j < len(ins) && len(run) < maxQFused-1; j++ {
			f, ok := ins[j].Op.(*g.QuantizedMatmulNode)
			if !ok || f.X != n.X || outs[f.Out] || f.Out == n.X {
				break
			}
			fq := fusable(f)
			if fq == nil || fq.Cols != q.Cols || fq.Bits != q.Bits || fq.GroupSize != q.GroupSize ||
				(fq.Biases == nil) != (q.Biases == nil) || fq.BiasMul != q.BiasMul {
				break
			}
			outs[f.Out] = true
			run = append(run, f)
		}
		if len(run) > 0 {
			m.qfused[n] = run
			i += len(run)
		}
	}
}

// maxQFused bounds a fused run (a layer has at most three projections of
// one input).
const maxQFused = 4

// copiedBytes is the heap that q's scales and biases take beyond the
// tensors sc and bi (converted copies; views take none).
func (q *qMatrix) copiedBytes(sc, bi *tensor) int64 {
	var n int64
	if q.Scales != nil && &q.Scales[0] != firstF(sc) {
		n += int64(len(q.Scales)) * 4
	}
	if q.Biases != nil && &q.Biases[0] != firstF(bi) {
		n += int64(len(q.Biases)) * 4
	}
	return n
}

func firstF(t *tensor) *float32 {
	if len(t.f) > t.off {
		return &t.f[t.off]
	}
	return nil
}

// newQMatrix checks the shapes of a packed weight [rows, cols·bits/32] and
// its scales and biases [rows, cols/gs], and views or converts them.
func newQMatrix(w, sc, bi *tensor, bits, gs int) (*qMatrix, error) {
	if w.u == nil || len(w.shape) != 2 {
		return nil, fmt.Errorf("weight of shape %v is not a 2-D uint32 matrix", w.shape)
	}
	rows, wpr := w.shape[0], w.shape[1]
	cols := wpr * 32 / bits
	if rows <= 0 || cols <= 0 || cols%gs != 0 {
		return nil, fmt.Errorf("weight of shape %v does not hold whole groups of %d %d-bit values", w.shape, gs, bits)
	}
	groups := rows * cols / gs
	if sc.isInt() || bi.isInt() || sc.numel() != groups || bi.numel() != groups {
		return nil, fmt.Errorf("scales %v and biases %v for a %d×%d matrix in groups of %d", sc.shape, bi.shape, rows, cols, gs)
	}
	q := &qMatrix{Bits: bits, GroupSize: gs, Rows: rows, Cols: cols, Packed: w.uints(), Biases: bi.floats(nil)}
	if sc.dt == stBF16 && sc.h != nil && sc.contiguous() {
		q.ScalesBF16 = sc.h[sc.off : sc.off+groups] // as the file has them
	} else {
		q.Scales = sc.floats(nil)
	}
	q.foldBiases()
	return q, nil
}

// quantizedMatmul runs mlx::quantized_matmul: out[..., N] = x[..., K] ·
// Wᵀ (transpose) or x[..., K] · W (not).
func (s *session) quantizedMatmul(n *g.QuantizedMatmulNode) error {
	x, err := s.get(n.X)
	if err != nil {
		return err
	}
	if n.Mode == "nvfp4" {
		return s.quantizedMatmulFP4(n, x)
	}
	q := s.m.qmats[n]
	if q == nil {
		w, err := s.get(n.W)
		if err != nil {
			return err
		}
		sc, err := s.get(n.Scales)
		if err != nil {
			return err
		}
		bi, err := s.get(*n.Biases)
		if err != nil {
			return err
		}
		if q, err = newQMatrix(w, sc, bi, int(n.Bits), int(n.GroupSize)); err != nil {
			return err
		}
	}
	if len(x.shape) == 0 || x.isInt() {
		return fmt.Errorf("quantizedMatmul of input %v", x.shape)
	}
	K, N := q.Cols, q.Rows
	if !n.Transpose {
		K, N = q.Rows, q.Cols
	}
	if x.shape[len(x.shape)-1] != K {
		return fmt.Errorf("quantizedMatmul: input %v for a weight of %d×%d (transpose %v)", x.shape, q.Rows, q.Cols, n.Transpose)
	}
	rows := x.numel() / K
	shape := append(s.tmp(0, x.shape[:len(x.shape)-1]...), N)
	s.scratch[0] = shape
	xs := s.fl(x)
	if s.lastOnly && s.ip == s.m.headInst && rows > 1 {
		// only the last position's logits are wanted
		xs = xs[(rows-1)*K:]
		rows = 1
		for i := range shape[:len(shape)-1] {
			shape[i] = 1
		}
	}
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	// (never with the logits head in the run: its input was cut to the
	// last row above)
	if f := s.m.qfused[n]; len(f) > 0 && !(s.lastOnly && s.m.headInst >= s.ip && s.m.headInst <= s.ip+len(f)) {
		return s.quantizedMatmulFused(n, f, x, xs, rows, q, o, shape)
	}
	if n.Transpose {
		qMatMulJob(&s.mm, o, xs, rows, q, s.threads)
	} else {
		qMatMulNoTrans(o, xs, rows, q, s.arena.alloc(q.Cols))
	}
	return s.set(n.Out, s.newF(s.qmmDType(x, n), shape, o))
}

// qmmDType is a quantized matmul's output dtype: MLX's
// promote_types(x, scales).
func (s *session) qmmDType(x *tensor, n *g.QuantizedMatmulNode) int {
	if sc, err := s.get(n.Scales); err == nil {
		return promote(x.dt, sc.dt)
	}
	return x.dt
}

// quantizedMatmulFused runs n and the nodes fused after it (planQFusion)
// as one job on their shared input, sets every output and has run skip
// the followers. o and shape are n's output and its shape.
func (s *session) quantizedMatmulFused(n *g.QuantizedMatmulNode, fused []*g.QuantizedMatmulNode, x *tensor, xs []float32, rows int, q *qMatrix, o []float32, shape []int) error {
	parts := append(s.qparts[:0], qPart{q: q, out: o})
	for _, f := range fused {
		fq := s.m.qmats[f]
		fo, err := s.allocF(rows * fq.Rows)
		if err != nil {
			return err
		}
		parts = append(parts, qPart{q: fq, out: fo})
	}
	s.qparts = parts
	qMatMulJobs(&s.mm, parts, xs, rows, s.threads)
	lead := shape[:len(shape)-1]
	for i := range parts {
		nd := n
		if i > 0 {
			nd = fused[i-1]
		}
		sh := append(s.tmp(1, lead...), parts[i].q.Rows)
		if err := s.set(nd.Out, s.newF(s.qmmDType(x, nd), sh, parts[i].out)); err != nil {
			return err
		}
	}
	clear(s.qparts)
	s.skip = len(fused)
	return nil
}

// dequantize runs mlx::dequantize (affine): w [..., W] uint32 words,
// scales and biases [..., W·32/bits/gs] → out [..., W·32/bits].
func (s *session) dequantize(n *g.DequantizeNode) error {
	if n.Mode == "nvfp4" {
		return s.dequantizeFP4(n)
	}
	w, err := s.get(n.W)
	if err != nil {
		return err
	}
	sc, err := s.get(n.Scales)
	if err != nil {
		return err
	}
	bi, err := s.get(*n.Biases)
	if err != nil {
		return err
	}
	bits, gs := int(n.Bits), int(n.GroupSize)
	if w.u == nil || len(w.shape) == 0 {
		return fmt.Errorf("dequantize of a %v tensor that is not uint32 words", w.shape)
	}
	wpr := w.shape[len(w.shape)-1]
	cols := wpr * 32 / bits
	if cols%gs != 0 || cols == 0 {
		return fmt.Errorf("dequantize: rows of %d words do not hold whole groups of %d", wpr, gs)
	}
	rows := w.numel() / wpr
	if sc.isInt() || bi.isInt() || sc.numel() != rows*cols/gs || bi.numel() != rows*cols/gs {
		return fmt.Errorf("dequantize: scales %v and biases %v for %v words in groups of %d", sc.shape, bi.shape, w.shape, gs)
	}
	shape := append(s.tmp(0, w.shape[:len(w.shape)-1]...), cols)
	s.scratch[0] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	words, scales, biases := w.uints(), s.fl(sc), s.fl(bi)
	G := cols / gs
	for r := 0; r < rows; r++ {
		dequantWords(o[r*cols:(r+1)*cols], words[r*wpr:(r+1)*wpr], bits, gs, scales[r*G:(r+1)*G], biases[r*G:(r+1)*G])
	}
	dt := sc.dt
	if n.DType != nil {
		dt = int(*n.DType)
	}
	if !isFloatST(dt) {
		return fmt.Errorf("dequantize to dtype %d", dt)
	}
	return s.set(n.Out, s.newF(dt, shape, o))
}

// uints returns t's elements as contiguous uint32 (t has u storage).
func (t *tensor) uints() []uint32 {
	n := t.numel()
	if t.contiguous() {
		return t.u[t.off : t.off+n]
	}
	dst := make([]uint32, 0, n)
	iterate(t.shape, t.strides, t.off, func(k int) { dst = append(dst, t.u[k]) })
	return dst
}
