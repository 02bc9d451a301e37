//go:build !amd64 || purego

package cpu

var useAVX2 = false

func dot4(x []float32, K int, w []float32) (float32, float32, float32, float32) {
	return dot4Go(x, K, w)
}

func dot4x2(x []float32, K int, w0, w1 []float32, out *[8]float32) {
	out[0], out[2], out[4], out[6] = dot4Go(x[:4*K], K, w0)
	out[1], out[3], out[5], out[7] = dot4Go(x[:4*K], K, w1)
}

func gemvPrep(x []float32, w *wmat, xp []float32) ([]float32, bool) { return x, false }

func readSum(p []uint64) uint64 { return readSumGo(p) }

func widenBF16(dst []float32, src []uint16) { widenBF16Go(dst, src) }
