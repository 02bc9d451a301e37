package engine

import "fmt"

// Fit is whether a model fits the memory a device lets it use: its weights
// plus its KV cache at the chosen capacity, against the device's working
// set (on Metal max_recommended_working_set_size, the GPU's budget; on the
// CPU and CUDA MLX's memory limit). WorkingSet 0 means the engine cannot
// say, and every model fits.
type Fit struct {
	Weights    int64  // the weights' bytes
	Cache      int64  // the KV cache's bytes at the chosen capacity
	WorkingSet int64  // the device's working set; 0 = unknown
	Source     string // where WorkingSet comes from, as the engine names it
	Device     string // "metal", "cuda", "cpu"
}

// Need is the bytes the model needs: weights plus cache.
func (f Fit) Need() int64 { return f.Weights + f.Cache }

// Known reports whether the device's working set is known.
func (f Fit) Known() bool { return f.WorkingSet > 0 }

// Fits reports whether the model fits (always, when the working set is
// unknown).
func (f Fit) Fits() bool { return !f.Known() || f.Need() <= f.WorkingSet }

// String is the fit on one line, for a library row or a log: "1.2 GiB of
// 21.3 GiB" (or the need alone when the working set is unknown).
func (f Fit) String() string {
	if !f.Known() {
		return GiB(f.Need()) + " needed"
	}
	return GiB(f.Need()) + " of " + GiB(f.WorkingSet)
}

// GiB formats a byte count in GiB with one decimal (MiB below 1 GiB).
func GiB(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// MemoryFitError refuses, before anything is loaded, a model whose weights
// plus cache exceed the device's working set: loading it would page (a Mac
// swaps its GPU memory, and the whole machine slows) or fail midway. Front
// ends turn it into advice with errors.As.
type MemoryFitError struct {
	Model    string // the .pte's path
	Capacity int    // the KV capacity the cache was sized for
	Fit      Fit
}

func (e *MemoryFitError) Error() string {
	f := e.Fit
	return fmt.Sprintf("%s does not fit the %s device's memory: it needs %s (weights %s + KV cache %s at capacity %d) but the working set is %s (%s)",
		e.Model, f.Device, GiB(f.Need()), GiB(f.Weights), GiB(f.Cache), e.Capacity, GiB(f.WorkingSet), f.Source)
}

// GenerationScoper is implemented by sessions that hold something for the
// length of one generation (the native engine wires its memory on Metal).
// inference.Generate calls BeginGeneration before the prompt and the
// function it returns when the generation ends, however it ends.
type GenerationScoper interface {
	BeginGeneration() (end func())
}

// FitReporter is implemented by engines that know the memory a model needs
// against what the device lets it use, before loading it (the app's
// library shows it; the native engine refuses what does not fit).
type FitReporter interface {
	// Fit is the model at path with a cache sized cacheBytes.
	Fit(path string, cacheBytes int64) (Fit, error)
}
