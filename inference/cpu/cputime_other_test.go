//go:build !linux

package cpu

import "time"

// threadCPU is not measured here (0: the benchmarks leave the metric out).
func threadCPU() time.Duration { return 0 }
