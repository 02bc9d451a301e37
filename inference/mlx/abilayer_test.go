//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"math"
	"runtime"
	"testing"
)

// These tests run only against the real C ABI layer (etchat_runner.cpp)
// over the fake backend: what they check lives in that layer.

// logit16 mirrors fake_backend.cpp's 16-bit logits (exact in fp16 and bf16).
func logit16(id, pos int64, v, vocab int) float32 {
	switch v {
	case vocab - 1:
		return float32(math.Inf(1))
	case vocab - 2:
		return float32(math.Ldexp(1, -20))
	}
	mag := float64(id%16) + float64(pos%16)/16
	if v%2 == 1 {
		mag = -mag
	}
	return float32(math.Ldexp(mag, v%8-4))
}

func TestHalfLogitsConvertToFloat32(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	ctx := context.Background()
	for _, dtype := range []string{"fp16", "bf16"} {
		t.Run(dtype, func(t *testing.T) {
			s, err := e.Open(ctx, writeProgram(t, "vocab=20 dtype="+dtype), testConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ids, pos := []int64{7, 0, 19}, []int64{0, 1, 2}
			all, err := s.ForwardAll(ctx, ids, pos)
			if err != nil {
				t.Fatal(err)
			}
			for r := range ids {
				for v := 0; v < 20; v++ {
					got, want := all[r*20+v], logit16(ids[r], pos[r], v, 20)
					if got != want {
						t.Fatalf("%s row %d logit %d = %v, want %v", dtype, r, v, got, want)
					}
				}
			}
			last, err := s.Forward(ctx, []int64{5, 6}, []int64{3, 4})
			if err != nil {
				t.Fatal(err)
			}
			if last[3] != logit16(6, 4, 3, 20) || last[0] != logit16(6, 4, 0, 20) {
				t.Errorf("last row %v", last[:4])
			}
		})
	}
}

func TestExceptionsBecomeErrors(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=16 throw=3 throwint=4"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Forward(ctx, []int64{3}, []int64{0})
	assertErr(t, err, nil, StatusInternal, "forward: fake backend threw")
	_, err = s.Forward(ctx, []int64{4}, []int64{0})
	assertErr(t, err, nil, StatusInternal, "forward: unknown C++ exception")
	// The library is still usable, and the failed steps did not count.
	if s.Len() != 0 {
		t.Errorf("Len %d after failed steps", s.Len())
	}
	got, err := s.Forward(ctx, []int64{5}, []int64{0})
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, got, 5, 0)
	// A successful call clears the thread's last error.
	if msg := e.lib.lastError(); msg != "" {
		t.Errorf("last error after success = %q", msg)
	}
}

// inBuf reports whether row lies inside the session's own Go buffer (a
// copy) rather than the library's output tensor (read in place).
func inBuf(s *Session, row []float32) bool {
	if len(row) == 0 || cap(s.buf) == 0 {
		return false
	}
	b := s.buf[:cap(s.buf)]
	return &row[0] == &b[0]
}

// TestLogitsReadInPlace: with etchat_session_forward_view, float32 logits
// come straight from the library's output (no copy into Go's buffer) and
// stay valid across the calls that are not a forward; 16-bit logits are
// still converted into the buffer; a library without the function is
// copied from, as before.
func TestLogitsReadInPlace(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T, lib, prog string) *Session {
		t.Helper()
		e := newEngine(t, lib)
		e.poison = false // -race poisons views through Go buffers: this test is about where logits live
		s, err := e.Open(ctx, writeProgram(t, prog), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.(*Session)
	}
	t.Run("float32", func(t *testing.T) {
		s := open(t, abiLayerLib(t), "vocab=16")
		if s.lib.sessionForwardView == nil {
			t.Fatal("the ABI layer's etchat_session_forward_view is not bound")
		}
		row, err := s.Forward(ctx, []int64{3, 5}, seq(0, 2))
		if err != nil {
			t.Fatal(err)
		}
		if inBuf(s, row) {
			t.Error("float32 logits were copied into Go's buffer")
		}
		checkRow(t, row, 5, 1)
		// Rewind, Len, CanExtend and Clear leave the output alone.
		if err := s.Rewind(1); err != nil || s.Len() != 1 || !s.CanExtend(1) {
			t.Fatalf("rewind: %v, len %d", err, s.Len())
		}
		checkRow(t, row, 5, 1)
		if err := s.Clear(); err != nil {
			t.Fatal(err)
		}
		checkRow(t, row, 5, 1)
		all, err := s.ForwardAll(ctx, []int64{1, 2, 4}, seq(0, 3))
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 48 || inBuf(s, all) {
			t.Fatalf("ForwardAll: %d logits, copied %v", len(all), inBuf(s, all))
		}
		checkRow(t, all[:16], 1, 0)
		checkRow(t, all[32:], 4, 2)
		next, err := s.Forward(ctx, []int64{9}, seq(3, 1))
		if err != nil {
			t.Fatal(err)
		}
		checkRow(t, next, 9, 3)
	})
	t.Run("bf16", func(t *testing.T) {
		s := open(t, abiLayerLib(t), "vocab=20 dtype=bf16")
		row, err := s.Forward(ctx, []int64{7}, seq(0, 1))
		if err != nil {
			t.Fatal(err)
		}
		if !inBuf(s, row) || row[3] != logit16(7, 0, 3, 20) {
			t.Errorf("bf16 logits: in the buffer %v, logit 3 = %v", inBuf(s, row), row[3])
		}
	})
	t.Run("without-view", func(t *testing.T) {
		s := open(t, compileC(t, "noview/"+LibraryName(runtime.GOOS), "fake_runner.c", "-DNO_VIEW"), "vocab=16")
		if s.lib.sessionForwardView != nil {
			t.Fatal("bound a function the library lacks")
		}
		row, err := s.Forward(ctx, []int64{3}, seq(0, 1))
		if err != nil {
			t.Fatal(err)
		}
		if !inBuf(s, row) {
			t.Error("a library without the view: logits not in Go's buffer")
		}
		checkRow(t, row, 3, 0)
	})
}
