//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"etchat/inference/kvcache"
)

// flatConfig is testCaches' layout, all flat, with room for long steps.
func flatConfig(capacity int) *kvcache.Config {
	return &kvcache.Config{Capacity: capacity, DType: kvcache.BFloat16,
		Layers: []kvcache.Layer{
			{Kind: kvcache.Flat, KVHeads: 2, HeadDim: 8},
			{Kind: kvcache.Flat, KVHeads: 1, HeadDim: 16},
			{Kind: kvcache.Flat, KVHeads: 3, HeadDim: 4},
		}}
}

// fakeLogit is the fake backends' float32 logit.
func fakeLogit(id, pos int64, v int) float32 { return float32(id*100+pos) + float32(v)/1000 }

func forwards(log []string) []string {
	var out []string
	for _, l := range log {
		if strings.HasPrefix(l, "forward") {
			out = append(out, l)
		}
	}
	return out
}

// A step longer than MaxStep reaches the library as calls of at most
// MaxStep tokens, off-graph and in-graph (which inference's Prefill feeds
// whole), with the logits one call would have given.
func TestLongStepIsCut(t *testing.T) {
	e := newEngine(t, abiLayerLibWith(t, "steps"))
	x := loadExtras(t, e.LibraryPath())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name, spec string
		cfg        *kvcache.Config
	}{
		{"offgraph", "vocab=1024", flatConfig(1024)},
		{"ingraph", "vocab=1024 maxctx=1024 ingraph", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := e.Open(ctx, writeProgram(t, c.spec), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			x.log()
			got, err := s.Forward(ctx, seq(0, 600), seq(0, 600))
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprint([]string{"forward_256", "forward_256", "forward_88"})
			if f := fmt.Sprint(forwards(x.log())); f != want {
				t.Errorf("calls %s, want %s", f, want)
			}
			for v, l := range got {
				if l != fakeLogit(599, 599, v) {
					t.Fatalf("logit %d = %v, want %v", v, l, fakeLogit(599, 599, v))
				}
			}
			if s.Len() != 600 {
				t.Errorf("Len %d after 600 tokens", s.Len())
			}
			all, err := s.ForwardAll(ctx, seq(600, 300), seq(600, 300))
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 300*1024 {
				t.Fatalf("%d logits for 300 rows of 1024", len(all))
			}
			for _, r := range []int{0, 255, 256, 299} {
				if l := all[r*1024+3]; l != fakeLogit(int64(600+r), int64(600+r), 3) {
					t.Errorf("row %d: %v, want %v", r, l, fakeLogit(int64(600+r), int64(600+r), 3))
				}
			}
		})
	}
}

// Cancelling stops the wait at once, even inside a native call that
// sleeps: the session stays busy until the call returns, and is then
// rewound to its length before the step, so the next step continues it.
func TestCancelStopsWaitingOnANativeStep(t *testing.T) {
	e := newEngine(t, abiLayerLibWith(t, "steps"))
	x := loadExtras(t, e.LibraryPath())
	s, err := e.Open(context.Background(), writeProgram(t, "vocab=1024 sleep=400"), flatConfig(1024))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Forward(context.Background(), seq(0, 3), seq(0, 3)); err != nil {
		t.Fatal(err)
	}
	x.log()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = s.Forward(ctx, seq(3, 2), seq(3, 2))
	waited := time.Since(t0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled step: %v, want the context's error", err)
	}
	if waited > 300*time.Millisecond {
		t.Errorf("waited %v for a cancelled 400 ms call", waited)
	}
	if n := s.Len(); n != 3 { // blocks until the call returned and was undone
		t.Errorf("Len %d after the cancelled step, want 3", n)
	}
	if log := x.log(); !slices.Contains(log, "forward_2") || !slices.Contains(log, "rewind") {
		t.Errorf("calls %v: want the step to have run and been rewound", log)
	}
	got, err := s.Forward(context.Background(), seq(3, 1), seq(3, 1))
	if err != nil {
		t.Fatalf("the next step at the old length: %v", err)
	}
	if got[0] != fakeLogit(3, 3, 0) {
		t.Errorf("logit %v", got[0])
	}

	// A long in-graph step stops between its calls.
	g, err := e.Open(context.Background(), writeProgram(t, "vocab=1024 maxctx=2048 ingraph sleep=100"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	x.log()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel2()
	if _, err := g.Forward(ctx2, seq(0, 1024), seq(0, 1024)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled in-graph step: %v", err)
	}
	g.Len() // wait for the call in flight
	if f := forwards(x.log()); len(f) >= 4 {
		t.Errorf("calls %v: the cancel did not stop the step between calls", f)
	}
}

// With PoisonViews (on under -race), logits kept past the next forward
// read NaN, whether they were the library's own memory (float32, read in
// place) or the session's buffer (bf16, converted); without it they are
// silently the library's next contents.
func TestPoisonedViews(t *testing.T) {
	lib := abiLayerLibWith(t, "steps")
	for _, spec := range []string{"vocab=64", "vocab=64 dtype=bf16"} {
		for _, poison := range []bool{true, false} {
			e := newEngine(t, lib)
			e.poison = poison // on by default under -race
			s, err := e.Open(context.Background(), writeProgram(t, spec), flatConfig(64))
			if err != nil {
				t.Fatal(err)
			}
			first, err := s.Forward(context.Background(), []int64{5}, []int64{0})
			if err != nil {
				t.Fatal(err)
			}
			kept := first[:4:4]
			if _, err := s.Forward(context.Background(), []int64{6}, []int64{1}); err != nil {
				t.Fatal(err)
			}
			nan := kept[0] != kept[0]
			if nan != poison {
				t.Errorf("%s, poison %v: a kept logit reads %v after the next forward", spec, poison, kept[0])
			}
			s.Close()
		}
	}
}
