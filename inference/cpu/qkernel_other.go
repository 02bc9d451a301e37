//go:build !amd64 || purego

package cpu

func init() { qMatMulRange = qMatMulRangeFast }

func qDotRows4(acc *[4]float32, xp []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits int) {
	qDotRows4Go(acc, xp, words, wstride, scales, biases, sstride, groups, bpg, bits)
}

func qDequant(dst []float32, w *qMatrix, r int) { qDequantGo(dst, w, r) }

func qDot4x2(x []float32, ld int, w0, w1 []float32, out *[8]float32) {
	qDot4x2Go(x, ld, w0, w1, out)
}
