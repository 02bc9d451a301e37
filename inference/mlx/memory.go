package mlx

// Header section 4: memory. The limits, the cache clear, the wired limit
// and the shared-weights report are optional (added without an ABI version
// bump): a library without them loads, with no working set known, nothing
// cleared or wired, and no sharing report.

import "sync"

type memoryFuncs struct {
	memory          func(active, peak *int64) int32
	memoryResetPeak func() int32

	memoryLimits  func(out *CMemoryLimits) int32           // optional
	clearCache    func() int32                             // optional
	setWired      func(bytes int64, previous *int64) int32 // optional
	sharedWeights func(out *CSharedWeights) int32          // optional
}

// CMemoryLimits mirrors etchat_memory_limits.
type CMemoryLimits struct {
	WorkingSetBytes int64
	Source          [64]byte
}

// CSharedWeights mirrors etchat_shared_weights.
type CSharedWeights struct {
	Models, Buffers, Bytes int64
}

// MemoryLimits is the memory a model may use on the device, as MLX reports
// it: Metal's max_recommended_working_set_size, or MLX's memory limit on
// the CPU (80% of RAM) and CUDA (95% of the card's memory). Source names
// which; WorkingSet is 0 where the library cannot say (an older library).
type MemoryLimits struct {
	WorkingSet int64
	Source     string
}

// SharedWeights is the library's report on the weight copies its sessions
// share: models with copies alive, buffers, bytes held.
type SharedWeights struct {
	Models, Buffers, Bytes int64
}

func (f *memoryFuncs) bind(l *library) error {
	if err := l.symbol(&f.memory, "etchat_memory"); err != nil {
		return err
	}
	if err := l.symbol(&f.memoryResetPeak, "etchat_memory_reset_peak"); err != nil {
		return err
	}
	for _, o := range []struct {
		fptr any
		name string
	}{
		{&f.memoryLimits, "etchat_memory_limits_get"},
		{&f.clearCache, "etchat_clear_cache"},
		{&f.setWired, "etchat_set_wired_limit"},
		{&f.sharedWeights, "etchat_shared_weights_get"},
	} {
		if l.has(o.name) {
			if err := l.symbol(o.fptr, o.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// mlxMemory is MLX's process-wide active and peak memory in bytes.
func (l *library) mlxMemory() (active, peak int64, err error) {
	err = l.call("memory", func() int32 { return l.memory(&active, &peak) })
	return active, peak, err
}

// readLimits asks the library for the working set (zero without the call).
func (l *library) readLimits() (MemoryLimits, error) {
	if l.memoryLimits == nil {
		return MemoryLimits{}, nil
	}
	var c CMemoryLimits
	if err := l.call("memory_limits", func() int32 { return l.memoryLimits(&c) }); err != nil {
		return MemoryLimits{}, err
	}
	return MemoryLimits{WorkingSet: c.WorkingSetBytes, Source: cString(c.Source[:])}, nil
}

// dropCache empties MLX's buffer cache, where the library can.
func (l *library) dropCache() error {
	if l.clearCache == nil {
		return nil
	}
	return l.call("clear_cache", func() int32 { return l.clearCache() })
}

// sharedWeightsReport is the library's sharing report; ok is false for a
// library without it.
func (l *library) sharedWeightsReport() (SharedWeights, bool, error) {
	if l.sharedWeights == nil {
		return SharedWeights{}, false, nil
	}
	var c CSharedWeights
	err := l.call("shared_weights", func() int32 { return l.sharedWeights(&c) })
	return SharedWeights(c), err == nil, err
}

// wiring counts the generations in flight, so the wired limit is set when
// the first starts and restored when the last ends.
type wiring struct {
	mu       sync.Mutex
	n        int
	previous int64
}

// beginWired sets MLX's wired limit to the working set for the length of a
// generation (mlx-lm does the same): on Metal with macOS 15's residency
// sets the model's memory then stays resident; MLX does nothing with it on
// macOS 14, the CPU or CUDA. The returned function restores the previous
// limit when the last generation in flight ends.
func (l *library) beginWired() func() {
	if l.setWired == nil || l.limits.WorkingSet <= 0 {
		return func() {}
	}
	l.wired.mu.Lock()
	defer l.wired.mu.Unlock()
	if l.wired.n == 0 {
		var prev int64
		if err := l.call("set_wired_limit", func() int32 { return l.setWired(l.limits.WorkingSet, &prev) }); err != nil {
			return func() {} // nothing was set: nothing to restore
		}
		l.wired.previous = prev
	}
	l.wired.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.wired.mu.Lock()
			defer l.wired.mu.Unlock()
			l.wired.n--
			if l.wired.n == 0 {
				prev := l.wired.previous
				_ = l.call("set_wired_limit", func() int32 { return l.setWired(prev, nil) }) // restoring; a failure leaves MLX's limit, which only affects residency
			}
		})
	}
}
