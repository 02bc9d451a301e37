//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"math"
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
