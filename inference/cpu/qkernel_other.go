//go:build !amd64 || purego

package cpu

func init() { qMatMulRange = qMatMulRangeFast }

func qDotRows4(acc *[4]float32, xp []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits int) {
	qDotRows4Go(acc, xp, words, wstride, scales, biases, sstride, groups, bpg, bits)
}

func qDotInputs4(acc *[4]float32, xp []float32, xstride int, words []uint32, scales, biases []float32, groups, bpg, bits int) {
	qDotInputs4Go(acc, xp, xstride, words, scales, biases, groups, bpg, bits)
}
