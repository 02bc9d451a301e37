//go:build (!amd64 && !arm64) || purego

package cpu

// qGemmPairs is the pair layout's prefill tile, in Go here (amd64 has it
// and arm64 in assembly).
func qGemmPairs(acc *[64]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int, accum bool) {
	qGemmPairsGo(acc, q8, dv, c16, words, wstride, scales, sstride, pairs, accum)
}

// qPrepPairsRow is the pair kernel's input quantizer, in Go here.
func qPrepPairsRow(q8 []int8, dv []float32, c16 []int16, x []float32) {
	qPrepPairsRowGo(q8, dv, c16, x)
}

// qGemmQ8 is the 8-bit prefill tile, in Go here.
func qGemmQ8(acc *[64]float32, q8 []int8, d, xsv []float32, words []uint32, wstride int, scales, biases []float32, sstride, blocks, mode int, accum bool) {
	qGemmQ8Go(acc, q8, d, xsv, words, wstride, scales, biases, sstride, blocks, mode, accum)
}
