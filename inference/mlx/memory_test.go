//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// fakeWorkingSet is the working set the "ws" variant of the fake backend
// reports (-DFAKE_WORKING_SET): testConfig's cache at its capacity of 32
// fits it, a capacity of 256 does not, and a quarter of it (the parking
// budget) holds one session grown to 30 tokens but not two.
const fakeWorkingSet = 24576

func wsLib(t *testing.T) string {
	return abiLayerLibWith(t, "ws", "-DFAKE_WORKING_SET="+strconv.Itoa(fakeWorkingSet))
}

// withCapacity is testConfig with another capacity.
func withCapacity(n int) *kvcache.Config {
	c := testConfig()
	c.Capacity = n
	return c
}

// TestFitRefusal: a model whose weights plus cache at the chosen capacity
// exceed the working set the library reports is refused before anything is
// loaded, with a typed error carrying the numbers; one that fits opens.
func TestFitRefusal(t *testing.T) {
	e := newEngine(t, wsLib(t))
	x := loadExtras(t, e.LibraryPath())
	if got := e.MemoryLimits(); got != (MemoryLimits{WorkingSet: fakeWorkingSet, Source: "memory_limit"}) {
		t.Fatalf("limits %+v", got)
	}
	ctx := context.Background()
	p := writeProgram(t, "vocab=16")
	big := withCapacity(256)
	need := kvPoolBytes(big, big.Capacity)
	if need <= fakeWorkingSet || kvPoolBytes(testConfig(), 32) > fakeWorkingSet {
		t.Fatalf("test premise: capacity 256 needs %d, 32 needs %d, working set %d", need, kvPoolBytes(testConfig(), 32), fakeWorkingSet)
	}
	x.log()
	_, err := e.Open(ctx, p, big)
	var fe *engine.MemoryFitError
	if !errors.As(err, &fe) {
		t.Fatalf("Open with a cache of %d bytes against %d: %v, want a MemoryFitError", need, fakeWorkingSet, err)
	}
	want := engine.Fit{Weights: 0, Cache: need, WorkingSet: fakeWorkingSet, Source: "memory_limit", Device: "cpu"}
	if fe.Fit != want || fe.Capacity != 256 || fe.Model != p {
		t.Errorf("refusal %+v, want %+v at capacity 256 for %s", fe, want, p)
	}
	if msg := err.Error(); !strings.Contains(msg, "capacity 256") || !strings.Contains(msg, "memory_limit") {
		t.Errorf("message lacks the numbers: %s", msg)
	}
	if log := x.log(); slices.ContainsFunc(log, func(l string) bool { return strings.HasPrefix(l, "program_open") }) {
		t.Errorf("a refused model was loaded: %v", log)
	}
	s, err := e.Open(ctx, p, testConfig())
	if err != nil {
		t.Fatalf("a model that fits: %v", err)
	}
	s.Close()
	// Fit says the same before loading (what the app's library shows).
	f, err := e.Fit(fixtures.PTE(fixtures.Llama3), need)
	if err != nil {
		t.Fatal(err)
	}
	if f.Fits() || f.WorkingSet != fakeWorkingSet || f.Weights <= 0 {
		t.Errorf("Fit of a real .pte with a %d-byte cache: %+v", need, f)
	}
}

// TestParkingBound: the parked sessions together hold at most a quarter of
// the working set; beyond it the oldest is closed even below maxParked.
func TestParkingBound(t *testing.T) {
	e := newEngine(t, wsLib(t))
	ctx := context.Background()
	p := writeProgram(t, "vocab=64")
	budget := e.lib.parkBudget()
	grown := kvPoolBytes(withCapacity(32), 30)
	small := kvPoolBytes(withCapacity(30), 3)
	if budget != fakeWorkingSet/4 || grown > budget || 2*grown <= budget || grown+small > budget {
		t.Fatalf("test premise: budget %d, a grown session %d, a small one %d", budget, grown, small)
	}
	// Parked sessions of several configs come from sessions open together
	// (an Open closes the parked sessions of other configs first).
	open := func(cfg *kvcache.Config, n int) engine.Session {
		t.Helper()
		s, err := e.Open(ctx, p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i += 4 {
			k := min(4, n-i)
			if _, err := s.Forward(ctx, seq(i, k), seq(i, k)); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	s1, s2, s3 := open(withCapacity(32), 30), open(withCapacity(31), 30), open(withCapacity(30), 3)
	huge := open(withCapacity(64), 60)
	if b := kvPoolBytes(withCapacity(64), 60); b <= budget || b > maxParkedKV {
		t.Fatalf("test premise: the huge session holds %d bytes, budget %d", b, budget)
	}
	huge.Close()
	if e.Idle() != 0 {
		t.Errorf("a session larger than the budget was parked")
	}
	s1.Close()
	if e.Idle() != 1 {
		t.Fatalf("%d parked, want the first grown session", e.Idle())
	}
	s2.Close()
	if e.Idle() != 1 {
		t.Errorf("two grown sessions (%d bytes each, budget %d): %d parked, want 1 (the oldest closed)", grown, budget, e.Idle())
	}
	s3.Close()
	if e.Idle() != 2 {
		t.Errorf("a grown and a small session (%d+%d bytes, budget %d): %d parked, want 2", grown, small, budget, e.Idle())
	}
}

// TestClearCacheOnClose: MLX's buffer cache is cleared when a session is
// closed or parked and when the parked ones are closed (CloseIdle); a
// library without section 4's optional calls works as before.
func TestClearCacheOnClose(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	ctx := context.Background()
	p := writeProgram(t, "vocab=16")
	x.log()
	s, err := e.Open(ctx, p, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Close() // parked
	log := x.log()
	if n := slices.Index(log, "clear"); n < 0 || !slices.Contains(log[n:], "clear_cache") {
		t.Errorf("parking a session: %v, want the session cleared, then MLX's cache", log)
	}
	if err := e.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	log = x.log()
	if i, j := slices.IndexFunc(log, func(l string) bool { return strings.HasPrefix(l, "session_close") }), slices.Index(log, "clear_cache"); i < 0 || j < i {
		t.Errorf("CloseIdle: %v, want the session closed, then MLX's cache cleared", log)
	}
	s, err = e.Open(ctx, p, nil) // an in-graph session is closed, not parked
	if err == nil {
		s.Close()
	}
	old := newEngine(t, compileC(t, "nomem/"+LibraryName(runtime.GOOS), "fake_runner.c", "-DNO_MEMORY_LIMITS"))
	if old.MemoryLimits() != (MemoryLimits{}) {
		t.Errorf("a library without the limits reports %+v", old.MemoryLimits())
	}
	if _, ok, err := old.SharedWeights(); ok || err != nil {
		t.Errorf("a library without the report: ok %v, err %v", ok, err)
	}
	s, err = old.Open(ctx, p, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	end := s.(*Session).BeginGeneration()
	end()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := old.CloseIdle(); err != nil {
		t.Fatal(err)
	}
}

// TestWiredForGeneration: the wired limit is the working set from the
// first generation's start to the last one's end, then what it was.
func TestWiredForGeneration(t *testing.T) {
	e := newEngine(t, wsLib(t))
	x := loadExtras(t, e.LibraryPath())
	ctx := context.Background()
	p := writeProgram(t, "vocab=16")
	a, _ := e.Open(ctx, p, testConfig())
	b, _ := e.Open(ctx, p, testConfig())
	defer a.Close()
	defer b.Close()
	x.log()
	endA := a.(*Session).BeginGeneration()
	endB := b.(*Session).BeginGeneration()
	endA()
	endA() // a second call is harmless
	if log := x.log(); !slices.Equal(log, []string{"wired_" + strconv.Itoa(fakeWorkingSet)}) {
		t.Errorf("two generations started, one ended: %v", log)
	}
	endB()
	if log := x.log(); !slices.Equal(log, []string{"wired_0"}) {
		t.Errorf("the last generation ended: %v, want the previous limit (0) back", log)
	}
}

// TestKernelCacheDirFirst: the library is given MLX's kernel cache folder
// (under the user's cache directory) before the device comes up and before
// any program, so MLX's first JIT reads it.
func TestKernelCacheDirFirst(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	want := KernelCacheDir()
	if runtime.GOOS == "linux" && want != filepath.Join(cache, "etchat", "mlx-kernels") {
		t.Fatalf("kernel cache dir %q, want etchat/mlx-kernels under %s", want, cache)
	}
	lib := abiLayerLibWith(t, "kc") // a library of its own: its load is this test's
	e := newEngine(t, lib)
	x := loadExtras(t, lib)
	log := x.log()
	i := slices.Index(log, "kernel_cache_dir_"+strings.ReplaceAll(want, " ", "_"))
	j := slices.Index(log, "device")
	if i < 0 || j < 0 || i > j {
		t.Errorf("call log %v: want kernel_cache_dir %s before device", log, want)
	}
	if e.lib.kernelCache != want {
		t.Errorf("library remembers %q", e.lib.kernelCache)
	}
	s, err := e.Open(context.Background(), writeProgram(t, "vocab=16"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := e.lib.setKernelCache(want); err == nil {
		t.Error("a kernel cache folder after the first program was accepted")
	}
}
