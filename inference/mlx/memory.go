package mlx

// Header section 4: memory.

type memoryFuncs struct {
	memory          func(active, peak *int64) int32
	memoryResetPeak func() int32
}

func (f *memoryFuncs) bind(l *library) error {
	if err := l.symbol(&f.memory, "etchat_memory"); err != nil {
		return err
	}
	return l.symbol(&f.memoryResetPeak, "etchat_memory_reset_peak")
}

// mlxMemory is MLX's process-wide active and peak memory in bytes.
func (l *library) mlxMemory() (active, peak int64, err error) {
	err = l.call("memory", func() int32 { return l.memory(&active, &peak) })
	return active, peak, err
}
