//go:build ignore

// Generates qkernel_int8_neon_arm64.s: go run qkernel_int8_neon_gen.go
//
// The fast mode's NEON decode kernels (qkernel_int8.go describes the
// arithmetic), four weight rows against one input quantized to 8 bits
// per block, with SDOT (FEAT_DotProd): each int32 lane sums the products
// of four signed bytes, which is what AVX2's VPMADDUBSW + VPMADDWD give a
// lane (exactly: integers), so the lanes are converted (SCVTF) and
// multiplied into the rows' fp32 sums with the AVX2 kernels' fused
// operations in their order, and the results are their bits. The eight
// fp32 lanes of a row are two V registers (lanes 0–3, 4–7); the caller
// sums them (hsum8). Go's assembler has no SDOT, SADDLP, vector FMUL or
// SCVTF: they are WORDs from internal/arm64enc.
package main

import (
	"fmt"

	enc "etchat/internal/arm64enc"
)

// asm is the file being written.
var asm = enc.NewFile("qkernel_int8_neon_gen.go")

var (
	words  = []string{"R4", "R5", "R6", "R7"}
	scales = []string{"R8", "R9", "R10", "R11"}
	biases = []string{"R12", "R13", "R14", "R15"}
)

// pairs is qDotRows4PairsNEON (4-bit, group 32, folded biases; two blocks
// per pass, qDotPairsGo's order). Registers: R0 q, R1 dv, R2 c16, R3
// pairs left, R4–R7 the rows' words, R8–R11 their scales, R16 a
// temporary. V0–V7 the rows' sums (row j: V2j, V2j+1), V8–V11 the row's
// nibbles, V12–V13 its int32 lanes, V14–V15 d·s, V16–V19 the input's
// bytes (low nibbles' first block, second block, high nibbles' first,
// second), V20–V21 dv, V22–V23 −c (int32), V24–V25 the row's words,
// V26–V27 its scales, V30 zero, V31 the nibble mask.
func pairs() {
	name := "qDotRows4PairsNEON"
	asm.Func(name+"(q8 *int8, dv *float32, c16 *int16, words *uint32, wstride int, scales *float32, sstride, pairs int, out *[32]float32)", 72)
	asm.Op("MOVD q8+0(FP), R0")
	asm.Op("MOVD dv+8(FP), R1")
	asm.Op("MOVD c16+16(FP), R2")
	asm.Op("MOVD words+24(FP), R4")
	asm.Op("MOVD wstride+32(FP), R16")
	for j := 1; j < 4; j++ {
		asm.Op("ADD R16, %s, %s", words[j-1], words[j])
	}
	asm.Op("MOVD scales+40(FP), R8")
	asm.Op("MOVD sstride+48(FP), R16")
	for j := 1; j < 4; j++ {
		asm.Op("ADD R16, %s, %s", scales[j-1], scales[j])
	}
	asm.Op("MOVD pairs+56(FP), R3")
	asm.Op("VMOVI $15, V31.B16")
	asm.Op("VEOR V30.B16, V30.B16, V30.B16")
	for i := 0; i < 8; i++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	asm.Op("CBZ R3, pairsdone")
	asm.Label("pairsloop")
	asm.Op("VLD1.P 64(R0), [V16.B16, V17.B16, V18.B16, V19.B16]")
	asm.Op("VLD1.P 32(R1), [V20.S4, V21.S4]")
	asm.Op("VLD1.P 32(R2), [V22.H8, V23.H8]")
	// the folded bias term per int32 lane, c[2m] + c[2m+1], negated
	asm.Word(enc.SADDLP4S(22, 22))
	asm.Word(enc.SADDLP4S(23, 23))
	asm.Op("VSUB V22.S4, V30.S4, V22.S4")
	asm.Op("VSUB V23.S4, V30.S4, V23.S4")
	for j := 0; j < 4; j++ {
		asm.Op("VLD1.P 32(%s), [V24.B16, V25.B16]", words[j])
		asm.Op("VAND V31.B16, V24.B16, V8.B16")
		asm.Op("VUSHR $4, V24.B16, V10.B16")
		asm.Op("VAND V31.B16, V25.B16, V9.B16")
		asm.Op("VUSHR $4, V25.B16, V11.B16")
		asm.Op("VMOV V22.B16, V12.B16")
		asm.Op("VMOV V23.B16, V13.B16")
		asm.Word(enc.SDOT(12, 8, 16))  // first block's low nibbles
		asm.Word(enc.SDOT(12, 10, 18)) // and high ones
		asm.Word(enc.SDOT(13, 9, 17))  // second block's
		asm.Word(enc.SDOT(13, 11, 19))
		asm.Word(enc.SCVTF4S(12, 12))
		asm.Word(enc.SCVTF4S(13, 13))
		asm.Op("VLD1R.P 4(%s), [V26.S4]", scales[j])
		asm.Op("VLD1R.P 4(%s), [V27.S4]", scales[j])
		asm.Word(enc.FMUL4S(14, 20, 26)) // d·s, rounded as qDotPairsGo's
		asm.Word(enc.FMUL4S(15, 21, 27))
		asm.Op("VFMLA V14.S4, V12.S4, V%d.S4", 2*j)
		asm.Op("VFMLA V15.S4, V13.S4, V%d.S4", 2*j+1)
	}
	asm.Op("SUBS $1, R3, R3")
	asm.Op("BNE pairsloop")
	asm.Label("pairsdone")
	store(64)
}

// store writes the four rows' eight lanes to out[0:32].
func store(off int) {
	asm.Op("MOVD out+%d(FP), R16", off)
	asm.Op("VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R16)")
	asm.Op("VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R16)")
	asm.Op("RET")
}

// gen is qDotRows4I8Q{4,8}NEON (any group of whole blocks, every bias
// mode; qDotI8Go's order). Registers: R0 q, R1 d, R2 xsv, R3 groups
// left, R4–R7 the rows' words, R8–R11 their scales, R12–R15 their
// biases, R16 mode, R17 blocks left. V0–V7 the rows' sums, V8–V9 the
// row's weight bytes as signed (8-bit: Q−128; 4-bit: low nibbles, high
// nibbles), V12–V13 its int32 lanes, V14 d·s, V16–V17 the input block's
// bytes, V18 d, V20–V23 the rows' group scales, V24–V25 words, V26–V27
// the group's lane sums xsv, V28 the bias factor, V29 128.0, V31 the byte
// mask (4-bit 0x0f, 8-bit 0x80).
func gen(bits int) {
	name := fmt.Sprintf("qDotRows4I8Q%dNEON", bits)
	l := fmt.Sprintf("i8q%d", bits)
	asm.Func(name+"(q8 *int8, d, xsv *float32, words *uint32, wstride int, scales, biases *float32, sstride, groups, bpg, mode int, out *[32]float32)", 96)
	asm.Op("MOVD q8+0(FP), R0")
	asm.Op("MOVD d+8(FP), R1")
	asm.Op("MOVD xsv+16(FP), R2")
	asm.Op("MOVD words+24(FP), R4")
	asm.Op("MOVD wstride+32(FP), R16")
	for j := 1; j < 4; j++ {
		asm.Op("ADD R16, %s, %s", words[j-1], words[j])
	}
	asm.Op("MOVD scales+40(FP), R8")
	asm.Op("MOVD biases+48(FP), R12")
	asm.Op("MOVD sstride+56(FP), R16")
	for j := 1; j < 4; j++ {
		asm.Op("ADD R16, %s, %s", scales[j-1], scales[j])
		asm.Op("ADD R16, %s, %s", biases[j-1], biases[j])
	}
	asm.Op("MOVD groups+64(FP), R3")
	asm.Op("MOVD mode+80(FP), R16")
	asm.Op("MOVD $0x43000000, R17") // 128.0
	asm.Op("VDUP R17, V29.S4")
	if bits == 4 {
		asm.Op("VMOVI $15, V31.B16")
	} else {
		asm.Op("VMOVI $128, V31.B16")
	}
	for i := 0; i < 8; i++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	asm.Op("CBZ R3, %sdone", l)
	asm.Label(l + "group")
	for j := 0; j < 4; j++ {
		asm.Op("VLD1R.P 4(%s), [V%d.S4]", scales[j], 20+j)
	}
	asm.Op("MOVD bpg+72(FP), R17")
	asm.Label(l + "block")
	asm.Op("VLD1.P 32(R0), [V16.B16, V17.B16]")
	asm.Op("VLD1R.P 4(R1), [V18.S4]")
	for j := 0; j < 4; j++ {
		if bits == 4 {
			asm.Op("VLD1.P 16(%s), [V24.B16]", words[j])
			asm.Op("VAND V31.B16, V24.B16, V8.B16")
			asm.Op("VUSHR $4, V24.B16, V9.B16")
		} else {
			asm.Op("VLD1.P 32(%s), [V24.B16, V25.B16]", words[j])
			asm.Op("VEOR V31.B16, V24.B16, V8.B16") // Q−128 as a signed byte
			asm.Op("VEOR V31.B16, V25.B16, V9.B16")
		}
		asm.Op("VEOR V12.B16, V12.B16, V12.B16")
		asm.Op("VEOR V13.B16, V13.B16, V13.B16")
		asm.Word(enc.SDOT(12, 8, 16))
		asm.Word(enc.SDOT(13, 9, 17))
		asm.Word(enc.SCVTF4S(12, 12))
		asm.Word(enc.SCVTF4S(13, 13))
		asm.Word(enc.FMUL4S(14, 18, 20+j)) // d·s, rounded as qDotI8Go's
		asm.Op("VFMLA V14.S4, V12.S4, V%d.S4", 2*j)
		asm.Op("VFMLA V14.S4, V13.S4, V%d.S4", 2*j+1)
	}
	asm.Op("SUBS $1, R17, R17")
	asm.Op("BNE %sblock", l)
	// the group's bias term by mode: none, s, b, b + 128·s (fused, as fma32)
	asm.Op("CBZ R16, %snext", l)
	asm.Op("VLD1.P 32(R2), [V26.S4, V27.S4]")
	asm.Op("CMP $1, R16")
	asm.Op("BNE %sbias", l)
	for j := 0; j < 4; j++ {
		asm.Op("VFMLA V%d.S4, V26.S4, V%d.S4", 20+j, 2*j)
		asm.Op("VFMLA V%d.S4, V27.S4, V%d.S4", 20+j, 2*j+1)
	}
	asm.Op("B %snext", l)
	asm.Label(l + "bias")
	for j := 0; j < 4; j++ {
		asm.Op("VLD1R.P 4(%s), [V28.S4]", biases[j])
		asm.Op("CMP $3, R16")
		asm.Op("BNE %sb%d", l, j)
		asm.Op("VFMLA V29.S4, V%d.S4, V28.S4", 20+j)
		asm.Label(fmt.Sprintf("%sb%d", l, j))
		asm.Op("VFMLA V28.S4, V26.S4, V%d.S4", 2*j)
		asm.Op("VFMLA V28.S4, V27.S4, V%d.S4", 2*j+1)
	}
	asm.Label(l + "next")
	asm.Op("SUBS $1, R3, R3")
	asm.Op("BNE %sgroup", l)
	asm.Label(l + "done")
	store(88)
}

// The prefill tiles (qGemmPairs, qGemmQ8): two weight rows against four
// inputs packed side by side (packPairs, packQ8), the 64 fp32 sums of
// the tile (row j, input i: lanes 8(4j+i)…, as qGemmPairsGo's acc) in
// V0–V15, V(8j+2i) lanes 0–3 and V(8j+2i+1) lanes 4–7. A row's block is
// loaded and made signed bytes once for the four inputs (the decode
// kernels do that per input); per input and row the operations of the
// decode kernel in its order, so each lane has decoding's bits. The rows
// take turns (row 0's four inputs, then row 1's), so the inputs are read
// twice from L1 but the 32 registers hold the 16 sums.

// tileAccs loads the tile's sums from out (accum ≠ 0: a later part of K
// continues them, the same fused operations in the same order as one
// call over all of K) or zeroes them; R8 keeps out.
func tileAccs(l string, outOff, accumOff int) {
	asm.Op("MOVD out+%d(FP), R8", outOff)
	asm.Op("MOVD accum+%d(FP), R16", accumOff)
	asm.Op("CBZ R16, %szero", l)
	asm.Op("MOVD R8, R16")
	for r := 0; r < 16; r += 4 {
		asm.Op("VLD1.P 64(R16), [V%d.S4, V%d.S4, V%d.S4, V%d.S4]", r, r+1, r+2, r+3)
	}
	asm.Op("B %sstart", l)
	asm.Label(l + "zero")
	for r := 0; r < 16; r++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", r, r, r)
	}
	asm.Label(l + "start")
}

// tileStore writes the tile's sums back to out (R8).
func tileStore() {
	for r := 0; r < 16; r += 4 {
		asm.Op("VST1.P [V%d.S4, V%d.S4, V%d.S4, V%d.S4], 64(R8)", r, r+1, r+2, r+3)
	}
	asm.Op("RET")
}

// gemmPairs is qGemmPairs2x4NEON (qGemmPairsGo's tile; per input and row
// qDotRows4PairsNEON's operations). Registers: R0 q, R1 dv, R2 c16 (row
// 1 reads them through R0–R2, advancing them a pair; row 0 through
// copies in R9–R11), R3 pairs left, R4/R5 the rows' words, R6/R7 their
// scales, R8 out. V16–V17 the row's low nibbles (first block, second),
// V18–V19 its high ones, V20–V21 its two scales, V22–V25 an input's
// bytes, V26–V27 its int32 lanes (from −c), V28–V29 dv, then d·s, V30
// zero, V31 the nibble mask.
func gemmPairs() {
	l := "gp"
	asm.Func("qGemmPairs2x4NEON(q8 *int8, dv *float32, c16 *int16, words *uint32, wstride int, scales *float32, sstride, pairs, accum int, out *[64]float32)", 80)
	asm.Op("MOVD q8+0(FP), R0")
	asm.Op("MOVD dv+8(FP), R1")
	asm.Op("MOVD c16+16(FP), R2")
	asm.Op("MOVD words+24(FP), R4")
	asm.Op("MOVD wstride+32(FP), R16")
	asm.Op("ADD R16, R4, R5")
	asm.Op("MOVD scales+40(FP), R6")
	asm.Op("MOVD sstride+48(FP), R16")
	asm.Op("ADD R16, R6, R7")
	asm.Op("MOVD pairs+56(FP), R3")
	asm.Op("VMOVI $15, V31.B16")
	asm.Op("VEOR V30.B16, V30.B16, V30.B16")
	tileAccs(l, 72, 64)
	asm.Op("CBZ R3, %sdone", l)
	asm.Label(l + "loop")
	for j := 0; j < 2; j++ {
		q, dv, c := "R9", "R10", "R11"
		if j == 0 {
			asm.Op("MOVD R0, R9")
			asm.Op("MOVD R1, R10")
			asm.Op("MOVD R2, R11")
		} else {
			q, dv, c = "R0", "R1", "R2"
		}
		asm.Op("VLD1.P 32(R%d), [V18.B16, V19.B16]", 4+j)
		asm.Op("VAND V31.B16, V18.B16, V16.B16")
		asm.Op("VUSHR $4, V18.B16, V18.B16")
		asm.Op("VAND V31.B16, V19.B16, V17.B16")
		asm.Op("VUSHR $4, V19.B16, V19.B16")
		asm.Op("VLD1R.P 4(R%d), [V20.S4]", 6+j)
		asm.Op("VLD1R.P 4(R%d), [V21.S4]", 6+j)
		for i := 0; i < 4; i++ {
			asm.Op("VLD1.P 64(%s), [V22.B16, V23.B16, V24.B16, V25.B16]", q)
			asm.Op("VLD1.P 32(%s), [V26.H8, V27.H8]", c)
			asm.Op("VLD1.P 32(%s), [V28.S4, V29.S4]", dv)
			// the folded bias term per int32 lane, c[2m] + c[2m+1], negated
			asm.Word(enc.SADDLP4S(26, 26))
			asm.Word(enc.SADDLP4S(27, 27))
			asm.Op("VSUB V26.S4, V30.S4, V26.S4")
			asm.Op("VSUB V27.S4, V30.S4, V27.S4")
			asm.Word(enc.SDOT(26, 16, 22)) // first block's low nibbles
			asm.Word(enc.SDOT(26, 18, 24)) // and high ones
			asm.Word(enc.SDOT(27, 17, 23)) // second block's
			asm.Word(enc.SDOT(27, 19, 25))
			asm.Word(enc.SCVTF4S(26, 26))
			asm.Word(enc.SCVTF4S(27, 27))
			asm.Word(enc.FMUL4S(28, 28, 20)) // d·s, rounded as qPairGo's
			asm.Word(enc.FMUL4S(29, 29, 21))
			acc := 8*j + 2*i
			asm.Op("VFMLA V28.S4, V26.S4, V%d.S4", acc)
			asm.Op("VFMLA V29.S4, V27.S4, V%d.S4", acc+1)
		}
	}
	asm.Op("SUBS $1, R3, R3")
	asm.Op("BNE %sloop", l)
	asm.Label(l + "done")
	tileStore()
}

// gemmQ8 is qGemmQ8x2x4NEON (qGemmQ8Go's tile; per input and row
// qDotRows4I8Q8NEON's operations, a group being one block), one loop
// for mode qI8NoBias and one for qI8Bias128. Registers: R0 q, R1 d, R2
// xsv (row 1 reads them through R0–R2, advancing them a block; row 0
// through copies in R10, R11, R14), R3 blocks left, R4/R5 the rows'
// words, R6/R7 their scales, R12/R13 their biases, R8 out, R9 mode. V16–
// V17 the row's Q−128, V18–V19 an input's lane sums xsv, V20 s, V21 the
// bias factor b + 128·s, V22–V23 an input's bytes, V24 d, then d·s,
// V26–V27 the int32 lanes, V29 128.0, V31 the sign bytes.
func gemmQ8() {
	l := "gq"
	asm.Func("qGemmQ8x2x4NEON(q8 *int8, d, xsv *float32, words *uint32, wstride int, scales, biases *float32, sstride, blocks, mode, accum int, out *[64]float32)", 96)
	asm.Op("MOVD q8+0(FP), R0")
	asm.Op("MOVD d+8(FP), R1")
	asm.Op("MOVD xsv+16(FP), R2")
	asm.Op("MOVD words+24(FP), R4")
	asm.Op("MOVD wstride+32(FP), R16")
	asm.Op("ADD R16, R4, R5")
	asm.Op("MOVD scales+40(FP), R6")
	asm.Op("MOVD biases+48(FP), R12")
	asm.Op("MOVD sstride+56(FP), R16")
	asm.Op("ADD R16, R6, R7")
	asm.Op("ADD R16, R12, R13")
	asm.Op("MOVD blocks+64(FP), R3")
	asm.Op("MOVD mode+72(FP), R9")
	asm.Op("MOVD $0x43000000, R16") // 128.0
	asm.Op("VDUP R16, V29.S4")
	asm.Op("VMOVI $128, V31.B16")
	tileAccs(l, 88, 80)
	asm.Op("CBZ R3, %sdone", l)
	asm.Op("CMP $%d, R9", 3) // qI8Bias128
	asm.Op("BEQ %sbias", l)
	gemmQ8Loop(l+"loop", false)
	asm.Op("B %sdone", l)
	gemmQ8Loop(l+"bias", true)
	asm.Label(l + "done")
	tileStore()
}

// gemmQ8Loop is gemmQ8's loop over blocks, with the bias term or not.
func gemmQ8Loop(l string, bias bool) {
	asm.Label(l)
	for j := 0; j < 2; j++ {
		q, d, xs := "R10", "R11", "R14"
		if j == 0 {
			asm.Op("MOVD R0, R10")
			asm.Op("MOVD R1, R11")
			asm.Op("MOVD R2, R14")
		} else {
			q, d, xs = "R0", "R1", "R2"
		}
		asm.Op("VLD1.P 32(R%d), [V16.B16, V17.B16]", 4+j)
		asm.Op("VEOR V31.B16, V16.B16, V16.B16") // Q−128 as a signed byte
		asm.Op("VEOR V31.B16, V17.B16, V17.B16")
		asm.Op("VLD1R.P 4(R%d), [V20.S4]", 6+j)
		if bias {
			asm.Op("VLD1R.P 4(R%d), [V21.S4]", 12+j)
			asm.Op("VFMLA V29.S4, V20.S4, V21.S4") // b + 128·s, fused as fma32
		}
		for i := 0; i < 4; i++ {
			asm.Op("VLD1.P 32(%s), [V22.B16, V23.B16]", q)
			asm.Op("VLD1R.P 4(%s), [V24.S4]", d)
			asm.Op("VEOR V26.B16, V26.B16, V26.B16")
			asm.Op("VEOR V27.B16, V27.B16, V27.B16")
			asm.Word(enc.SDOT(26, 16, 22))
			asm.Word(enc.SDOT(27, 17, 23))
			asm.Word(enc.SCVTF4S(26, 26))
			asm.Word(enc.SCVTF4S(27, 27))
			asm.Word(enc.FMUL4S(24, 24, 20)) // d·s, rounded as qGemmQ8Go's
			acc := 8*j + 2*i
			asm.Op("VFMLA V24.S4, V26.S4, V%d.S4", acc)
			asm.Op("VFMLA V24.S4, V27.S4, V%d.S4", acc+1)
			if bias {
				asm.Op("VLD1.P 32(%s), [V18.S4, V19.S4]", xs)
				asm.Op("VFMLA V21.S4, V18.S4, V%d.S4", acc)
				asm.Op("VFMLA V21.S4, V19.S4, V%d.S4", acc+1)
			}
		}
	}
	asm.Op("SUBS $1, R3, R3")
	asm.Op("BNE %s", l)
}

// gemmPairsSMMLA is qGemmPairsSMMLA2x4NEON (qkernel_int8_smmla_arm64.go:
// the pair layout's tile with SMMLA, on inputs packed by packPairsSMMLA).
// Its sums are held per input pair P, block h and lane m as SMMLA's 2×2
// result (row 0 × inputs 2P, 2P+1, row 1 × the same) in V(8P+4h+m), and
// transposed from and to qGemmPairsGo's lanes at the ends (tileSMMLAT).
// Per pair: the two rows' nibbles, made signed (Q − 8), zipped into the
// eight 2×8 matrices A(h, m) (row 0's four low-nibble bytes of lane m and
// its four high-nibble bytes, then row 1's) in V24–V31; the scales as
// S(h) = (s0, s0, s1, s1) in V16–V17; then per P and h the inputs' four
// 8×2 matrices in V18–V21 and d·S(h) in V22, and per m SMMLA into the
// zeroed V23, converted and multiplied into the sums. Registers: R0 q,
// R1 dv, R3 pairs left, R4/R5 the rows' words, R6/R7 their scales, R8
// out; the nibbles' zips in V16–V23 (row 0, row 1), the masks 0x0f and 8
// in V30–V31 before A overwrites them.
func gemmPairsSMMLA() {
	l := "gs"
	asm.Func("qGemmPairsSMMLA2x4NEON(q8 *int8, dv *float32, words *uint32, wstride int, scales *float32, sstride, pairs, accum int, out *[64]float32)", 72)
	asm.Op("MOVD q8+0(FP), R0")
	asm.Op("MOVD dv+8(FP), R1")
	asm.Op("MOVD words+16(FP), R4")
	asm.Op("MOVD wstride+24(FP), R16")
	asm.Op("ADD R16, R4, R5")
	asm.Op("MOVD scales+32(FP), R6")
	asm.Op("MOVD sstride+40(FP), R16")
	asm.Op("ADD R16, R6, R7")
	asm.Op("MOVD pairs+48(FP), R3")
	asm.Op("MOVD out+64(FP), R8")
	asm.Op("MOVD accum+56(FP), R16")
	asm.Op("CBZ R16, %szero", l)
	for P := 0; P < 2; P++ {
		for h := 0; h < 2; h++ {
			for c := 0; c < 4; c++ {
				asm.Op("FMOVQ %d(R8), F%d", tileSMMLAOffset(P, h, c), 16+c)
			}
			tileSMMLAT([4]int{16, 17, 18, 19}, [4]int{8*P + 4*h, 8*P + 4*h + 1, 8*P + 4*h + 2, 8*P + 4*h + 3})
		}
	}
	asm.Op("B %sloop", l)
	asm.Label(l + "zero")
	for r := 0; r < 16; r++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", r, r, r)
	}
	asm.Label(l + "loop") // pairs ≥ 1 (qGemmPairsSMMLA)
	smmlaRows()
	for P := 0; P < 2; P++ {
		for h := 0; h < 2; h++ {
			asm.Op("VLD1.P 64(R0), [V18.B16, V19.B16, V20.B16, V21.B16]")
			asm.Op("VLD1.P 16(R1), [V22.S4]")
			asm.Word(enc.FMUL4S(22, 22, 16+h)) // d·s, rounded as qPairGo's
			for m := 0; m < 4; m++ {
				asm.Op("VEOR V23.B16, V23.B16, V23.B16")
				asm.Word(enc.SMMLA(23, 24+4*h+m, 18+m))
				asm.Word(enc.SCVTF4S(23, 23))
				asm.Op("VFMLA V22.S4, V23.S4, V%d.S4", 8*P+4*h+m)
			}
		}
	}
	asm.Op("ADD $64, R1") // the pair's 16 dv slots not read
	asm.Op("SUBS $1, R3, R3")
	asm.Op("BNE %sloop", l)
	for P := 0; P < 2; P++ {
		for h := 0; h < 2; h++ {
			tileSMMLAT([4]int{8*P + 4*h, 8*P + 4*h + 1, 8*P + 4*h + 2, 8*P + 4*h + 3}, [4]int{16, 17, 18, 19})
			for c := 0; c < 4; c++ {
				asm.Op("FMOVQ F%d, %d(R8)", 16+c, tileSMMLAOffset(P, h, c))
			}
		}
	}
	asm.Op("RET")
}

// smmlaRows is gemmPairsSMMLA's per pair work on the two rows: their
// nibbles, signed, as the matrices A(h, m) in V24–V31, their scales as
// S(0), S(1) in V16–V17.
func smmlaRows() {
	asm.Op("VMOVI $15, V30.B16")
	asm.Op("VMOVI $8, V31.B16")
	for j := 0; j < 2; j++ {
		asm.Op("VLD1.P 32(R%d), [V24.B16, V25.B16]", 4+j)
		asm.Op("VAND V30.B16, V24.B16, V26.B16") // first block's low nibbles
		asm.Op("VUSHR $4, V24.B16, V24.B16")     // and high ones
		asm.Op("VAND V30.B16, V25.B16, V27.B16") // second block's
		asm.Op("VUSHR $4, V25.B16, V25.B16")
		for _, v := range []int{26, 24, 27, 25} {
			asm.Op("VSUB V31.B16, V%d.B16, V%d.B16", v, v) // Q − 8
		}
		// per block, lanes (m0, m1) and (m2, m3): each lane's four low
		// nibbles, then its four high ones
		z := 16 + 4*j
		asm.Op("VZIP1 V24.S4, V26.S4, V%d.S4", z)
		asm.Op("VZIP2 V24.S4, V26.S4, V%d.S4", z+1)
		asm.Op("VZIP1 V25.S4, V27.S4, V%d.S4", z+2)
		asm.Op("VZIP2 V25.S4, V27.S4, V%d.S4", z+3)
	}
	for h := 0; h < 2; h++ {
		for m := 0; m < 4; m++ {
			z0, z1, op := 16+2*h+m/2, 20+2*h+m/2, "VZIP1"
			if m%2 == 1 {
				op = "VZIP2"
			}
			asm.Op("%s V%d.D2, V%d.D2, V%d.D2", op, z1, z0, 24+4*h+m) // A(h, m): row 0's 8 bytes, row 1's
		}
	}
	asm.Op("FMOVD (R6), F16")
	asm.Op("FMOVD (R7), F17")
	asm.Op("ADD $8, R6")
	asm.Op("ADD $8, R7")
	asm.Op("VZIP1 V17.S4, V16.S4, V18.S4") // (s0 h0, s1 h0, s0 h1, s1 h1)
	asm.Op("VZIP1 V18.S4, V18.S4, V16.S4") // S(0)
	asm.Op("VZIP2 V18.S4, V18.S4, V17.S4") // S(1)
}

// tileSMMLAOffset is the byte offset in out (qGemmPairsGo's acc) of the
// four lanes m of block h for row c/2 and input 2P + c%2.
func tileSMMLAOffset(P, h, c int) int {
	return 4 * (8*(4*(c/2)+2*P+c%2) + 4*h)
}

// tileSMMLAT writes the transpose of the 4×4 matrix in registers src
// (rows) to dst, through V20–V23: TRN1/TRN2 of lanes, then of halves.
func tileSMMLAT(src, dst [4]int) {
	asm.Op("VTRN1 V%d.S4, V%d.S4, V20.S4", src[1], src[0])
	asm.Op("VTRN2 V%d.S4, V%d.S4, V21.S4", src[1], src[0])
	asm.Op("VTRN1 V%d.S4, V%d.S4, V22.S4", src[3], src[2])
	asm.Op("VTRN2 V%d.S4, V%d.S4, V23.S4", src[3], src[2])
	asm.Op("VTRN1 V22.D2, V20.D2, V%d.D2", dst[0])
	asm.Op("VTRN1 V23.D2, V21.D2, V%d.D2", dst[1])
	asm.Op("VTRN2 V22.D2, V20.D2, V%d.D2", dst[2])
	asm.Op("VTRN2 V23.D2, V21.D2, V%d.D2", dst[3])
}

func main() {
	pairs()
	gen(4)
	gen(8)
	gemmPairs()
	gemmQ8()
	gemmPairsSMMLA()
	asm.Save("qkernel_int8_neon_arm64.s") // or the path given (TestNEONGenerated)
}
