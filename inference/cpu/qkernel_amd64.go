//go:build amd64 && !purego

package cpu

// The AVX2+FMA quantized dot products (qkernel_amd64.s); the Go kernels
// in qkernel_fast.go give the same bits where AVX2 is missing.

func init() { qMatMulRange = qMatMulRangeFast }

//go:noescape
func qDotRows4Q4AVX2(xp *float32, words *uint32, wstride int, scales, biases *float32, sstride, groups, bpg int, out *float32)

//go:noescape
func qDotRows4Q8AVX2(xp *float32, words *uint32, wstride int, scales, biases *float32, sstride, groups, bpg int, out *float32)

//go:noescape
func qDotInputs4Q4AVX2(xp *float32, xstride int, words *uint32, scales, biases *float32, groups, bpg int, out *float32)

//go:noescape
func qDotInputs4Q8AVX2(xp *float32, xstride int, words *uint32, scales, biases *float32, groups, bpg int, out *float32)

// qDotRows4 sets acc[j] to row j's dot with the prepared input xp (rows
// wstride words and sstride scales and biases apart; 0 repeats a row).
func qDotRows4(acc *[4]float32, xp []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits int) {
	K := groups * bpg * 32
	// bounds: the kernels read K + 8·groups prepared inputs, and K·bits/32
	// words and groups scales and biases of each of the four rows
	_ = xp[K+8*groups-1]
	_ = words[3*wstride+K*bits/32-1]
	_ = scales[3*sstride+groups-1]
	_ = biases[3*sstride+groups-1]
	if !useAVX2 {
		qDotRows4Go(acc, xp, words, wstride, scales, biases, sstride, groups, bpg, bits)
		return
	}
	if bits == 4 {
		qDotRows4Q4AVX2(&xp[0], &words[0], 4*wstride, &scales[0], &biases[0], 4*sstride, groups, bpg, &acc[0])
	} else {
		qDotRows4Q8AVX2(&xp[0], &words[0], 4*wstride, &scales[0], &biases[0], 4*sstride, groups, bpg, &acc[0])
	}
}

// qDotInputs4 sets acc[i] to the row's dot with prepared input i (inputs
// xstride floats apart; 0 repeats one input).
func qDotInputs4(acc *[4]float32, xp []float32, xstride int, words []uint32, scales, biases []float32, groups, bpg, bits int) {
	K := groups * bpg * 32
	_ = xp[3*xstride+K+8*groups-1]
	_ = words[K*bits/32-1]
	_ = scales[groups-1]
	_ = biases[groups-1]
	if !useAVX2 {
		qDotInputs4Go(acc, xp, xstride, words, scales, biases, groups, bpg, bits)
		return
	}
	if bits == 4 {
		qDotInputs4Q4AVX2(&xp[0], 4*xstride, &words[0], &scales[0], &biases[0], groups, bpg, &acc[0])
	} else {
		qDotInputs4Q8AVX2(&xp[0], 4*xstride, &words[0], &scales[0], &biases[0], groups, bpg, &acc[0])
	}
}
