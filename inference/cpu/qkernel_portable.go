//go:build (!amd64 && !arm64) || purego

package cpu

// The quantized kernels in Go where there is no assembly for them
// (arm64's NEON versions: qkernel_arm64.go).

func qDotRows4(acc *[4]float32, xp []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits int) {
	qDotRows4Go(acc, xp, words, wstride, scales, biases, sstride, groups, bpg, bits)
}

func qDequant(dst []float32, w *qMatrix, r int) { qDequantGo(dst, w, r) }

func qDot3x4(x []float32, ldx int, w []float32, ldw, K int, out *[12]float32) {
	dot3x4Go(x, ldx, w, ldw, K, out)
}

// qDotRows4I8 is the fast mode's kernel, in Go here.
func qDotRows4I8(acc *[32]float32, q8 []int8, d, xsv []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits, mode int) {
	qDotRows4I8Go(acc, q8, d, xsv, words, wstride, scales, biases, sstride, groups, bpg, bits, mode)
}

// qDotRows4Pairs is the fast mode's 4-bit group-32 kernel, in Go here.
func qDotRows4Pairs(acc *[32]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int) {
	qDotRows4PairsGo(acc, q8, dv, c16, words, wstride, scales, sstride, pairs)
}
