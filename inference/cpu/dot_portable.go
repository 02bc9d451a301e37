//go:build (!amd64 && !arm64) || purego

package cpu

// The float kernels in Go where there is no assembly for them (arm64's
// NEON versions: dot_arm64.go).

func dotF32(a, b []float32) float32 { return dotF32Go(a, b) }

func dotBF16(x []float32, w []uint16) float32 { return dotBF16Go(x, w) }

func axpy(y, x []float32, a float32) { axpyGo(y, x, a) }

// float3x4 says float prefill runs on the 3×4 kernel (matmulRange3x4):
// not without an assembly one (dot3x4Go's fma32 is the Go twin, kept for
// the bits, not for speed), so the dot4x2 loop runs.
func float3x4() bool { return false }

func gemv(out, x []float32, w *wmat, n0, n1 int, prepped bool) bool { return false }

func dot3x4(x []float32, ldx int, w []float32, ldw, K int, out *[12]float32) {
	dot3x4Go(x, ldx, w, ldw, K, out)
}
