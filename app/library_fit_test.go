package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"etchat/inference/engine"
	"etchat/internal/fixtures"
)

// fakeFitEngine is a named fake at the engine boundary: an engine that
// reports a fixed working set (the native engine's Fit is tested against
// the real library and the fake runner in inference/mlx).
type fakeFitEngine struct {
	engine.Engine
	workingSet int64
	asked      []int64
}

func (f *fakeFitEngine) Fit(path string, cache int64) (engine.Fit, error) {
	f.asked = append(f.asked, cache)
	return engine.Fit{Weights: 1 << 20, Cache: cache, WorkingSet: f.workingSet, Source: "memory_limit", Device: "metal"}, nil
}

type fitOpener struct {
	Opener
	e   engine.Engine
	err error
}

func (o fitOpener) OpenEngine(string) (engine.Engine, error) { return o.e, o.err }

// TestLibraryShowsFit: once the native engine can say, the details pane
// says whether the selected model with its cache at the chosen capacity
// fits the device's working set, and follows the capacity; without an
// engine that can say, the pane is as before.
func TestLibraryShowsFit(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, nil)
	lib.Add(ctx, modelCopy(t, fixtures.Llama3, true))
	before, _ := lib.Details()

	fe := &fakeFitEngine{workingSet: 64 << 20}
	ready := make(chan struct{}, 1)
	lib.SetFit(nativeFit(fitOpener{Opener: b.Opener, e: fe}, func() { ready <- struct{}{} }))
	if d, _ := lib.Details(); d.Memory != before.Memory { // the engine is still loading
		t.Errorf("before the engine is up: %q", d.Memory)
	}
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine never came up")
	}
	d, _ := lib.Details()
	cfg, err := estimateConfig(inspect(t, modelCopy(t, fixtures.Llama3, true)), "", "bf16")
	if err != nil {
		t.Fatal(err)
	}
	_, _, full := layerRows(cfg)
	if len(fe.asked) == 0 || fe.asked[len(fe.asked)-1] != full {
		t.Errorf("asked for caches %v, want the full cache %d", fe.asked, full)
	}
	if !strings.HasPrefix(d.Memory, before.Memory) || !strings.Contains(d.Memory, "of the metal working set's 64 MiB, fits") {
		t.Errorf("memory line %q", d.Memory)
	}
	fe.workingSet = 1 << 20
	lib.SetEstimate("128", "fp32")
	if d, _ := lib.Details(); !strings.Contains(d.Memory, "does not fit") {
		t.Errorf("a model over the working set: %q", d.Memory)
	}

	// No engine (the library does not load): no fit, the pane as before.
	lib2 := NewLibrary(b.Inspector, nil)
	lib2.Add(ctx, modelCopy(t, fixtures.Llama3, true))
	lib2.SetFit(nativeFit(fitOpener{Opener: b.Opener, err: errors.New("no library")}, func() { t.Error("ready without an engine") }))
	for range 3 {
		if d, _ := lib2.Details(); d.Memory != before.Memory {
			t.Errorf("without an engine: %q", d.Memory)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
