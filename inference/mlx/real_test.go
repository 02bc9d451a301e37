//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
)

// These tests run the real libetchat_runner (ExecuTorch + MLX; on Linux
// MLX's CPU backend) on the fixtures. Without it they skip loudly, and fail
// under CI=true (internal/nativelib).

func realEngine(t *testing.T) *Engine {
	t.Helper()
	return newEngine(t, nativelib.Require(t))
}

// fixtureConfig is the fixture's cache config with fp32 storage (exact
// greedy ids).
func fixtureConfig(t *testing.T, name string) *kvcache.Config {
	t.Helper()
	info, err := modelinfo.Load(fixtures.PTE(name), modelinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := info.CacheConfig(kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type refCase struct {
	InputIDs  []int64 `json:"input_ids"`
	GreedyIDs []int64 `json:"greedy_ids"`
}

func referenceCases(t *testing.T, name string) []refCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.ModelDir(name), "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct{ Cases []refCase }
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return ref.Cases
}

func argmax(row []float32) int64 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int64(best)
}

// greedy prefills ids from the session's length (in steps of chunk) and
// decodes n tokens. It returns errors rather than failing the test: it runs
// on goroutines of its own.
func greedy(s engine.Session, ids []int64, chunk, n int) ([]int64, error) {
	ctx := context.Background()
	var row []float32
	for i := 0; i < len(ids); i += chunk {
		j := min(i+chunk, len(ids))
		var err error
		if row, err = s.Forward(ctx, ids[i:j], seq(s.Len(), j-i)); err != nil {
			return nil, err
		}
	}
	var out []int64
	for range n {
		tok := argmax(row)
		out = append(out, tok)
		var err error
		if row, err = s.Forward(ctx, []int64{tok}, []int64{int64(s.Len())}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// onNewThread runs f on a goroutine locked to an OS thread that ends with
// it (a locked goroutine that exits takes its thread down), so every call
// comes from a thread no earlier call used.
func onNewThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

// TestRealThreadAffinity: sessions opened on one thread and driven from
// others. Before the library ran everything on its own thread this failed
// at the first forward: "MLX execute failed: There is no Stream(cpu, 1) in
// current thread" (Error::Internal).
func TestRealThreadAffinity(t *testing.T) {
	e := realEngine(t)
	cfg := fixtureConfig(t, fixtures.Llama3)
	cases := referenceCases(t, fixtures.Llama3)
	var sessions []engine.Session
	onNewThread(func() {
		for range 3 {
			// Opened through the library directly: distinct native
			// sessions, not the engine's reused one.
			p, err := e.lib.openProgram(fixtures.PTE(fixtures.Llama3))
			if err != nil {
				t.Error(err)
				return
			}
			c, ls, _ := ToC(cfg)
			h, err := e.lib.openSession(p, &c, ls)
			e.lib.closeProgram(p)
			if err != nil {
				t.Error(err)
				return
			}
			sessions = append(sessions, &Session{lib: e.lib, h: h, vocab: 128256, cfg: cfg, capacity: cfg.Capacity})
		}
	})
	if t.Failed() {
		return
	}
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() { // each session driven from a fresh thread per round, in parallel
			defer wg.Done()
			for round := range 4 {
				c := cases[(i+round)%len(cases)]
				onNewThread(func() {
					got, err := greedy(s, c.InputIDs, cfg.MaxWrite, 4)
					if err != nil {
						t.Errorf("session %d round %d: %v", i, round, err)
					} else if !slices.Equal(got, c.GreedyIDs[:4]) {
						t.Errorf("session %d round %d: greedy %v, want %v", i, round, got, c.GreedyIDs[:4])
					}
				})
				onNewThread(func() {
					// Rewind to the prompt and decode again: same tokens.
					if err := s.Rewind(len(c.InputIDs)); err != nil {
						t.Error(err)
						return
					}
					row, err := s.Forward(context.Background(), []int64{c.GreedyIDs[0]}, []int64{int64(len(c.InputIDs))})
					if err != nil {
						t.Error(err)
						return
					}
					if got := argmax(row); got != c.GreedyIDs[1] {
						t.Errorf("session %d round %d: after rewind %d, want %d", i, round, got, c.GreedyIDs[1])
					}
				})
				onNewThread(func() {
					if err := s.Clear(); err != nil {
						t.Error(err)
					}
				})
			}
			onNewThread(func() {
				if err := s.(*Session).lib.closeSession(s.(*Session).h); err != nil {
					t.Error(err)
				}
			})
		}()
	}
	wg.Wait()
}

// TestRealRingRule: gemma3 (sliding windows of 8) with max_write 4 < 8. A
// ring then keeps 8+4-1 = 11 rows, and ExecuTorch's SequenceCache, which
// checks only length - window, would accept rewinds into overwritten
// cells; the library refuses them, and what it accepts computes right.
func TestRealRingRule(t *testing.T) {
	e := realEngine(t)
	ctx := context.Background()
	cfg := fixtureConfig(t, fixtures.Gemma3)
	cfg.MaxWrite = 4
	ids := referenceCases(t, fixtures.Gemma3)[0].InputIDs
	for len(ids) < 24 {
		ids = append(ids, ids...)
	}
	ids = ids[:24]
	s, err := e.Open(ctx, fixtures.PTE(fixtures.Gemma3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last []float32
	for i := 0; i < 20; i += 4 {
		if last, err = s.Forward(ctx, ids[i:i+4], seq(i, 4)); err != nil {
			t.Fatal(err)
		}
	}
	want := slices.Clone(last) // logits at 19 after 0..19
	// Positions 9..19 remain: a next step at n needs n-7.., so n ≥ 16.
	for _, n := range []int{12, 13, 15} {
		err := s.Rewind(n)
		if !errors.Is(err, engine.ErrRewindRefused) || !strings.Contains(err.Error(), "overwritten cells") {
			t.Errorf("rewind 20→%d (ExecuTorch's own check takes it): %v, want refused", n, err)
		}
	}
	if err := s.Rewind(16); err != nil {
		t.Fatal(err)
	}
	got, err := s.Forward(ctx, ids[16:20], seq(16, 4))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("logits after rewind 20→16 and the same 4 tokens differ from the first run (max |Δ| %g)", maxAbsDiff(got, want))
	}
	if err := s.Rewind(16); err != nil {
		t.Fatal(err)
	}
	if err := s.Rewind(12); !errors.Is(err, engine.ErrRewindRefused) {
		t.Errorf("second rewind 16→12: %v, want refused (cells before 9 are gone)", err)
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = max(m, float64(abs32(a[i]-b[i])))
	}
	return m
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestRealStepChecks: a step the cache cannot take is refused before it
// runs (it used to fail inside the graph as Error::Internal after some
// layers had written), and the session stays usable and right.
func TestRealStepChecks(t *testing.T) {
	e := realEngine(t)
	ctx := context.Background()
	cfg := fixtureConfig(t, fixtures.Gemma3) // rings of 8, max_write 8
	ids := referenceCases(t, fixtures.Gemma3)[0].InputIDs
	s, err := e.Open(ctx, fixtures.PTE(fixtures.Gemma3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref, err := e.Open(ctx, fixtures.PTE(fixtures.Gemma3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if _, err := s.Forward(ctx, ids[:4], seq(0, 4)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ids, pos []int64
		msg      string
	}{
		{ids[4:13], seq(4, 9), "a step of 9 tokens exceeds max_write 8"},
		{ids[4:6], seq(5, 2), "position 5 at index 0: a step must continue the cache, at 4"},
		{ids[4:6], []int64{4, 4}, "position 4 at index 1"},
	} {
		_, err := s.Forward(ctx, c.ids, c.pos)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("forward %v: %v, want %q", c.pos, err, c.msg)
		}
	}
	if s.Len() != 4 {
		t.Fatalf("Len %d after refused steps, want 4", s.Len())
	}
	got, err := s.Forward(ctx, ids[4:8], seq(4, 4))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Forward(ctx, ids[:8], seq(0, 8))
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(got, want); d > 1e-4 {
		t.Errorf("logits after refused steps differ from a clean run by %g", d)
	}
}

// TestRealOpenErrors: what the library says when a program and its config
// do not fit, and that ExecuTorch's own log reaches the message.
func TestRealOpenErrors(t *testing.T) {
	e := realEngine(t)
	ctx := context.Background()
	cfg := fixtureConfig(t, fixtures.Llama3)
	bad := *cfg
	bad.Layers = slices.Clone(cfg.Layers)
	bad.Layers[1].KVHeads++
	for _, c := range []struct {
		name string
		path string
		cfg  *kvcache.Config
		msg  string
	}{
		{"kv_heads", fixtures.PTE(fixtures.Llama3), &bad, "layer 1: the cache config says kv_heads " + strconv.Itoa(bad.Layers[1].KVHeads)},
		{"off-graph without config", fixtures.PTE(fixtures.Llama3), nil, "the program is off-graph (get_n_caches = "},
		{"in-graph with config", fixtures.PTE(fixtures.InGraph), cfg, "publishes no off-graph cache layout"},
	} {
		_, err := e.Open(ctx, c.path, c.cfg)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	// The in-graph program opens without a config, or (a library without a
	// kernel library) says which operator is missing, never that it needs
	// a cache config.
	if s, err := e.Open(ctx, fixtures.PTE(fixtures.InGraph), nil); err != nil {
		if !strings.Contains(err.Error(), "operator this library was built without") || strings.Contains(err.Error(), "cache config") {
			t.Errorf("in-graph open: %v", err)
		}
	} else {
		s.Close()
	}
	// A truncated program: ExecuTorch's logged reason is in the message.
	b, err := os.ReadFile(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pte")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e.Open(ctx, cut, cfg)
	if !errors.Is(err, ErrLoad) || !strings.Contains(err.Error(), "| runtime log: ") {
		t.Errorf("truncated program: %v, want a load error carrying ExecuTorch's log", err)
	}
}

func TestRealDevice(t *testing.T) {
	e := realEngine(t)
	d, err := e.DeviceInfo()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"darwin": "metal"}[runtime.GOOS]
	if want == "" {
		want = d.Kind // cpu or cuda, by build; checked below
		if d.Kind != "cpu" && d.Kind != "cuda" {
			t.Errorf("device kind %q", d.Kind)
		}
	}
	if d.Kind != want || d.Name == "" || (d.Kind != "cpu" && d.MemoryBytes <= 0) {
		t.Errorf("device %+v", d)
	}
	t.Logf("device: %+v", d)
}
