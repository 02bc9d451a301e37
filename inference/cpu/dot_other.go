//go:build !amd64 || purego

package cpu

var useAVX2 = false

func dotF32(a, b []float32) float32 { return dotF32Go(a, b) }

func dotBF16(x []float32, w []uint16) float32 { return dotBF16Go(x, w) }

func dot4(x []float32, K int, w []float32) (float32, float32, float32, float32) {
	return dot4Go(x, K, w)
}
