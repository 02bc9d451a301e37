//go:build ignore

// Generates qprep_int8_neon_arm64.s: go run qprep_int8_neon_gen.go
//
// The fast mode's input quantizer for the pair kernel in NEON
// (qPrepPairsRowGo's bits, as qprep_int8_amd64.s's AVX2 one). Per block
// of 32 inputs, loaded by LD2 into even and odd elements (the pair
// layout's split, so no byte shuffles follow):
//   - amax = max|x| on the bits as unsigned integers (AND with 0x7fffffff,
//     UMAX, UMAXV): the order of non-negative floats, and a NaN's bits are
//     above +Inf's, so a NaN input makes d NaN and the block's q 0 as Go's
//     max does (FMAXNM would drop it);
//   - d = amax/127 and id = 1/d by FDIV as Go divides, and id = 0 where
//     d = 0 as Go leaves it (FCMP, FCSEL): d is 0 not only for a block of
//     ±0 but for one whose max|x| is at most 63 denormal steps (amax/127
//     underflows), and there 1/d = +Inf would make each nonzero q ±127
//     where Go's are 0;
//   - q = FCVTAS(x·id): the float32 product rounded to nearest with ties
//     away from zero, which is Go's trunc(float64(v) ± 0.5) (exact in
//     float64) for every float32 v; FCVTNS would round ties to even. NaN
//     lanes (0·Inf, ∞·0, a NaN block) convert to 0 as Go's int8(NaN)
//     does; ±Inf saturates. SQXTN narrows with saturation to int8 (the
//     clamp at 127) and SMAX with −127 is the clamp below;
//   - c16 = 8·(the sums of each two adjacent bytes of the even half and
//     of the odd half): SADDLP, SADALP, SHL by 3 (exact in int16:
//     |8·4·127| < 2^15).
//
// Go's assembler has no FCVTAS, SQXTN, SMAX, SADDLP, SADALP, UMAXV or
// vector FMUL: they are WORDs from internal/arm64enc.
package main

import enc "etchat/internal/arm64enc"

// asm is the file being written.
var asm = enc.NewFile("qprep_int8_neon_gen.go")

// Registers: R0 x, R1 q8, R2 dv, R3 c16, R4 pairs left, R5 a temporary.
// V0–V7 a block's inputs (LD2: even elements in V0, V2, V4, V6, odd in
// V1, V3, V5, V7), then its int32 q; V8–V15 |x| as bits, then the int16
// q; F18 127, F19 1, V20 id four times, F21 d, F22 id, F23 0; V16 the
// |x| mask, V17 −127 in every byte. A pair's outputs: V24–V27 its 64 bytes of q
// (first block's even elements, second's, first's odd, second's), V28–V29
// dv, V30–V31 c16 (first block's eight sums, second's).
const (
	absMask  = 16
	minus127 = 17
	f127     = 18
	f1       = 19
	idv      = 20
	fd       = 21
	fid      = 22
	f0       = 23
	qOut     = 24
	dvOut    = 28
	cOut     = 30
)

// block quantizes the pair's block h (the next 32 inputs at R0) into
// V24+h (even elements' bytes), V26+h (odd), V28+h (d) and V30+h (sums).
func block(h int) {
	for i := 0; i < 4; i++ {
		asm.Op("VLD2.P 32(R0), [V%d.S4, V%d.S4]", 2*i, 2*i+1)
	}
	for i := 0; i < 8; i++ {
		asm.Op("VAND V%d.B16, V%d.B16, V%d.B16", absMask, i, 8+i)
	}
	for s := 1; s < 8; s *= 2 { // tree: 8 → 4 → 2 → 1 registers
		for i := 0; i < 8; i += 2 * s {
			asm.Op("VUMAX V%d.S4, V%d.S4, V%d.S4", 8+i+s, 8+i, 8+i)
		}
	}
	asm.Word(enc.UMAXVS(8, 8))
	asm.Op("FDIVS F%d, F8, F%d", f127, fd)     // d = amax/127
	asm.Op("FDIVS F%d, F%d, F%d", fd, f1, fid) // id = 1/d
	asm.Op("FCMPS $(0.0), F%d", fd)
	asm.Op("FCSELS EQ, F%d, F%d, F%d", f0, fid, fid) // id = 0 where d = 0 (not NaN: unordered)
	asm.Op("VDUP V%d.S[0], V%d.S4", fid, idv)
	asm.Op("VDUP V%d.S[0], V%d.S4", fd, dvOut+h)
	for i := 0; i < 8; i++ {
		asm.Word(enc.FMUL4S(i, i, idv))
	}
	for i := 0; i < 8; i++ {
		asm.Word(enc.FCVTAS4S(i, i))
	}
	// int32 → int16: V8 even elements 0–14, V9 16–30, V10 odd 1–15,
	// V11 17–31
	for k, src := range [][2]int{{0, 2}, {4, 6}, {1, 3}, {5, 7}} {
		asm.Word(enc.SQXTN4H(8+k, src[0]))
		asm.Word(enc.SQXTN28H(8+k, src[1]))
	}
	even, odd := qOut+h, qOut+2+h
	asm.Word(enc.SQXTN8B(even, 8))
	asm.Word(enc.SQXTN216B(even, 9))
	asm.Word(enc.SQXTN8B(odd, 10))
	asm.Word(enc.SQXTN216B(odd, 11))
	asm.Word(enc.SMAX16B(even, even, minus127))
	asm.Word(enc.SMAX16B(odd, odd, minus127))
	asm.Word(enc.SADDLP8H(cOut+h, even))
	asm.Word(enc.SADALP8H(cOut+h, odd))
	asm.Op("VSHL $3, V%d.H8, V%d.H8", cOut+h, cOut+h)
}

func main() {
	asm.Func("qPrepPairsNEON(x *float32, q8 *int8, dv *float32, c16 *int16, pairs int)", 40,
		"qPrepPairsRowGo: per pair of blocks (64 inputs) 64 bytes of q (the two",
		"blocks' even elements, then their odd ones), 8 floats of dv (d0 four",
		"times, d1 four times) and 16 int16 of c16; pairs ≥ 1.")
	asm.Op("MOVD x+0(FP), R0")
	asm.Op("MOVD q8+8(FP), R1")
	asm.Op("MOVD dv+16(FP), R2")
	asm.Op("MOVD c16+24(FP), R3")
	asm.Op("MOVD pairs+32(FP), R4")
	asm.Op("MOVW $0x7fffffff, R5")
	asm.Op("VDUP R5, V%d.S4", absMask)
	asm.Op("VMOVI $0x81, V%d.B16", minus127) // −127
	asm.Op("MOVW $0x42fe0000, R5")           // 127
	asm.Op("FMOVS R5, F%d", f127)
	asm.Op("FMOVS $1.0, F%d", f1)
	asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", f0, f0, f0)
	asm.Label("loop")
	block(0)
	block(1)
	asm.Op("VST1.P [V%d.B16, V%d.B16, V%d.B16, V%d.B16], 64(R1)", qOut, qOut+1, qOut+2, qOut+3)
	asm.Op("VST1.P [V%d.S4, V%d.S4], 32(R2)", dvOut, dvOut+1)
	asm.Op("VST1.P [V%d.H8, V%d.H8], 32(R3)", cOut, cOut+1)
	asm.Op("SUBS $1, R4, R4")
	asm.Op("BNE loop")
	asm.Op("RET")
	asm.Save("qprep_int8_neon_arm64.s") // or the path given (TestNEONGenerated)
}
