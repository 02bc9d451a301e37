package cpu

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/pte"
	"etchat/inference/pte/ptetest"
)

// selectedRowsProgram writes a tiny off-graph program of the
// logits-to-keep mode 2 ("selected") kind, which no exported fixture has:
// embedding → one attention head over the cache (q = k = v) → the rows
// its third input selects → LM head. emb is [vocab][dim], head [dim][vocab].
func selectedRowsProgram(t *testing.T, emb, head []float32, vocab, dim, step int, mode int64) string {
	t.Helper()
	f32 := func(xs []float32) []byte {
		b := make([]byte, 4*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	tid := func(n uint32) ptetest.Fields { return ptetest.Fields{1: n, 2: n, 3: uint8(2)} } // IntOrVidOrTid, a tensor
	V, D, S := int32(vocab), int32(dim), int32(step)
	// Slots: constants 0 emb, 1 head; inputs 2 ids, 3 positions, 4 rows;
	// output 5 logits; temporaries 6–10.
	gr := ptetest.MLXGraph{
		Version: "1", Counts: [6]uint32{2, 3, 1, 0, 5, 0}, InitChain: -1,
		Chains: [][]ptetest.MLXNode{{
			{Kind: "TakeNode", Fields: ptetest.Fields{0: uint32(0), 1: uint32(6), 2: tid(2), 3: int32(0)}},
			{Kind: "ExpandDimsNode", Fields: ptetest.Fields{0: uint32(6), 1: uint32(7), 2: int32(1)}},
			{Kind: "UpdateAndAttendNode", Fields: ptetest.Fields{0: uint32(7), 1: uint32(7), 2: uint32(7), 3: uint32(3), 4: uint32(8),
				5: int32(0), 6: float32(0.5), 7: int8(6)}},
			{Kind: "SqueezeNode", Fields: ptetest.Fields{0: uint32(8), 1: uint32(9), 2: []int32{1}}},
			{Kind: "TakeNode", Fields: ptetest.Fields{0: uint32(9), 1: uint32(10), 2: tid(4), 3: int32(1)}},
			{Kind: "AddmmNode", Fields: ptetest.Fields{0: uint32(10), 1: uint32(1), 2: uint32(5), 4: float32(1), 5: float32(1)}},
		}},
		Inputs:     []ptetest.MLXSlot{{Idx: 2}, {Idx: 3}, {Idx: 4}},
		Outputs:    []ptetest.MLXSlot{{Idx: 5}},
		NamedSlots: map[string]ptetest.MLXSlot{"emb.weight": {Idx: 0}, "head.weight": {Idx: 1}},
		TensorMeta: []ptetest.MLXTensorMeta{
			{DType: 6, Shape: [][3]int32{{V, 0, -1}, {D, 0, -1}}},
			{DType: 6, Shape: [][3]int32{{D, 0, -1}, {V, 0, -1}}},
			{DType: 4, Shape: [][3]int32{{1, 0, -1}, {-1, 1, S}}},
			{DType: 4, Shape: [][3]int32{{-1, 1, S}}},
			{DType: 4, Shape: [][3]int32{{-1, 1, S}}},
			{DType: 6, Shape: [][3]int32{{1, 0, -1}, {-1, 1, S}, {V, 0, -1}}},
		},
	}
	bound := func(dt pte.ScalarType, sizes ...int32) ptetest.Value {
		return ptetest.Value{Kind: pte.KindTensor, Tensor: &ptetest.Tensor{DType: dt, Sizes: sizes, Dynamism: pte.DynamicBound}}
	}
	ints := func(xs ...int64) ptetest.Value { return ptetest.Value{Kind: pte.KindIntList, Ints: xs} }
	prog := ptetest.Program{
		Segments: [][]byte{ptetest.MLXBlob(gr), f32(emb), f32(head)}, SegmentAlign: 8,
		NamedData: []ptetest.NamedData{{Key: "emb.weight", Segment: 1}, {Key: "head.weight", Segment: 2}},
		Methods: []ptetest.Method{
			{Name: "forward", Values: []ptetest.Value{bound(pte.Long, 1, S), bound(pte.Long, S), bound(pte.Long, S), bound(pte.Float, 1, S, V)},
				Inputs: []int32{0, 1, 2}, Outputs: []int32{3}, Instructions: []ptetest.Instruction{{Index: 0, Args: []int32{0, 1, 2, 3}}},
				Delegates: []ptetest.Delegate{{ID: "MLXBackend", Index: 0}}},
			ptetest.Constant("get_n_caches", ptetest.IntValue(1)),
			ptetest.Constant("get_kv_heads", ints(1)),
			ptetest.Constant("get_head_dims", ints(int64(dim))),
			ptetest.Constant("get_windows", ints(0)),
			ptetest.Constant("get_max_seq_len", ptetest.IntValue(int64(step))),
			ptetest.Constant("get_max_context_len", ptetest.IntValue(16)),
			ptetest.Constant("get_vocab_size", ptetest.IntValue(int64(vocab))),
			ptetest.Constant("get_logits_to_keep_mode", ptetest.IntValue(mode)),
		},
	}
	path := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(path, ptetest.Build(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantRows is the program's arithmetic in float64: each position attends
// itself and every earlier one (scores 0.5·x_t·x_s, softmax), then the LM
// head.
func wantRows(emb, head []float32, vocab, dim int, ids []int) [][]float64 {
	x := func(t int) []float32 { return emb[ids[t]*dim : (ids[t]+1)*dim] }
	var out [][]float64
	for t := range ids {
		scores := make([]float64, t+1)
		top := math.Inf(-1)
		for s := 0; s <= t; s++ {
			for d := 0; d < dim; d++ {
				scores[s] += 0.5 * float64(x(t)[d]) * float64(x(s)[d])
			}
			top = math.Max(top, scores[s])
		}
		sum := 0.0
		for s := range scores {
			scores[s] = math.Exp(scores[s] - top)
			sum += scores[s]
		}
		att := make([]float64, dim)
		for s := range scores {
			for d := 0; d < dim; d++ {
				att[d] += scores[s] / sum * float64(x(s)[d])
			}
		}
		row := make([]float64, vocab)
		for v := range row {
			for d := 0; d < dim; d++ {
				row[v] += att[d] * float64(head[d*vocab+v])
			}
		}
		out = append(out, row)
	}
	return out
}

// Mode 2 ("selected rows"): the engine feeds the row indices — [T-1] for
// Forward's next token, every row for ForwardAll — and the rows are the
// program's arithmetic, as a mode-0 reading would give them.
func TestLogitsSelectedRows(t *testing.T) {
	const vocab, dim, step = 8, 4, 4
	emb, head := make([]float32, vocab*dim), make([]float32, dim*vocab)
	for i := range emb {
		emb[i] = float32(math.Sin(float64(i)*0.7)) * 0.9
		head[i] = float32(math.Cos(float64(i)*1.3)) * 0.8
	}
	path := selectedRowsProgram(t, emb, head, vocab, dim, step, 2)
	info, err := modelinfo.Load(path, modelinfo.Options{NoCompanions: true})
	if err != nil || info.Kind != modelinfo.OffGraph || info.Metadata.LogitsMode != engine.LogitsSelected {
		t.Fatalf("%v: %+v", err, info)
	}
	cfg, err := info.CacheConfig(kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := New(Options{}).Open(ctx, path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := engine.SessionLogitsMode(s); m != engine.LogitsSelected {
		t.Errorf("mode %v", m)
	}
	ids := []int{3, 1, 6, 2, 5, 0, 7}
	want := wantRows(emb, head, vocab, dim, ids)
	near := func(what string, got []float32, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
		}
		for i := range got {
			if math.Abs(float64(got[i])-want[i]) > 1e-5 {
				t.Fatalf("%s: logit %d = %g, want %g", what, i, got[i], want[i])
			}
		}
	}
	// ForwardAll of the first step: every row.
	all, err := s.ForwardAll(ctx, []int64{3, 1, 6, 2}, []int64{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 4; r++ {
		near("ForwardAll row "+string(rune('0'+r)), all[r*vocab:(r+1)*vocab], want[r])
	}
	// Forward of the next step: the last row only.
	last, err := s.Forward(ctx, []int64{5, 0}, []int64{4, 5})
	if err != nil {
		t.Fatal(err)
	}
	near("Forward's row", last, want[5])
	last, err = s.Forward(ctx, []int64{7}, []int64{6})
	if err != nil {
		t.Fatal(err)
	}
	near("decode", last, want[6])

	// The same program not publishing mode 2: its third input is one the
	// engine would not know to feed, and it says so.
	mode0 := selectedRowsProgram(t, emb, head, vocab, dim, step, 0)
	if _, err := New(Options{}).Open(ctx, mode0, cfg); err == nil || !strings.Contains(err.Error(), "forward's delegate has 3 inputs; want 2") {
		t.Errorf("three inputs without mode 2: %v", err)
	}
}

// ForwardAll on a last-row program is refused before it runs; the error
// is engine.ErrLastRowOnly, which wraps engine.ErrUnsupported.
func TestLastRowOnlyError(t *testing.T) {
	if !errors.Is(engine.ErrLastRowOnly, engine.ErrUnsupported) || !strings.Contains(engine.ErrLastRowOnly.Error(), "feed one token per forward") {
		t.Errorf("%v", engine.ErrLastRowOnly)
	}
}
