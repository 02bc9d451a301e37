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
func qDotRows3Q4G32AVX2(xp *float32, words *uint32, w1, w2 int, scales *float32, s1, s2, groups int, out *float32)

//go:noescape
func qDequantQ4AVX2(dst *float32, words *uint32, scales, biases *float32, groups, gs int)

//go:noescape
func qDequantQ8AVX2(dst *float32, words *uint32, scales, biases *float32, groups, gs int)

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

// qDotRows3 sets acc[j] (j < 3) to the dot with the prepared input xp
// of the 4-bit, group-32 rows with folded biases at words[0:], words[w1:]
// and words[w2:] (their scales at 0, s1 and s2), as qDotRows4 would: the
// same operations in fewer instructions (qDotRows3Q4G32AVX2). It reports
// false, doing nothing, where that kernel does not apply.
func qDotRows3(acc *[4]float32, xp []float32, words []uint32, w1, w2 int, scales []float32, s1, s2, groups, bpg, bits int, folded bool) bool {
	if !useAVX2 || bits != 4 || bpg != 1 || groups < 1 || !folded {
		return false
	}
	K := groups * 32
	_ = xp[K+8*groups-1]
	_ = words[max(w1, w2)+K/8-1]
	_ = scales[max(s1, s2)+groups-1]
	qDotRows3Q4G32AVX2(&xp[0], &words[0], 4*w1, 4*w2, &scales[0], 4*s1, 4*s2, groups, &acc[0])
	return true
}

// qDequant writes row r of w into dst (Q·scale + bias, fused).
func qDequant(dst []float32, w *qMatrix, r int) {
	G, wpr := w.groups(), w.wordsPerRow()
	if !useAVX2 {
		qDequantGo(dst, w, r)
		return
	}
	_ = dst[w.Cols-1]
	words := w.Packed[r*wpr : (r+1)*wpr]
	var buf, sbuf [256]float32 // a folded row's biases, computed; bf16 scales widened
	sb := sbuf[:]
	sc, bi := w.scalesOf(r*G, (r+1)*G, &sb), w.rowBiases(r, buf[:])
	if w.Bits == 4 {
		qDequantQ4AVX2(&dst[0], &words[0], &sc[0], &bi[0], G, w.GroupSize)
	} else {
		qDequantQ8AVX2(&dst[0], &words[0], &sc[0], &bi[0], G, w.GroupSize)
	}
}

// qDot3x4 is dot3x4 (prefill's dense kernel), in Go without AVX2.
func qDot3x4(x []float32, ldx int, w []float32, ldw, K int, out *[12]float32) {
	if !useAVX2 {
		dot3x4Go(x, ldx, w, ldw, K, out)
		return
	}
	dot3x4(x, ldx, w, ldw, K, out)
}
