//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// wantLogit is the fake runner's logit for token id at position pos.
func wantLogit(id, pos int64, v int) float32 {
	return float32(id*100+pos) + float32(v)/1000
}

func checkRow(t *testing.T, row []float32, id, pos int64) {
	t.Helper()
	for v, got := range row {
		if want := wantLogit(id, pos, v); got != want {
			t.Fatalf("logit[%d] for id %d at %d = %v, want %v", v, id, pos, got, want)
		}
	}
}

func newEngine(t *testing.T, lib string) *Engine {
	t.Helper()
	e, err := New(Options{Library: lib})
	if err != nil {
		t.Fatal(err)
	}
	// Sessions parked by other tests' engines on the same library would
	// otherwise show in this test's handle counts.
	me := e.(*Engine)
	if err := me.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { me.CloseIdle() })
	return me
}

func testConfig() *kvcache.Config {
	return &kvcache.Config{Capacity: 32, InitialCapacity: 4, DType: kvcache.BFloat16, MaxWrite: 4,
		Layers: []kvcache.Layer{
			{Kind: kvcache.Flat, KVHeads: 2, HeadDim: 8},
			{Kind: kvcache.Ring, Window: 4, KVHeads: 1, HeadDim: 16},
			{Kind: kvcache.Flat, KVHeads: 3, HeadDim: 4},
		}}
}

func seq(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

func TestMarshalsConfig(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		x := loadExtras(t, e.LibraryPath())
		cfg := testConfig()
		s, err := e.Open(context.Background(), writeProgram(t, "vocab=16"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ms := s.(*Session)
		var got CConfig
		layers := make([]CLayer, 8)
		var n int32
		if st := x.lastConfig(&got, &layers[0], int32(len(layers)), &n); st != 0 {
			t.Fatalf("fake_last_config status %d", st)
		}
		wantC := CConfig{Capacity: 32, InitialCapacity: 4, KVDType: 15, MaxWrite: 4}
		wantL := []CLayer{{0, 0, 2, 8}, {1, 4, 1, 16}, {0, 0, 3, 4}}
		if got != wantC {
			t.Errorf("library received %+v, want %+v", got, wantC)
		}
		if int(n) != len(wantL) {
			t.Fatalf("library received %d layers, want %d", n, len(wantL))
		}
		for i := range wantL {
			if layers[i] != wantL[i] {
				t.Errorf("layer %d: library received %+v, want %+v", i, layers[i], wantL[i])
			}
		}
		// The session keeps its own copy of the config.
		cfg.Layers[0].KVHeads = 99
		if ms.cfg.Layers[0].KVHeads != 2 {
			t.Error("session shares the caller's config")
		}
	})
}

func TestForwardLogitsAndLength(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		ctx := context.Background()
		s, err := e.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Vocab() != 16 || s.Capacity() != 32 || s.Len() != 0 {
			t.Fatalf("vocab %d capacity %d len %d, want 16 32 0", s.Vocab(), s.Capacity(), s.Len())
		}
		ids := []int64{3, 5, 7, 9}
		got, err := s.Forward(ctx, ids, seq(0, 4))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 16 {
			t.Fatalf("Forward returned %d logits, want 16", len(got))
		}
		checkRow(t, got, 9, 3)
		if s.Len() != 4 {
			t.Errorf("Len after 4 tokens = %d", s.Len())
		}
		all, err := s.ForwardAll(ctx, []int64{1, 2}, seq(4, 2))
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 32 {
			t.Fatalf("ForwardAll returned %d logits, want 32", len(all))
		}
		checkRow(t, all[:16], 1, 4)
		checkRow(t, all[16:], 2, 5)
		if s.Len() != 6 || !s.CanExtend(26) || s.CanExtend(27) || s.CanExtend(-1) {
			t.Errorf("Len %d CanExtend(26) %v CanExtend(27) %v", s.Len(), s.CanExtend(26), s.CanExtend(27))
		}
		if err := s.Rewind(5); err != nil {
			t.Fatal(err)
		}
		if s.Len() != 5 {
			t.Errorf("Len after rewind = %d, want 5", s.Len())
		}
		if err := s.Clear(); err != nil || s.Len() != 0 {
			t.Errorf("Clear: %v, Len %d", err, s.Len())
		}
		m := s.Memory()
		if m.ActiveBytes <= 0 || m.PeakBytes < m.ActiveBytes {
			t.Errorf("memory %+v: want active > 0 and peak ≥ active", m)
		}
		if want := kvPoolBytes(testConfig(), 6); m.KVBytes != want || want == 0 {
			t.Errorf("KVBytes = %d, want %d", m.KVBytes, want)
		}
	})
}

func TestLibraryErrorsCarryMessages(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		ctx := context.Background()
		s, err := e.Open(ctx, writeProgram(t, "vocab=16 poison=13"), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, from := range []int{0, 4} { // steps of max_write
			if _, err := s.Forward(ctx, seq(from, 4), seq(from, 4)); err != nil {
				t.Fatal(err)
			}
		}

		_, err = s.Forward(ctx, []int64{1}, []int64{32})
		assertErr(t, err, engine.ErrCacheFull, StatusCacheFull, "position 32 is beyond capacity 32")

		err = s.Rewind(9)
		assertErr(t, err, engine.ErrRewindRefused, StatusRewindRefused, "cannot rewind from 8 to 9")
		// The ring (window 4, 4+4-1 rows) holds positions 1..7: a next step
		// at 3 would need 0..2.
		err = s.Rewind(3)
		assertErr(t, err, engine.ErrRewindRefused, StatusRewindRefused, "sliding-window cache")
		if err := s.Rewind(4); err != nil {
			t.Errorf("rewind to the ring's floor: %v", err)
		}

		_, err = s.Forward(ctx, []int64{13}, []int64{4})
		assertErr(t, err, nil, StatusExecute, "Error::DelegateInvalidHandle (0x32)")
		_, err = s.Forward(ctx, []int64{16}, []int64{4})
		assertErr(t, err, nil, StatusInvalidArgument, "token id 16 is outside the vocabulary")
		if s.Len() != 4 {
			t.Errorf("failed steps changed the length to %d", s.Len())
		}

		if _, err := s.Forward(ctx, []int64{1, 2}, []int64{4}); err == nil {
			t.Error("mismatched ids and positions accepted")
		}
		if _, err := s.Forward(ctx, nil, nil); err == nil {
			t.Error("empty step accepted")
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Forward(cctx, []int64{1}, []int64{4}); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled forward: %v", err)
		}
	})
}

func assertErr(t *testing.T, err, sentinel error, st Status, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v (%q)", st, msg)
	}
	var le *Error
	if !errors.As(err, &le) || le.Status != st {
		t.Fatalf("error %v: want a library error with status %v", err, st)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("error %v does not wrap %v", err, sentinel)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q does not carry the library's message %q", err, msg)
	}
}

func TestOpenErrors(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		ctx := context.Background()
		_, err := e.Open(ctx, writeProgram(t, "vocab=16 reject"), testConfig())
		assertErr(t, err, nil, StatusLoad, "DelegateInvalidCompatibility")

		notPTE := filepath.Join(t.TempDir(), "x.pte")
		os.WriteFile(notPTE, []byte("garbage"), 0o644)
		_, err = e.Open(ctx, notPTE, testConfig())
		assertErr(t, err, nil, StatusLoad, "Error::InvalidProgram")

		_, err = e.Open(ctx, filepath.Join(t.TempDir(), "missing.pte"), testConfig())
		assertErr(t, err, nil, StatusLoad, "missing.pte")

		// An off-graph program opened without a config fails in the library.
		_, err = e.Open(ctx, writeProgram(t, "vocab=16"), nil)
		assertErr(t, err, ErrInvalidArgument, StatusInvalidArgument, "open it with a cache config")

		// The library checks what it receives, whatever Go sent.
		p, err := e.lib.openProgram(writeProgram(t, "vocab=16"))
		if err != nil {
			t.Fatal(err)
		}
		defer e.lib.closeProgram(p)
		good := []CLayer{{0, 0, 2, 8}}
		for _, c := range []struct {
			cfg    CConfig
			layers []CLayer
			msg    string
		}{
			{CConfig{Capacity: 0, KVDType: 15}, good, "capacity 0"},
			{CConfig{Capacity: 8, InitialCapacity: -1, KVDType: 15}, good, "initial capacity -1"},
			{CConfig{Capacity: 8, KVDType: 15, MaxWrite: -2}, good, "max_write -2"},
			{CConfig{Capacity: 8, KVDType: 7}, good, "kv dtype 7"},
			{CConfig{Capacity: 8, KVDType: 15}, nil, "layers"},
			{CConfig{Capacity: 8, KVDType: 15}, []CLayer{{1, 0, 2, 8}}, "layer 0: kind 1, window 0"},
			{CConfig{Capacity: 8, KVDType: 15}, []CLayer{{0, 0, 2, 8}, {0, 4, 2, 8}}, "layer 1: kind 0, window 4"},
			{CConfig{Capacity: 8, KVDType: 15}, []CLayer{{2, 0, 2, 8}}, "layer 0: kind 2"},
			{CConfig{Capacity: 8, KVDType: 15}, []CLayer{{0, 0, 0, 8}}, "kv_heads 0"},
		} {
			cfg := c.cfg
			_, err := e.lib.openSession(p, &cfg, c.layers)
			assertErr(t, err, nil, StatusInvalidArgument, c.msg)
		}
		_, err = e.lib.openSession(p, nil, good)
		assertErr(t, err, nil, StatusInvalidArgument, "layers given without a cache config")

		// A bad config never reaches the library.
		bad := testConfig()
		bad.Layers[1].Window = 0
		if _, err := e.Open(ctx, writeProgram(t, "vocab=16"), bad); err == nil || !strings.Contains(err.Error(), "cache 1") {
			t.Errorf("bad config: %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Open(cctx, writeProgram(t, "vocab=16"), testConfig()); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled open: %v", err)
		}
	})
}

func TestInGraphSession(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		ctx := context.Background()
		s, err := e.Open(ctx, writeProgram(t, "vocab=8 ingraph lastonly maxctx=10"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Capacity() != 10 {
			t.Errorf("in-graph capacity %d, want the program's 10", s.Capacity())
		}
		got, err := s.Forward(ctx, []int64{1, 2, 3}, seq(0, 3))
		if err != nil {
			t.Fatal(err)
		}
		checkRow(t, got, 3, 2)
		// One token: the last row is every row.
		one, err := s.ForwardAll(ctx, []int64{4}, []int64{3})
		if err != nil {
			t.Fatal(err)
		}
		checkRow(t, one, 4, 3)
		_, err = s.ForwardAll(ctx, []int64{4, 5}, []int64{4, 5})
		assertErr(t, err, engine.ErrUnsupported, StatusUnsupported, "returns 1 logits rows for 2 tokens")
		if s.Len() != 6 {
			t.Errorf("Len %d after a step whose rows were unavailable, want 6 (the step ran)", s.Len())
		}
		assertErr(t, s.Rewind(1), engine.ErrUnsupported, StatusUnsupported, "in-graph program cannot rewind")
		assertErr(t, s.Clear(), engine.ErrUnsupported, StatusUnsupported, "cannot clear")
		if m := s.Memory(); m.KVBytes != 0 {
			t.Errorf("in-graph KVBytes %d", m.KVBytes)
		}
	})
}

func TestHandleLifetime(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		x := loadExtras(t, e.LibraryPath())
		ctx := context.Background()
		before := x.live()
		s, err := e.Open(ctx, writeProgram(t, "vocab=4"), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		if got := x.live(); got != before+1 {
			t.Errorf("live handles after Open = %d, want %d (the program is closed once the session is open)", got, before+1)
		}
		stale := s.(*Session).h
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if got := x.live(); got != before+1 || e.Idle() != 1 {
			t.Errorf("live handles after Close = %d, idle %d; want %d, 1 (parked for reuse)", got, e.Idle(), before+1)
		}
		if err := e.CloseIdle(); err != nil {
			t.Fatal(err)
		}
		if got := x.live(); got != before || e.Idle() != 0 {
			t.Errorf("live handles after CloseIdle = %d, idle %d; want %d, 0", got, e.Idle(), before)
		}
		_, err = s.Forward(ctx, []int64{1}, []int64{0})
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Forward after Close: %v", err)
		}
		assertErr(t, s.Rewind(0), engine.ErrClosed, StatusClosed, "closed")
		assertErr(t, s.Clear(), engine.ErrClosed, StatusClosed, "closed")
		if s.Len() != 0 || s.CanExtend(1) || s.Memory() != (engine.Memory{}) {
			t.Error("a closed session reports state")
		}

		// The library itself refuses a stale handle instead of using it.
		l := e.lib
		_, err = l.length(stale)
		assertErr(t, err, engine.ErrClosed, StatusClosed, "session is closed or unknown")
		buf := make([]float32, 4)
		_, err = l.forward(stale, []int64{1}, []int64{0}, buf, false, nil)
		assertErr(t, err, engine.ErrClosed, StatusClosed, "forward: session is closed or unknown")
		if err := l.closeSession(stale); err != nil {
			t.Errorf("closing a stale handle: %v", err)
		}
		_, err = l.vocab(programHandle(stale))
		assertErr(t, err, engine.ErrClosed, StatusClosed, "program is closed or unknown")
		_, err = l.openSession(programHandle(12345), nil, nil)
		assertErr(t, err, engine.ErrClosed, StatusClosed, "program is closed or unknown")
		// Zero handles never reach the library.
		_, err = l.length(0)
		assertErr(t, err, engine.ErrClosed, StatusClosed, "session is closed")
	})
}

func TestConcurrentSessions(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		x := loadExtras(t, e.LibraryPath())
		before := x.live()
		prog := writeProgram(t, "vocab=32")
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				s, err := e.Open(ctx, prog, testConfig())
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				for i := 0; i < 30; i++ {
					runtime.Gosched()
					id := int64(g)
					got, err := s.Forward(ctx, []int64{id}, []int64{int64(i)})
					if err != nil {
						errs <- err
						return
					}
					if got[5] != wantLogit(id, int64(i), 5) {
						errs <- fmt.Errorf("session %d step %d: logit %v", g, i, got[5])
						return
					}
					// Errors are per thread: each goroutine must read its own.
					_, err = s.Forward(ctx, []int64{1}, []int64{int64(100 + g)})
					if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("position %d is beyond", 100+g)) {
						errs <- fmt.Errorf("session %d: got error %v, want its own", g, err)
						return
					}
				}
				if s.Len() != 30 {
					errs <- fmt.Errorf("session %d: Len %d", g, s.Len())
				}
			}(g)
		}
		// A session closed while other goroutines use it.
		shared, err := e.Open(ctx, prog, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					// Positions race between the goroutines: a step that does
					// not continue the cache is refused, which is fine here.
					_, err := shared.Forward(ctx, []int64{2}, []int64{int64(shared.Len())})
					if err != nil && !errors.Is(err, engine.ErrClosed) && !errors.Is(err, ErrInvalidArgument) &&
						!errors.Is(err, engine.ErrCacheFull) {
						errs <- err
						return
					}
					shared.Len()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.Gosched()
			shared.Close()
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		shared.Close()
		e.CloseIdle()
		if got := x.live(); got != before {
			t.Errorf("live handles after all closed = %d, want %d", got, before)
		}
	})
}

func TestUnsupportedAllRowsStillCountsTheStep(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		ctx := context.Background()
		s, err := e.Open(ctx, writeProgram(t, "vocab=8 lastonly"), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Forward(ctx, seq(1, 4), seq(0, 4)); err != nil {
			t.Fatal(err)
		}
		_, err = s.ForwardAll(ctx, []int64{1, 2}, []int64{4, 5})
		assertErr(t, err, engine.ErrUnsupported, StatusUnsupported, "all rows are not available")
		if s.Len() != 6 {
			t.Errorf("Len %d, want 6", s.Len())
		}
		if got, want := s.Memory().KVBytes, kvPoolBytes(testConfig(), 6); got != want || want == kvPoolBytes(testConfig(), 4) {
			t.Errorf("KVBytes %d, want %d (pools grown past the initial 4 rows)", got, want)
		}
	})
}

// TestLenFollowsTheLibrary: Session.Len answers from the session's own
// record of the length (no call into the library per step); it must agree
// with the library's after steps, refused and accepted rewinds, a clear,
// refused steps and a step that failed inside the runtime (after which the
// library resyncs its cache).
func TestLenFollowsTheLibrary(t *testing.T) {
	eachLib(t, func(t *testing.T, lib string) {
		e := newEngine(t, lib)
		ctx := context.Background()
		s, err := e.Open(ctx, writeProgram(t, "vocab=16 poison=7"), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ms := s.(*Session)
		check := func(when string) {
			t.Helper()
			want, err := ms.lib.length(ms.h)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Len(); got != want {
				t.Errorf("%s: Len %d, library %d", when, got, want)
			}
		}
		check("opened")
		s.Forward(ctx, seq(1, 3), seq(0, 3))
		check("prefill of 3")
		s.Forward(ctx, []int64{2}, []int64{3})
		check("a decode step")
		s.Forward(ctx, []int64{2}, []int64{9}) // off the length: refused
		check("a refused step")
		s.Forward(ctx, []int64{7}, []int64{4}) // poison: fails in the runtime
		check("a failed step")
		s.Rewind(100)
		check("a refused rewind")
		s.Rewind(2)
		check("a rewind")
		s.Clear()
		check("a clear")
		s.Forward(ctx, seq(1, 2), seq(0, 2))
		check("after the clear")
	})
}
