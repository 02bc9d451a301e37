//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// These tests run against the real C ABI layer over the fake backend: the
// rules they check live in that layer. The fake's own rewind is ExecuTorch
// SequenceCache's (refused only below length - window).

// ringConfig has a flat layer and a ring of window 8 written at most 4 at a
// time: max_write < window, where length - window is the wrong floor.
func ringConfig() *kvcache.Config {
	return &kvcache.Config{Capacity: 64, InitialCapacity: 8, DType: kvcache.Float32, MaxWrite: 4,
		Layers: []kvcache.Layer{{Kind: kvcache.Flat, KVHeads: 2, HeadDim: 8}, {Kind: kvcache.Ring, Window: 8, KVHeads: 1, HeadDim: 16}}}
}

const ringCaches = "caches=2/8,1/16"

func TestRewindEnforcesTheRingRule(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=64 "+ringCaches), ringConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	step := func(from, n int) {
		t.Helper()
		if _, err := s.Forward(ctx, seq(from, n), seq(from, n)); err != nil {
			t.Fatal(err)
		}
	}
	for from := 0; from < 20; from += 4 {
		step(from, 4)
	}
	// The ring (8+4-1 = 11 rows) holds positions 9..19; a next step at n
	// attends n-7..n-1, so n ≥ 16. ExecuTorch's length - window = 12 would
	// take 12..15 and attend overwritten cells.
	for _, n := range []int{12, 13, 15} {
		assertErr(t, s.Rewind(n), engine.ErrRewindRefused, StatusRewindRefused, "overwritten cells that length")
	}
	if err := s.Rewind(16); err != nil {
		t.Fatal(err)
	}
	// A second rewind: ExecuTorch would now allow 16-8 = 8, but the cells
	// before 9 are still gone.
	assertErr(t, s.Rewind(12), engine.ErrRewindRefused, StatusRewindRefused, "shortest rewind now 16")
	if err := s.Rewind(0); err != nil || s.Len() != 0 {
		t.Fatalf("rewind to 0: %v, Len %d", err, s.Len())
	}
	step(0, 4)
	if err := s.Rewind(1); err != nil {
		t.Errorf("after a rewind to 0 the ring holds everything again: %v", err)
	}
}

// TestRewindAgreesWithKVCache drives the library and inference/kvcache
// (the CPU engine's cache) through the same random steps and rewinds: the
// library never accepts a rewind kvcache refuses, and refuses one kvcache
// accepts only where ExecuTorch's own cache does (a ring not yet wrapped:
// its length - window check is stricter there).
func TestRewindAgreesWithKVCache(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	ctx := context.Background()
	prog := writeProgram(t, "vocab=64 "+ringCaches)
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		cfg := ringConfig()
		cfg.MaxWrite = 1 + r.IntN(8)
		s, err := e.Open(ctx, prog, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := kvcache.NewSequence(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for op := range 60 {
			if r.IntN(3) > 0 {
				n := 1 + r.IntN(cfg.MaxWrite)
				if !ref.CanExtend(n) {
					continue
				}
				from := s.Len()
				if _, err := s.Forward(ctx, seq(from, n), seq(from, n)); err != nil {
					t.Fatalf("trial %d op %d: %v", trial, op, err)
				}
				for l := range cfg.Layers {
					p, _ := ref.Plan(l, from, n)
					if l == len(cfg.Layers)-1 {
						ref.Commit(p)
					}
				}
				continue
			}
			n := r.IntN(s.Len() + 1)
			got, want := s.Rewind(n), ref.CanRewind(n)
			etRefuses := n < s.Len()-8 // SequenceCache: length - window
			switch {
			case got == nil && !want:
				t.Fatalf("trial %d op %d (max_write %d): library rewound %d→%d, kvcache refuses", trial, op, cfg.MaxWrite, ref.Len(), n)
			case got != nil && want && !etRefuses:
				t.Fatalf("trial %d op %d: library refused %d→%d that both caches accept: %v", trial, op, ref.Len(), n, got)
			case got == nil:
				if err := ref.Rewind(n); err != nil {
					t.Fatal(err)
				}
			}
			if s.Len() != ref.Len() {
				t.Fatalf("trial %d op %d: Len %d, kvcache %d", trial, op, s.Len(), ref.Len())
			}
		}
		s.Close()
	}
}

func TestForwardChecksItsStep(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=16 "+ringCaches), ringConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Forward(ctx, seq(0, 3), seq(0, 3)); err != nil {
		t.Fatal(err)
	}
	x.log()
	for _, c := range []struct {
		ids, pos []int64
		msg      string
	}{
		{[]int64{1}, []int64{4}, "position 4 at index 0: a step must continue the cache, at 3"},
		{[]int64{1}, []int64{2}, "position 2 at index 0"},
		{[]int64{1, 2}, []int64{3, 5}, "position 5 at index 1"},
		{seq(1, 5), seq(3, 5), "a step of 5 tokens exceeds max_write 4"},
	} {
		_, err := s.Forward(ctx, c.ids, c.pos)
		assertErr(t, err, ErrInvalidArgument, StatusInvalidArgument, c.msg)
	}
	if log := x.log(); slices.ContainsFunc(log, func(l string) bool { return strings.HasPrefix(l, "forward") }) {
		t.Errorf("a refused step reached the backend: %v", log)
	}
	if s.Len() != 3 {
		t.Errorf("Len %d after refused steps, want 3", s.Len())
	}
	got, err := s.Forward(ctx, []int64{9, 10, 11, 12}, seq(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, got, 12, 6)

	// A model without rings takes any step that fits.
	flat := &kvcache.Config{Capacity: 64, DType: kvcache.Float32, MaxWrite: 4,
		Layers: []kvcache.Layer{{Kind: kvcache.Flat, KVHeads: 2, HeadDim: 8}, {Kind: kvcache.Flat, KVHeads: 1, HeadDim: 16}}}
	fs, err := e.Open(ctx, writeProgram(t, "vocab=16 "+ringCaches), flat)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if _, err := fs.Forward(ctx, seq(0, 12), seq(0, 12)); err != nil {
		t.Errorf("12 tokens on a flat cache: %v", err)
	}
}

func TestOpenChecksTheLayout(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	ctx := context.Background()
	for _, c := range []struct {
		spec string
		cfg  *kvcache.Config
		msg  string
	}{
		{"vocab=16 caches=2/8,2/16", ringConfig(), "layer 1: the cache config says kv_heads 1, head_dim 16 but the program publishes 2, 16"},
		{"vocab=16 caches=2/8,1/32", ringConfig(), "layer 1: the cache config says kv_heads 1, head_dim 16 but the program publishes 1, 32"},
		{"vocab=16 caches=2/8", ringConfig(), "the cache config has 2 layers but the program publishes 1 caches"},
		{"vocab=16 ingraph", ringConfig(), "publishes no off-graph cache layout"},
		{"vocab=16 " + ringCaches, nil, "the program is off-graph (get_n_caches = 2)"},
	} {
		_, err := e.Open(ctx, writeProgram(t, c.spec), c.cfg)
		assertErr(t, err, ErrInvalidArgument, StatusInvalidArgument, c.msg)
	}
	// Windows are policy: a flat layer made a ring (or the reverse) opens.
	cfg := ringConfig()
	cfg.Layers[0].Kind, cfg.Layers[0].Window = kvcache.Ring, 4
	s, err := e.Open(ctx, writeProgram(t, "vocab=16 "+ringCaches), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// TestRuntimeLogInMessages: what ExecuTorch logs while a call fails is in
// that call's message, and only in that call's.
func TestRuntimeLogInMessages(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	ctx := context.Background()
	_, err := e.Open(ctx, writeProgram(t, "vocab=16 reject"), testConfig())
	assertErr(t, err, ErrLoad, StatusLoad, "DelegateInvalidCompatibility (0x30) (the MLX backend may reject this program, or the cache config does not match it) | runtime log: Failed to load MLX program: fake: unsupported node FooNode")
	s, err := e.Open(ctx, writeProgram(t, "vocab=16 poison=13"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Forward(ctx, []int64{13}, []int64{0})
	assertErr(t, err, ErrExecute, StatusExecute, "| runtime log: MLX execute failed: fake poison token 13")
	_, err = s.Forward(ctx, []int64{16}, []int64{0})
	assertErr(t, err, ErrInvalidArgument, StatusInvalidArgument, "outside the vocabulary")
	if strings.Contains(err.Error(), "runtime log") {
		t.Errorf("an earlier call's log leaked into %q", err)
	}
	// A step that failed inside the runtime is not parked for reuse.
	s.Close()
	if e.Idle() != 0 {
		t.Errorf("a session whose step failed in the runtime was parked")
	}
}

func TestDeviceAndMetallib(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	d, err := e.DeviceInfo()
	if err != nil || d != (DeviceInfo{Kind: "cpu", Name: "fake CPU"}) || e.Device() != "cpu" {
		t.Errorf("DeviceInfo = %+v, %v; Device %q", d, err, e.Device())
	}
	x.log()
	// The library is past its first program (other tests opened some): a
	// metallib path now comes too late and is refused.
	if _, err := e.Open(context.Background(), writeProgram(t, "vocab=4"), testConfig()); err != nil {
		t.Fatal(err)
	}
	lib := writeProgram(t, "not a metallib")
	err = configureMetallib(e.lib, []string{"/nonexistent/mlx.metallib", lib}, isFile)
	assertErr(t, err, ErrInvalidArgument, StatusInvalidArgument, "or the first program is opened")
	err = configureMetallib(e.lib, []string{"/nonexistent/mlx.metallib"}, isFile)
	if !errors.Is(err, ErrNoMetallib) || !strings.Contains(err.Error(), "/nonexistent/mlx.metallib") {
		t.Errorf("no metallib: %v", err)
	}
	if err := configureMetallib(e.lib, nil, isFile); err != nil {
		t.Errorf("no candidates (not macOS): %v", err)
	}
}

// A step that fails inside the runtime may have run some layers, whose
// ring writes overwrote cells, while the length stays where it was: the
// library counts those writes (the ring rule then refuses rewinds into
// them) and brings the runtime's cache back to the known length.
func TestFailedForwardResyncs(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=64 poison=63 "+ringCaches), ringConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for from := 0; from < 12; from += 4 {
		if _, err := s.Forward(ctx, seq(from, 4), seq(from, 4)); err != nil {
			t.Fatal(err)
		}
	}
	// The ring (11 rows) holds 1..11: a rewind to 9 would be served.
	x.log()
	_, err = s.Forward(ctx, []int64{12, 13, 63, 15}, seq(12, 4))
	assertErr(t, err, ErrExecute, StatusExecute, "poison")
	if s.Len() != 12 {
		t.Fatalf("Len %d after the failed step, want 12", s.Len())
	}
	if log := x.log(); !slices.Contains(log, "rewind") && !slices.Contains(log, "clear") {
		t.Errorf("the runtime's cache was not brought back after the failed step: %v", log)
	}
	// Had its layers written 12..15, the ring holds 5..15: a next step at 9
	// would attend 2..8.
	assertErr(t, s.Rewind(9), engine.ErrRewindRefused, StatusRewindRefused, "shortest rewind now 12")
	// The cache goes on from the known length.
	if _, err := s.Forward(ctx, seq(12, 4), seq(12, 4)); err != nil || s.Len() != 16 {
		t.Fatalf("next step after the failure: %v, Len %d", err, s.Len())
	}
}
