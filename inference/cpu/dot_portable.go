//go:build (!amd64 && !arm64) || purego

package cpu

// The float kernels in Go where there is no assembly for them (arm64's
// NEON versions: dot_arm64.go).

func dotF32(a, b []float32) float32 { return dotF32Go(a, b) }

func dotBF16(x []float32, w []uint16) float32 { return dotBF16Go(x, w) }

func axpy(y, x []float32, a float32) { axpyGo(y, x, a) }
