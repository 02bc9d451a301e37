package cpu

import (
	"math"
	"sync"

	"etchat/inference/engine"
)

// The fast numerics mode (Options.Numerics "fast"): a quantized matmul's
// input row is quantized to 8 bits per block of 32 elements, as
// llama.cpp's Q8_0 (d = max|x|/127, q = round(x/d) in [−127, 127]; d is
// kept in fp32), and multiplied with the weights' integers Q exactly in
// integer arithmetic. The result is Σ_k x̂_k·W_k for the dequantized input
// x̂_k = d·q_k (up to the fp32 rounding of the per-block sums): per block
// b of group g, s_g·d_b·Σ Q·q, plus per group b_g·Σ_b d_b·Σq (the bias
// term; with folded biases BiasMul·s_g). The exact mode's kernels
// (qkernel_fast.go) stay the oracle; this mode is used only when a model
// is loaded with it and only for matrices qFast takes.
//
// The integer products are those of AVX2's VPMADDUBSW (unsigned × signed
// bytes, adjacent pairs summed to int16) and VPMADDWD (pairs to int32):
// eight int32 lanes per block, lane l the sum over the block's bytes
// 4l…4l+3 as the kernels hold them:
//   - 4-bit: the block's 16 bytes, their low nibbles in bytes 0–15 and
//     high nibbles in 16–31; so byte j < 16 is element 2j, byte 16+j
//     element 2j+1 (MLX packs element k in nibble k%8 of word k/8). The
//     prepared q is permuted to match (qI8Perm4).
//   - 8-bit: the block's 32 bytes in order, Q−128 as a signed byte (|Q−128|
//     × sign-adjusted q stays within VPMADDUBSW's int16 pairs); the 128·Σq
//     this leaves out is added with the bias: (b + 128·s)·Σ d·q, zero for
//     folded biases (BiasMul = −128).
//
// No sum can saturate: 4-bit pairs are at most 2·15·127, 8-bit ones
// 2·128·127 < 2^15. The Go kernel (qDotI8Go) does the same operations in
// the same order as the assembly, so both give the same bits.

// Numerics modes of the CPU engine (Options.Numerics), declared in
// package engine.
const (
	NumericsExact = engine.NumericsExact // fp32 products: the reference (the default)
	NumericsFast  = engine.NumericsFast  // quantized matmuls on 8-bit inputs (Q8_0)
)

// qI8Perm4 is the element of a 32-element block that prepared byte j
// holds for 4-bit weights (even elements, then odd ones).
var qI8Perm4 = func() (p [32]int) {
	for j := 0; j < 16; j++ {
		p[j], p[16+j] = 2*j, 2*j+1
	}
	return p
}()

// qI8Ident is the natural order (8-bit weights).
var qI8Ident = func() (p [32]int) {
	for j := range p {
		p[j] = j
	}
	return p
}()

// qI8Mode is how a kernel adds the bias term per group: none (8-bit,
// folded), Σ·s (4-bit, folded: the prepared sums carry BiasMul), Σ·b
// (4-bit), Σ·(b + 128·s) (8-bit).
const (
	qI8NoBias = iota
	qI8BiasScale
	qI8Bias
	qI8Bias128
)

func qI8ModeOf(w *qMatrix) int {
	switch {
	case w.Bits == 8 && w.Biases == nil:
		return qI8NoBias
	case w.Bits == 8:
		return qI8Bias128
	case w.Biases == nil:
		return qI8BiasScale
	}
	return qI8Bias
}

// prepareI8 quantizes the n input rows of x for w: per row, K bytes of q
// (per block permuted for the weights' width), K/32 block scales d, and
// per group eight lane sums Σ_b d_b·(Σ of q over the lane's 4 bytes),
// times BiasMul for folded 4-bit biases.
func (q *qPrep) prepareI8(x []float32, n int, w *qMatrix) {
	if qI8Pairs(w) {
		q.preparePairs(x, n, w)
		q.packPairsTiles(n, w.Cols)
		return
	}
	K, G, bpg := w.Cols, w.groups(), w.GroupSize/32
	nb := K / 32
	q.q8 = grow(q.q8, n*K)
	q.d = grow(q.d, n*nb)
	q.xsv = grow(q.xsv, n*8*G)
	mul := float32(1)
	if w.Bits == 4 && w.Biases == nil {
		mul = w.BiasMul
	}
	for i := 0; i < n; i++ {
		xi := x[i*K : (i+1)*K]
		qs, ds, xs := q.q8[i*K:(i+1)*K], q.d[i*nb:(i+1)*nb], q.xsv[i*8*G:(i+1)*8*G]
		for g := 0; g < G; g++ {
			var sv [8]float32
			for b := g * bpg; b < (g+1)*bpg; b++ {
				d := quantBlockI8((*[32]int8)(qs[32*b:]), (*[32]float32)(xi[32*b:]), w.Bits)
				ds[b] = d
				blk := (*[32]int8)(qs[32*b:])
				for l := range sv {
					s := int32(blk[4*l]) + int32(blk[4*l+1]) + int32(blk[4*l+2]) + int32(blk[4*l+3])
					sv[l] = fma32(float32(s), d, sv[l])
				}
			}
			for l := range sv {
				xs[8*g+l] = sv[l] * mul // mul is a power of two or 1: exact
			}
		}
	}
	if qI8Q8Gemm(w) {
		q.packQ8(n, K)
	}
}

// quantBlockI8 quantizes one block of x into dst (in the kernels' byte
// order for bits) and returns its scale d: Q8_0's d = max|x|/127 and
// q = round(x/d), half away from zero (0 for an all-zero block).
func quantBlockI8(dst *[32]int8, x *[32]float32, bits int) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, math.Float32frombits(math.Float32bits(v)&^(1<<31)))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	perm := &qI8Ident
	if bits == 4 {
		perm = &qI8Perm4
	}
	for j, k := range perm {
		v := float64(x[k&31] * id)
		v = max(-127, min(127, v+math.Copysign(0.5, v))) // half away from zero, exact in float64
		dst[j] = int8(v)                                 // truncates: the rounding
	}
	return d
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// qWeightsI8 is one block of a row as the kernels' bytes: 4-bit low
// nibbles then high nibbles (unsigned), 8-bit Q−128 (signed).
func qWeightsI8(words []uint32, b, bits int) (w [32]int32) {
	if bits == 4 {
		for j := 0; j < 16; j++ {
			by := words[4*b+j/4] >> (8 * (j % 4)) & 0xff
			w[j], w[16+j] = int32(by&15), int32(by>>4)
		}
		return w
	}
	for j := 0; j < 32; j++ {
		w[j] = int32(words[8*b+j/4]>>(8*(j%4))&0xff) - 128
	}
	return w
}

// qDotI8Go is one weight row against one prepared input (q8, d, xsv), in
// the assembly's order, into its eight lanes.
func qDotI8Go(acc *[8]float32, q8 []int8, d, xsv []float32, words []uint32, scales, biases []float32, groups, bpg, bits, mode int) {
	*acc = [8]float32{}
	b := 0
	for g := 0; g < groups; g++ {
		s := scales[g]
		for range bpg {
			w := qWeightsI8(words, b, bits)
			x := (*[32]int8)(q8[32*b:])
			ds := d[b] * s
			for l := range acc {
				var sum int32
				for j := 4 * l; j < 4*l+4; j++ {
					sum += w[j] * int32(x[j])
				}
				acc[l] = fma32(float32(sum), ds, acc[l])
			}
			b++
		}
		var bs float32
		switch mode {
		case qI8NoBias:
			continue
		case qI8BiasScale:
			bs = s
		case qI8Bias:
			bs = biases[g]
		case qI8Bias128:
			bs = fma32(s, 128, biases[g])
		}
		for l := range acc {
			acc[l] = fma32(xsv[8*g+l], bs, acc[l])
		}
	}
}

// qDotRows4PairsGo is qDotPairsGo for four rows (wstride words and
// sstride scales apart; 0 repeats a row) into acc[8j:8j+8].
func qDotRows4PairsGo(acc *[32]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int) {
	for j := 0; j < 4; j++ {
		qDotPairsGo((*[8]float32)(acc[8*j:]), q8, dv, c16, words[j*wstride:], scales[j*sstride:], pairs)
	}
}

// qDotRows4I8Go is qDotI8Go for four rows (wstride words and sstride
// scales and biases apart; 0 repeats a row) into acc[8j:8j+8].
func qDotRows4I8Go(acc *[32]float32, q8 []int8, d, xsv []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits, mode int) {
	for j := 0; j < 4; j++ {
		var bi []float32
		if biases != nil {
			bi = biases[j*sstride:]
		}
		qDotI8Go((*[8]float32)(acc[8*j:]), q8, d, xsv, words[j*wstride:], scales[j*sstride:], bi, groups, bpg, bits, mode)
	}
}

// qMatMulI8 is rows [r0, r1) of out[n][Rows] = x̂ · Wᵀ from the input
// prepared by prepareI8 (the pair layout's prefill: qMatMulPairsGemm):
// four weight rows at a time against every input row in turn (the rows' words stay in L1 meanwhile), then the last rows
// one at a time. bf16 scales are widened qScaleRows rows at a time.
func qMatMulI8(out []float32, p *qPrep, n int, w *qMatrix, r0, r1 int, sbuf *[]float32) {
	if n >= 4 && qI8Pairs(w) {
		qMatMulPairsGemm(out, p, n, w, r0, r1, sbuf)
		return
	}
	if n >= 4 && qI8Q8Gemm(w) {
		qMatMulQ8Gemm(out, p, n, w, r0, r1, sbuf)
		return
	}
	G, wpr, bpg, K := w.groups(), w.wordsPerRow(), w.GroupSize/32, w.Cols
	nb, mode := K/32, qI8ModeOf(w)
	var acc [32]float32
	for r0 < r1 {
		end := r1
		if w.Scales == nil {
			end = min(r1, r0+qScaleRows)
		}
		sc := w.scalesOf(r0*G, end*G, sbuf)
		var bi []float32
		if w.Biases != nil {
			bi = w.Biases[r0*G : end*G]
		}
		for r := r0; r < end; {
			m, ws, ss := 4, wpr, G
			if r+4 > end {
				m, ws, ss = 1, 0, 0
			}
			o := (r - r0) * G
			var rb []float32
			if bi != nil {
				rb = bi[o:]
			}
			for i := 0; i < n; i++ {
				if qI8Pairs(w) {
					qDotRows4Pairs(&acc, p.q8[i*K:(i+1)*K], p.d[i*K/8:(i+1)*K/8], p.c16[i*K/4:(i+1)*K/4], w.Packed[r*wpr:], ws, sc[o:], ss, K/64)
				} else {
					qDotRows4I8(&acc, p.q8[i*K:(i+1)*K], p.d[i*nb:(i+1)*nb], p.xsv[i*8*G:(i+1)*8*G], w.Packed[r*wpr:], ws, sc[o:], rb, ss, G, bpg, w.Bits, mode)
				}
				for j := 0; j < m; j++ {
					out[i*w.Rows+r+j] = hsum8((*[8]float32)(acc[8*j:]))
				}
			}
			r += m
		}
		r0 = end
	}
}

// The 4-bit, group-32, folded layout (Q4_0's, the real-size exports')
// has its own kernel that takes two blocks per load: a row's 32 bytes of
// two blocks, their low nibbles and high nibbles each a 32-byte vector, so
// int32 lane m < 4 sums four products of the first block and lane m ≥ 4
// of the second. The input is prepared to match, per pair of blocks:
//   - q: 32 bytes for the low nibbles (first block's even elements, then
//     the second's), 32 for the high ones (the odd elements);
//   - dv: eight floats, d of the first block four times, then the second's;
//   - c16: the folded bias −BiasMul·Σq per int16 lane (the four inputs
//     the lane's two VPMADDUBSW products took), subtracted in int16: the
//     bias term is exact and costs no float work.
// Per pair and row: lanes = Σ Q·q − c16 (exact), then acc = fma(lanes,
// dv·sv, acc), sv the two blocks' scales four times each.

// qI8Pairs reports whether w takes the pair kernel (an even number of
// blocks per row).
func qI8Pairs(w *qMatrix) bool {
	return w.Bits == 4 && w.GroupSize == 32 && w.Biases == nil && w.BiasMul == -8 && w.Cols%64 == 0
}

// preparePairs is prepareI8 for the pair kernel: per input row K bytes of
// q, K/8 floats of dv and K/4 int16 of c16 (qPrepPairsRow).
func (q *qPrep) preparePairs(x []float32, n int, w *qMatrix) {
	K := w.Cols
	q.q8, q.d, q.c16 = grow(q.q8, n*K), grow(q.d, n*K/8), grow(q.c16, n*K/4)
	for i := 0; i < n; i++ {
		at := i * K
		qPrepPairsRow(q.q8[at:at+K], q.d[at/8:at/8+K/8], q.c16[at/4:at/4+K/4], x[at:at+K])
	}
}

// qPrepPairsRowGo quantizes one input row x (len a multiple of 64) for
// the pair kernel, pair of blocks by pair of blocks: 64 bytes of q8 (the
// two blocks' even elements, the low nibbles' partners, then their odd
// ones), 8 floats of dv (each block's d four times) and 16 int16 of c16
// (−BiasMul = 8 times the sums of the q each lane pairs with a nibble).
// qPrepPairsRow is this in AVX2 where there is AVX2, with the same bits.
func qPrepPairsRowGo(q8 []int8, dv []float32, c16 []int16, x []float32) {
	var blk [2][32]int8
	for p := 0; p < len(x)/64; p++ {
		var d [2]float32
		for h := range blk {
			d[h] = quantBlockI8(&blk[h], (*[32]float32)(x[64*p+32*h:]), 8) // natural order
		}
		qs, dvp, c := q8[64*p:64*p+64], dv[8*p:8*p+8], c16[16*p:16*p+16]
		for j := 0; j < 16; j++ {
			qs[j], qs[16+j] = blk[0][2*j], blk[1][2*j]        // low nibbles: even elements
			qs[32+j], qs[48+j] = blk[0][2*j+1], blk[1][2*j+1] // high nibbles: odd elements
		}
		for m := 0; m < 8; m++ {
			dvp[m] = d[m/4]
		}
		for k := 0; k < 16; k++ {
			sum := int32(qs[2*k]) + int32(qs[2*k+1]) + int32(qs[32+2*k]) + int32(qs[32+2*k+1])
			c[k] = int16(8 * sum) // −BiasMul = 8
		}
	}
}

// qDotPairsGo is one row of the pair kernel against one prepared input,
// in its order, into eight lanes.
func qDotPairsGo(acc *[8]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, scales []float32, pairs int) {
	*acc = [8]float32{}
	qDotPairsAccGo(acc, q8, dv, c16, words, scales, pairs)
}

// qDotPairsAccGo is qDotPairsGo continuing the lanes in acc.
func qDotPairsAccGo(acc *[8]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, scales []float32, pairs int) {
	for p := 0; p < pairs; p++ {
		qPairGo(acc, (*[64]int8)(q8[64*p:]), (*[8]float32)(dv[8*p:]), (*[16]int16)(c16[16*p:]), (*[8]uint32)(words[8*p:]), scales[2*p], scales[2*p+1])
	}
}

// qPairGo adds one pair of blocks of a row (words ws, scales s0 and s1)
// times one input's (qs, dv, c) to acc, as the kernels do.
func qPairGo(acc *[8]float32, qs *[64]int8, dv *[8]float32, c *[16]int16, ws *[8]uint32, s0, s1 float32) {
	var lane [16]int32 // int16 lanes, exact
	for j := 0; j < 32; j++ {
		by := ws[j/4] >> (8 * (j % 4)) & 0xff
		lane[j/2] += int32(by&15)*int32(qs[j]) + int32(by>>4)*int32(qs[32+j])
	}
	for m := 0; m < 8; m++ {
		sum := lane[2*m] - int32(c[2*m]) + lane[2*m+1] - int32(c[2*m+1])
		s := s0
		if m >= 4 {
			s = s1
		}
		acc[m] = fma32(float32(sum), dv[m]*s, acc[m])
	}
}

// qMatMulI8Ref is the fast mode's definition for tests: x rounded to
// Q8_0 blocks (x̂ = d·q), then the exact reference product.
func qMatMulI8Ref(out, x []float32, n int, w *qMatrix) {
	xh := make([]float32, len(x[:n*w.Cols]))
	var q [32]int8
	for b := 0; b < len(xh)/32; b++ {
		d := quantBlockI8(&q, (*[32]float32)(x[32*b:]), 8) // natural order
		for j, v := range q {
			xh[32*b+j] = d * float32(v)
		}
	}
	qMatMulRef(out, xh, n, w)
}

// useInt8 switches the program's prepared quantized matrices that the
// fast kernels take to the fast numerics mode (the others stay exact).
func (m *model) useInt8() {
	for _, q := range m.qmats {
		q.Int8 = qFast(q)
	}
}

// Numerics is the mode the session's quantized matmuls run in: "fast"
// when the program has a matrix on the fast kernels, else "exact" (a
// model without quantized weights computes the same either way).
func (s *session) Numerics() string {
	for _, q := range s.m.qmats {
		if q.Int8 {
			return NumericsFast
		}
	}
	return NumericsExact
}

// Prefill on the pair layout (qMatMulPairsGemm): the chunk's inputs are
// quantized once (preparePairs), then each pair of blocks of two weight
// rows is loaded, split into nibbles and its scales permuted once for
// four inputs (qGemmPairs), where decode's kernel does that work for
// every input. Per input and row the operations are the decode kernel's
// in its order, so prefill and decode give the same bits (and the tile's
// Go twin, qGemmPairsGo, is qDotPairsGo eight times).

// qGemmRows is how many weight rows prefill keeps in cache while the
// chunk's inputs go by four at a time (even, for the tile's two rows).
const qGemmRows = qScaleRows

// qGemmPairsGo sets acc[8(4j+i):] to the lanes of weight row j's (of
// two, wstride words and sstride scales apart) dot with input i of four
// packed by packPairs (per pair of blocks 4×64 bytes of q, 4×8 floats of
// dv, 4×16 int16 of c16), over the given pairs; with accum it continues
// the lanes already in acc (the row's earlier pairs).
func qGemmPairsGo(acc *[64]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int, accum bool) {
	if !accum {
		*acc = [64]float32{}
	}
	for p := 0; p < pairs; p++ {
		for j := 0; j < 2; j++ {
			ws, sc := (*[8]uint32)(words[j*wstride+8*p:]), scales[j*sstride+2*p:]
			for i := 0; i < 4; i++ {
				qPairGo((*[8]float32)(acc[8*(4*j+i):]), (*[64]int8)(q8[256*p+64*i:]), (*[8]float32)(dv[32*p+8*i:]), (*[16]int16)(c16[64*p+16*i:]), ws, sc[0], sc[1])
			}
		}
	}
}

// packPairs lays the prepared inputs (preparePairs) out again for
// prefill's tile, four inputs at a time (the last n%4 are not), pair of
// blocks by pair of blocks: the four inputs' 64 bytes of q, 8 floats of
// dv and 16 int16 of c16 each side by side, in pq8, pdv and pc16. Read
// in place, the four inputs' rows would be K bytes apart, at K = 8192 a
// multiple of 4 KiB, so that they and their dv and c16 all fell on the
// same L1 sets. Done once per input, in prepare: the workers' blocks of
// rows all read it. (arm64's SMMLA tile reads its own packing:
// packPairsTiles picks.)
func (q *qPrep) packPairs(n, K int) {
	nt := n / 4
	q.pq8, q.pdv, q.pc16 = grow(q.pq8, nt*4*K), grow(q.pdv, nt*K/2), grow(q.pc16, nt*K)
	for t := 0; t < nt; t++ {
		q8, dv, c16 := q.pq8[t*4*K:], q.pdv[t*K/2:], q.pc16[t*K:]
		for i := 0; i < 4; i++ {
			at := (4*t + i) * K
			for pr := 0; pr < K/64; pr++ {
				copy(q8[256*pr+64*i:256*pr+64*i+64], q.q8[at+64*pr:])
				copy(dv[32*pr+8*i:32*pr+8*i+8], q.d[at/8+8*pr:])
				copy(c16[64*pr+16*i:64*pr+16*i+16], q.c16[at/4+16*pr:])
			}
		}
	}
}

// qMatMulPairsGemm is qMatMulI8 for the pair layout and n ≥ 4 inputs
// (packed four at a time by packPairs): per block of
// qGemmRows weight rows and part of qGemmCols columns (the tiles' sums
// kept in between), the inputs four at a time against the rows two at a
// time; a last odd row and the last n%4 inputs take the decode kernel.
func qMatMulPairsGemm(out []float32, p *qPrep, n int, w *qMatrix, r0, r1 int, sbuf *[]float32) {
	K, G, wpr := w.Cols, w.groups(), w.wordsPerRow()
	nt, tile := n/4, qGemmPairsTile(p)
	ab := qGemmAccs.Get().(*[]float32)
	for r0 < r1 {
		end := min(r1, r0+qGemmRows)
		sc := w.scalesOf(r0*G, end*G, sbuf)
		np := (end - r0) / 2
		*ab = grow(*ab, nt*np*64)
		for k0 := 0; k0 < K; k0 += qGemmCols {
			pairs := min(qGemmCols, K-k0) / 64
			for t := 0; t < nt; t++ {
				q8, dv, c16 := p.pq8[t*4*K+4*k0:], p.pdv[t*K/2+k0/2:], p.pc16[t*K+k0:]
				for j := 0; j < np; j++ {
					r := r0 + 2*j
					acc := (*[64]float32)((*ab)[(t*np+j)*64:])
					tile(acc, q8, dv, c16, w.Packed[r*wpr+k0/8:], wpr, sc[(r-r0)*G+k0/32:], G, pairs, k0 > 0)
				}
			}
		}
		for t := 0; t < nt; t++ {
			for j := 0; j < np; j++ {
				storeTile(out, (*[64]float32)((*ab)[(t*np+j)*64:]), 4*t, r0+2*j, w.Rows)
			}
			if r := r0 + 2*np; r < end {
				for a := 0; a < 4; a++ {
					qPairsDecode(out, p, 4*t+a, w, sc, r0, r, end)
				}
			}
		}
		for i := 4 * nt; i < n; i++ {
			qPairsDecode(out, p, i, w, sc, r0, r0, end)
		}
		r0 = end
	}
	qGemmAccs.Put(ab)
}

// storeTile writes a prefill tile's sums (two weight rows × four inputs,
// eight lanes each, as the tiles leave them: lane group l = 4·row +
// input) to out: inputs i0…i0+3, rows r and r+1 of rows.
func storeTile(out []float32, acc *[64]float32, i0, r, rows int) {
	for l := 0; l < 8; l++ {
		out[(i0+l%4)*rows+r+l/4] = hsum8((*[8]float32)(acc[8*l:]))
	}
}

// qGemmPairsFunc is a pair layout prefill tile (qGemmPairsGo's
// arguments), as qGemmPairsTile picks it for the packing.
type qGemmPairsFunc func(acc *[64]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int, accum bool)

// qGemmAccs hold prefill's tile sums between parts of K.
var qGemmAccs = sync.Pool{New: func() any { return new([]float32) }}

// qGemmCols is how many columns of K prefill's tiles take before the next
// four inputs: 2048 columns of four packed inputs are 16 KiB, beside
// qGemmRows rows' 24 KiB of words (at K = 8192 a tile's inputs would be
// 64 KiB). Measured on real-size shapes (one thread, 2026-12-04, load
// 14 on 2 cores): 2048 columns × 24 rows 41–52 GMAC/cpu-s, 1024 × 24,
// 1024 × 48 and 2048 × 48 within the noise below it.
const qGemmCols = 2048

// qPairsDecode is rows [r, end) of input i's output by the decode kernel,
// four rows at a time, then one; sc is the scales of rows r0….
func qPairsDecode(out []float32, p *qPrep, i int, w *qMatrix, sc []float32, r0, r, end int) {
	K, G, wpr := w.Cols, w.groups(), w.wordsPerRow()
	q8, dv, c16 := p.q8[i*K:(i+1)*K], p.d[i*K/8:(i+1)*K/8], p.c16[i*K/4:(i+1)*K/4]
	var acc [32]float32
	for r < end {
		m, ws, ss := 4, wpr, G
		if r+4 > end {
			m, ws, ss = 1, 0, 0
		}
		qDotRows4Pairs(&acc, q8, dv, c16, w.Packed[r*wpr:], ws, sc[(r-r0)*G:], ss, K/64)
		for j := 0; j < m; j++ {
			out[i*w.Rows+r+j] = hsum8((*[8]float32)(acc[8*j:]))
		}
		r += m
	}
}

// qGemmPairsOperands checks, before an assembly tile of qGemmPairs reads
// them, that its operands hold what it reads: per pair 256 bytes of q, 32
// floats of dv and 64 int16 of c16 (four packed inputs), and 8 words and
// 2 scales of each of the two rows. A short slice panics here, in Go.
func qGemmPairsOperands(q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int) {
	_, _, _ = q8[256*pairs-1], dv[32*pairs-1], c16[64*pairs-1]
	_ = words[wstride+8*pairs-1]
	_ = scales[sstride+2*pairs-1]
}

// b2i is 1 for true: the assembly tiles' accum argument.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// qI8Operands checks, before an assembly kernel of qDotRows4I8 reads them,
// that its operands hold what it reads — K bytes of input, K/32 scales d
// and 8·groups sums of it, and K·bits/32 words and groups scales (and
// biases) of each of the four rows — and returns the biases' first
// element (the scales' when mode reads no biases). A short slice panics
// here, in Go, rather than being read past in assembly.
func qI8Operands(q8 []int8, d, xsv []float32, words []uint32, wstride int, scales, biases []float32, sstride, groups, bpg, bits, mode int) *float32 {
	K := groups * bpg * 32
	_, _, _ = q8[K-1], d[K/32-1], xsv[8*groups-1]
	_ = words[3*wstride+K*bits/32-1]
	_ = scales[3*sstride+groups-1]
	if mode == qI8Bias || mode == qI8Bias128 {
		_ = biases[3*sstride+groups-1]
		return &biases[0]
	}
	return &scales[0]
}
