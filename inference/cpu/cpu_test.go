package cpu

import (
	"context"
	"math"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
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
	f, err := pte.Open(fixtures.PTE(name))
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
	s, err := New(Options{}).Open(context.Background(), fixtures.PTE(name), cfg)
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

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGreedyOffGraph(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3} {
		t.Run(name, func(t *testing.T) {
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
				if !equalIDs(got, c.GreedyIDs) {
					t.Errorf("case %d: greedy %v, want %v", ci, got, c.GreedyIDs)
				}
				if s.Len() != len(c.InputIDs)+len(c.GreedyIDs)-1 {
					t.Errorf("case %d: Len %d", ci, s.Len())
				}
			}
		})
	}
}
