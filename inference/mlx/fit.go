package mlx

import (
	"fmt"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/pte"
)

var (
	_ engine.FitReporter      = (*Engine)(nil)
	_ engine.GenerationScoper = (*Session)(nil)
)

// MemoryLimits is the device's working set as the library reported it when
// the device came up (zero for a library that cannot say).
func (e *Engine) MemoryLimits() MemoryLimits { return e.lib.limits }

// SharedWeights is the library's report on the weight copies its sessions
// share; ok is false for a library without the report.
func (e *Engine) SharedWeights() (w SharedWeights, ok bool, err error) {
	return e.lib.sharedWeightsReport()
}

// Fit is the model at path with a KV cache of cacheBytes against the
// device's working set: what the app's library shows before loading, and
// what Open refuses when it does not fit.
func (e *Engine) Fit(path string, cacheBytes int64) (engine.Fit, error) {
	f, err := pte.Open(path)
	if err != nil {
		return engine.Fit{}, err
	}
	defer f.Close()
	return e.fit(f.WeightBytes(), cacheBytes), nil
}

func (e *Engine) fit(weights, cache int64) engine.Fit {
	return engine.Fit{Weights: weights, Cache: cache, WorkingSet: e.lib.limits.WorkingSet,
		Source: e.lib.limits.Source, Device: e.lib.dev.Kind}
}

// checkFit refuses, before the library loads anything, a model whose
// weights plus its cache at full capacity exceed the working set. The
// cache is counted at its capacity, not its initial size: the pools grow
// to it as the conversation does.
func (e *Engine) checkFit(path string, weights int64, cfg *kvcache.Config) error {
	cache, capacity := int64(0), 0
	if cfg != nil {
		cache, capacity = kvPoolBytes(cfg, cfg.Capacity), cfg.Capacity
	}
	f := e.fit(weights, cache)
	if f.Fits() {
		return nil
	}
	return fmt.Errorf("mlx: %w", &engine.MemoryFitError{Model: path, Capacity: capacity, Fit: f})
}

// BeginGeneration wires the working set for the length of a generation
// (library.beginWired: effective on Metal with macOS 15 or later only).
func (s *Session) BeginGeneration() (end func()) {
	return s.lib.beginWired()
}
