package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
	"etchat/internal/fixtures"
)

type refCase struct {
	Kind       string    `json:"kind"`
	InputIDs   []int64   `json:"input_ids"`
	GreedyIDs  []int64   `json:"greedy_ids"`
	Margins    []float64 `json:"margins"`
	LogitsFile string    `json:"prefill_last_logits_file"`
}

type reference struct {
	Cases     []refCase `json:"cases"`
	Multiturn struct {
		Turn1 struct {
			InputIDs     []int64 `json:"input_ids"`
			GeneratedIDs []int64 `json:"generated_ids"`
			LogitsFile   string  `json:"prefill_last_logits_file"`
		} `json:"turn1"`
		Turn2 struct {
			InputIDs     []int64 `json:"input_ids"`
			CacheIDs     []int64 `json:"cache_ids_after_turn1"`
			RewindTo     int     `json:"rewind_to"`
			AfterRewind  []int64 `json:"tokens_to_prefill_after_rewind"`
			GeneratedIDs []int64 `json:"generated_ids"`
			LogitsFile   string  `json:"prefill_last_logits_file"`
		} `json:"turn2"`
	} `json:"multiturn"`
}

// layoutOf reads the cache layout from a fixture's constant methods.
func layoutOf(tb testing.TB, name string) kvcache.Layout {
	tb.Helper()
	return layoutOfFile(tb, fixtures.PTE(name))
}

// layoutOfFile is layoutOf for a program's path.
func layoutOfFile(tb testing.TB, path string) kvcache.Layout {
	tb.Helper()
	f, err := pte.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	ints := func(m string) []int {
		v, err := f.Constant(m)
		if err != nil {
			tb.Fatal(err)
		}
		xs, err := v.Ints()
		if err != nil {
			if x, err2 := v.Int(); err2 == nil {
				return []int{int(x)}
			}
			tb.Fatal(err)
		}
		out := make([]int, len(xs))
		for i, x := range xs {
			out[i] = int(x)
		}
		return out
	}
	return kvcache.Layout{KVHeads: ints("get_kv_heads"), HeadDims: ints("get_head_dims"), Windows: ints("get_windows"),
		PrefillChunk: ints("get_prefill_chunk_size")[0], MaxCtxLen: ints("get_max_ctx_len")[0]}
}

func openFixture(tb testing.TB, name, kvDType string) (engine.Session, kvcache.Layout) {
	tb.Helper()
	return openFixtureWith(tb, name, kvDType, Options{})
}

// openFixtureWith is openFixture on an engine with opts.
func openFixtureWith(tb testing.TB, name, kvDType string, opts Options) (engine.Session, kvcache.Layout) {
	tb.Helper()
	var cfg *kvcache.Config
	var l kvcache.Layout
	if name != fixtures.InGraph {
		l = layoutOf(tb, name)
		p := kvcache.DefaultPolicy()
		p.StorageDType = kvDType
		c, err := kvcache.Build(l, p)
		if err != nil {
			tb.Fatal(err)
		}
		cfg = c
	} else {
		l = kvcache.Layout{PrefillChunk: 32}
	}
	s, err := New(opts).Open(context.Background(), fixtures.PTE(name), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, l
}

func argmax(x []float32) int64 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int64(best)
}

// prefill feeds ids in chunks starting at s.Len() and returns the last
// logits (a copy).
func prefill(tb testing.TB, s engine.Session, ids []int64, chunk int) []float32 {
	tb.Helper()
	var last []float32
	for i := 0; i < len(ids); i += chunk {
		j := min(i+chunk, len(ids))
		pos := make([]int64, j-i)
		for k := range pos {
			pos[k] = int64(s.Len() + k)
		}
		out, err := s.Forward(context.Background(), ids[i:j], pos)
		if err != nil {
			tb.Fatal(err)
		}
		last = out
	}
	return append([]float32(nil), last...)
}

// greedy generates n tokens after logits.
func greedy(tb testing.TB, s engine.Session, logits []float32, n int) []int64 {
	tb.Helper()
	var out []int64
	for i := 0; i < n; i++ {
		id := argmax(logits)
		out = append(out, id)
		if i == n-1 {
			break
		}
		l, err := s.Forward(context.Background(), []int64{id}, []int64{int64(s.Len())})
		if err != nil {
			tb.Fatal(err)
		}
		logits = l
	}
	return out
}

func maxAbs(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

func TestGreedyOffGraph(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.Gemma4} {
		t.Run(name, func(t *testing.T) {
			skipGemma4UnderRace(t, name)
			var ref reference
			fixtures.Reference(t, name, &ref)
			s, l := openFixture(t, name, "fp32")
			for ci, c := range ref.Cases {
				if err := s.Clear(); err != nil {
					t.Fatal(err)
				}
				logits := prefill(t, s, c.InputIDs, l.PrefillChunk)
				want := fixtures.Logits(t, name, c.LogitsFile)
				if d := maxAbs(logits, want); d > 1e-4 {
					t.Errorf("case %d: prefill logits max abs diff %g > 1e-4", ci, d)
				}
				got := greedy(t, s, logits, len(c.GreedyIDs))
				if !slices.Equal(got, c.GreedyIDs) {
					t.Errorf("case %d: greedy %v, want %v", ci, got, c.GreedyIDs)
				}
				if s.Len() != len(c.InputIDs)+len(c.GreedyIDs)-1 {
					t.Errorf("case %d: Len %d", ci, s.Len())
				}
			}
		})
	}
}

func TestMultiturn(t *testing.T) {
	// gemma4's reference appends turn 2 to the cache (rewind_to = 35, the
	// whole of it), as run_llm_hf.cpp does.
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.Gemma4} {
		t.Run(name, func(t *testing.T) {
			skipGemma4UnderRace(t, name)
			var ref reference
			fixtures.Reference(t, name, &ref)
			mt := ref.Multiturn
			s, l := openFixture(t, name, "fp32")
			logits := prefill(t, s, mt.Turn1.InputIDs, l.PrefillChunk)
			if d := maxAbs(logits, fixtures.Logits(t, name, mt.Turn1.LogitsFile)); d > 1e-4 {
				t.Errorf("turn 1 prefill logits differ by %g", d)
			}
			got := greedy(t, s, logits, len(mt.Turn1.GeneratedIDs))
			if !slices.Equal(got, mt.Turn1.GeneratedIDs) {
				t.Fatalf("turn 1: %v, want %v", got, mt.Turn1.GeneratedIDs)
			}
			// The last generated token goes into the cache too.
			prefill(t, s, got[len(got)-1:], 1)
			if s.Len() != len(mt.Turn2.CacheIDs) {
				t.Fatalf("Len %d after turn 1, want %d", s.Len(), len(mt.Turn2.CacheIDs))
			}
			err := s.Rewind(mt.Turn2.RewindTo)
			switch {
			case err == nil:
				// gemma3's ring layers (window 8, 15 rows) still hold
				// positions 21-8+1.. after 29 tokens, so kvcache's floor
				// (29-8 = 21) admits this rewind; HF's cache crop refused it.
				logits = prefill(t, s, mt.Turn2.AfterRewind, l.PrefillChunk)
			case errors.Is(err, engine.ErrRewindRefused) && s.Len()-mt.Turn2.RewindTo >= 0:
				if err := s.Clear(); err != nil {
					t.Fatal(err)
				}
				logits = prefill(t, s, mt.Turn2.InputIDs, l.PrefillChunk)
			default:
				t.Fatalf("rewind: %v", err)
			}
			if s.Len() != len(mt.Turn2.InputIDs) {
				t.Fatalf("Len %d before turn 2, want %d", s.Len(), len(mt.Turn2.InputIDs))
			}
			if d := maxAbs(logits, fixtures.Logits(t, name, mt.Turn2.LogitsFile)); d > 1e-4 {
				t.Errorf("turn 2 prefill logits differ by %g", d)
			}
			got = greedy(t, s, logits, len(mt.Turn2.GeneratedIDs))
			if !slices.Equal(got, mt.Turn2.GeneratedIDs) {
				t.Errorf("turn 2: %v, want %v", got, mt.Turn2.GeneratedIDs)
			}
		})
	}
}

func TestGemmaChunkSizes(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Gemma3, &ref)
	s, _ := openFixture(t, fixtures.Gemma3, "fp32")
	for chunk := 1; chunk <= 8; chunk++ {
		for ci, c := range ref.Cases {
			if (testing.Short() || raceEnabled) && ci > 0 {
				break
			}
			s.Clear()
			logits := prefill(t, s, c.InputIDs, chunk)
			got := greedy(t, s, logits, len(c.GreedyIDs))
			if !slices.Equal(got, c.GreedyIDs) {
				t.Errorf("chunk %d case %d: %v, want %v", chunk, ci, got, c.GreedyIDs)
			}
		}
	}
}

// TestKVDTypes: bf16 and fp16 KV storage stay close to the reference and
// use half the bytes.
func TestKVDTypes(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	c := ref.Cases[0]
	want := fixtures.Logits(t, fixtures.Llama3, c.LogitsFile)
	for _, dt := range []string{"bf16", "fp16", "fp32"} {
		s, l := openFixture(t, fixtures.Llama3, dt)
		logits := prefill(t, s, c.InputIDs, l.PrefillChunk)
		d := maxAbs(logits, want)
		tol := 1e-4
		if dt != "fp32" {
			tol = 0.1
		}
		if d > tol || d == 0 && dt != "fp32" {
			t.Errorf("%s: prefill logits differ by %g", dt, d)
		}
		if argmax(logits) != c.GreedyIDs[0] {
			t.Errorf("%s: first token %d, want %d", dt, argmax(logits), c.GreedyIDs[0])
		}
		// 2 layers × K,V × 2 heads × 16 × initial rows (capacity 128).
		per := int64(2 * 2 * 2 * 16 * 128)
		size := int64(2)
		if dt == "fp32" {
			size = 4
		}
		if m := s.Memory(); m.KVBytes != per*size || m.ActiveBytes <= m.KVBytes || m.PeakBytes < m.ActiveBytes {
			t.Errorf("%s: memory %+v, want KV %d", dt, m, per*size)
		}
		t.Logf("%s: max abs %g", dt, d)
	}
}

func TestInGraph(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	s, _ := openFixture(t, fixtures.InGraph, "")
	if s.Capacity() != 128 || s.Vocab() != 128256 {
		t.Errorf("capacity %d vocab %d", s.Capacity(), s.Vocab())
	}
	run := func(c refCase) []int64 {
		logits := prefill(t, s, c.InputIDs, 32)
		if d := maxAbs(logits, fixtures.Logits(t, fixtures.Llama3, c.LogitsFile)); d > 1e-4 {
			t.Errorf("prefill logits differ by %g", d)
		}
		return greedy(t, s, logits, len(c.GreedyIDs))
	}
	// Two sessions' worth in a row, with Clear between: each equals the
	// off-graph twin's reference.
	for ci, c := range ref.Cases {
		if err := s.Clear(); err != nil {
			t.Fatal(err)
		}
		if got := run(c); !slices.Equal(got, c.GreedyIDs) {
			t.Errorf("case %d: %v, want %v", ci, got, c.GreedyIDs)
		}
	}
	if err := s.Rewind(3); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("in-graph rewind: %v, want ErrUnsupported", err)
	}
	if rc := canRewind(t, s); rc.CanRewind(3) || !rc.CanRewind(s.Len()) {
		t.Errorf("in-graph CanRewind(3) = %v, CanRewind(Len) = %v; want false, true", rc.CanRewind(3), rc.CanRewind(s.Len()))
	}
	// A second session opened afterwards gives the same as the first case
	// alone.
	s2, _ := openFixture(t, fixtures.InGraph, "")
	logits := prefill(t, s2, ref.Cases[1].InputIDs, 32)
	if got := greedy(t, s2, logits, 16); !slices.Equal(got, ref.Cases[1].GreedyIDs) {
		t.Errorf("second session: %v", got)
	}
}

func TestBadInput(t *testing.T) {
	s, l := openFixture(t, fixtures.Llama3, "fp32")
	ctx := context.Background()
	long := make([]int64, l.PrefillChunk+1)
	pos := make([]int64, len(long))
	for i := range pos {
		pos[i] = int64(i)
	}
	if _, err := s.Forward(ctx, long, pos); err == nil {
		t.Error("a step longer than the chunk was accepted")
	}
	if _, err := s.Forward(ctx, []int64{1, 2}, []int64{0}); err == nil {
		t.Error("mismatched positions accepted")
	}
	if _, err := s.Forward(ctx, []int64{1}, []int64{5}); err == nil {
		t.Error("a gap in positions was accepted")
	}
	if _, err := s.Forward(ctx, []int64{1 << 40}, []int64{0}); err == nil {
		t.Error("an out-of-vocabulary id was accepted")
	}
	if _, err := s.Forward(ctx, nil, nil); err == nil {
		t.Error("an empty step was accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Forward(cctx, []int64{1}, []int64{0}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if s.Len() != 0 {
		t.Errorf("failed steps changed Len to %d", s.Len())
	}
	// Fill to capacity, then one more is ErrCacheFull.
	ids := make([]int64, 32)
	for s.Len() < s.Capacity() {
		p := make([]int64, 32)
		for i := range p {
			p[i] = int64(s.Len() + i)
		}
		if _, err := s.Forward(ctx, ids, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Forward(ctx, []int64{1}, []int64{int64(s.Len())}); !errors.Is(err, engine.ErrCacheFull) {
		t.Errorf("past capacity: %v", err)
	}
	if err := s.Rewind(s.Len() + 1); !errors.Is(err, engine.ErrRewindRefused) {
		t.Errorf("growing rewind: %v", err)
	}
	if canRewind(t, s).CanRewind(s.Len() + 1) {
		t.Error("CanRewind(Len+1) = true")
	}
	s.Close()
	if canRewind(t, s).CanRewind(0) {
		t.Error("CanRewind on a closed session = true")
	}
	if _, err := s.Forward(ctx, []int64{1}, []int64{0}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("after close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	// Wrong cache kind for the model.
	if _, err := New(Options{}).Open(ctx, fixtures.PTE(fixtures.Llama3), nil); err == nil {
		t.Error("off-graph model opened without a cache config")
	}
	if _, err := New(Options{}).Open(ctx, "/nonexistent.pte", nil); err == nil {
		t.Error("missing file opened")
	}
}

// canRewind is the session's optional rewind predictor, which
// inference.Conversation prefers to its own shadow sequence.
func canRewind(t *testing.T, s engine.Session) interface{ CanRewind(int) bool } {
	t.Helper()
	rc, ok := s.(interface{ CanRewind(int) bool })
	if !ok {
		t.Fatalf("%T has no CanRewind", s)
	}
	return rc
}

// TestGemmaRewindFloor: once the ring layers have evicted positions, a
// rewind below the floor is refused and Clear + re-prefill of the kept
// tokens continues exactly as an uninterrupted run.
func TestGemmaRewindFloor(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Gemma3, &ref)
	c := ref.Cases[0]
	s, l := openFixture(t, fixtures.Gemma3, "fp32")
	logits := prefill(t, s, c.InputIDs, l.PrefillChunk)
	full := greedy(t, s, logits, 12)
	keep := len(c.InputIDs) + 4 // prompt + 4 generated
	// CanRewind predicts each answer of Rewind without changing anything.
	rc := canRewind(t, s)
	n := s.Len()
	for _, tc := range []struct {
		len  int
		want bool
	}{{keep - 10, false}, {keep, true}, {n, true}, {n + 1, false}, {0, true}, {-1, false}} {
		if got := rc.CanRewind(tc.len); got != tc.want {
			t.Errorf("CanRewind(%d) at length %d = %v, want %v", tc.len, n, got, tc.want)
		}
	}
	if s.Len() != n {
		t.Fatalf("CanRewind changed the length to %d", s.Len())
	}
	err := s.Rewind(keep - 10)
	if !errors.Is(err, engine.ErrRewindRefused) {
		t.Fatalf("rewind below the ring floor: %v, want ErrRewindRefused", err)
	}
	if err := s.Rewind(keep); err != nil { // within the window: allowed
		t.Fatalf("rewind within the window: %v", err)
	}
	logits = prefill(t, s, full[4:5], 1)
	again := greedy(t, s, logits, 7)
	if !slices.Equal(again, full[5:]) {
		t.Errorf("after a shallow rewind: %v, want %v", again, full[5:])
	}
	s.Clear()
	kept := append(append([]int64(nil), c.InputIDs...), full[:5]...)
	logits = prefill(t, s, kept, l.PrefillChunk)
	again = greedy(t, s, logits, 7)
	if !slices.Equal(again, full[5:]) {
		t.Errorf("after Clear + re-prefill: %v, want %v", again, full[5:])
	}
	if !slices.Equal(full, c.GreedyIDs[:12]) {
		t.Errorf("greedy %v, want %v", full, c.GreedyIDs[:12])
	}
}

func TestForwardAll(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Qwen3, &ref)
	c := ref.Cases[0]
	s, _ := openFixture(t, fixtures.Qwen3, "fp32")
	n := len(c.InputIDs)
	pos := make([]int64, n)
	for i := range pos {
		pos[i] = int64(i)
	}
	all, err := s.ForwardAll(context.Background(), c.InputIDs, pos)
	if err != nil {
		t.Fatal(err)
	}
	V := s.Vocab()
	if len(all) != n*V {
		t.Fatalf("ForwardAll returned %d values, want %d", len(all), n*V)
	}
	all = append([]float32(nil), all...)
	if d := maxAbs(all[(n-1)*V:], fixtures.Logits(t, fixtures.Qwen3, c.LogitsFile)); d > 1e-4 {
		t.Errorf("last row differs from the reference by %g", d)
	}
	// Row i is what a prefill of the first i+1 tokens ends with.
	for _, i := range []int{0, n / 2} {
		s.Clear()
		last := prefill(t, s, c.InputIDs[:i+1], 32)
		if d := maxAbs(last, all[i*V:(i+1)*V]); d > 1e-4 {
			t.Errorf("row %d differs from a %d-token prefill by %g", i, i+1, d)
		}
	}
}

func TestUnsupportedNode(t *testing.T) {
	m, err := load(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	gr := *m.graph
	gr.Instructions = append([]mlxgraph.Instruction(nil), gr.Instructions...)
	gr.Instructions[3] = mlxgraph.Instruction{Kind: "Conv2DNode"}
	gr.Instructions[5] = mlxgraph.Instruction{Kind: "RopeNode"}
	err = checkNodes(&gr)
	if err == nil || !strings.Contains(err.Error(), "Conv2DNode") || !strings.Contains(err.Error(), "RopeNode") {
		t.Errorf("checkNodes: %v", err)
	}
	if err := checkNodes(m.graph); err != nil {
		t.Errorf("fixture graph refused: %v", err)
	}
}

func TestCorruptFile(t *testing.T) {
	b, err := os.ReadFile(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, mut := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)/2] },     // weights cut off
		func(b []byte) []byte { return b[:6000] },         // blob cut off
		func(b []byte) []byte { b[5252] = 'X'; return b }, // blob magic
		func(b []byte) []byte { return b[:100] },
	} {
		p := filepath.Join(dir, fmt.Sprintf("bad%d.pte", i))
		if err := os.WriteFile(p, mut(append([]byte(nil), b...)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, _ := kvcache.Build(layoutOf(t, fixtures.Llama3), kvcache.DefaultPolicy())
		if s, err := New(Options{}).Open(context.Background(), p, cfg); err == nil {
			s.Close()
			t.Errorf("corruption %d: opened", i)
		} else {
			t.Logf("corruption %d: %v", i, err)
		}
	}
}

// TestThreadsAndConcurrency: the thread count does not change a single bit
// of the logits (work is split by output column and by head), and two
// sessions may run at once.
func TestThreadsAndConcurrency(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	l := layoutOf(t, fixtures.Llama3)
	p := kvcache.DefaultPolicy()
	p.StorageDType = "fp32"
	cfg, err := kvcache.Build(l, p)
	if err != nil {
		t.Fatal(err)
	}
	run := func(threads int, c refCase) ([]float32, []int64, error) {
		s, err := New(Options{Threads: threads}).Open(context.Background(), fixtures.PTE(fixtures.Llama3), cfg)
		if err != nil {
			return nil, nil, err
		}
		defer s.Close()
		var last []float32
		for i := 0; i < len(c.InputIDs); i += l.PrefillChunk {
			j := min(i+l.PrefillChunk, len(c.InputIDs))
			pos := make([]int64, j-i)
			for k := range pos {
				pos[k] = int64(i + k)
			}
			out, err := s.Forward(context.Background(), c.InputIDs[i:j], pos)
			if err != nil {
				return nil, nil, err
			}
			last = append(last[:0], out...)
		}
		var ids []int64
		logits := last
		for k := 0; k < 4; k++ {
			id := argmax(logits)
			ids = append(ids, id)
			out, err := s.Forward(context.Background(), []int64{id}, []int64{int64(s.Len())})
			if err != nil {
				return nil, nil, err
			}
			logits = out
		}
		return last, ids, nil
	}
	one, ids1, err := run(1, ref.Cases[0])
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		logits []float32
		ids    []int64
		err    error
	}
	ch := make(chan res, 2)
	for _, c := range []refCase{ref.Cases[0], ref.Cases[1]} {
		go func() {
			l, ids, err := run(4, c)
			ch <- res{l, ids, err}
		}()
	}
	for i := 0; i < 2; i++ {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if slices.Equal(r.ids, ids1) && maxAbs(r.logits, one) != 0 {
			t.Errorf("4 threads changed the logits by %g", maxAbs(r.logits, one))
		}
		if !slices.Equal(r.ids, ref.Cases[0].GreedyIDs[:4]) && !slices.Equal(r.ids, ref.Cases[1].GreedyIDs[:4]) {
			t.Errorf("concurrent session gave %v", r.ids)
		}
	}
}

// TestDecodeAllocs: after the first steps a decode step reuses its tensor
// headers, shapes, matmul job, attention scratch and (in-graph) the cache
// buffers it replaced; only a handful of allocations remain (it was ~500
// on the tiny models, ~1,900 on llama-bench-bf16).
func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.InGraph} {
		kv := "bf16"
		if name == fixtures.InGraph {
			kv = ""
		}
		s, l := openFixture(t, name, kv)
		prefill(t, s, []int64{3, 4, 5, 6, 7, 8}, l.PrefillChunk)
		ctx := context.Background()
		step := func() {
			if _, err := s.Forward(ctx, []int64{9}, []int64{int64(s.Len())}); err != nil {
				t.Fatal(err)
			}
		}
		step()
		step()
		if allocs := testing.AllocsPerRun(10, step); allocs > 12 {
			t.Errorf("%s: %.0f allocations per decode step, want ≤ 12", name, allocs)
		}
	}
}
