//go:build ignore

// Generates qkernel_neon_arm64.s: go run qkernel_neon_gen.go
//
// The exact mode's NEON kernels: prefill's dequantization of weight rows
// (qDequantQ*NEON) and 3×4 fp32 micro-kernel (dot3x4F32NEON), below, and
// the decode kernels: qkernel_amd64.s's AVX2 kernels
// (qDotRows4Q4AVX2, qDotRows4Q8AVX2) with each eight-lane YMM register
// held as two four-lane V registers (lanes 0–3 and 4–7). Every lane does
// the same operations in the same order — the group's first product a
// rounded multiply (FMUL), then fused multiply-adds (FMLA) in plane
// order, acc = sq·s + acc and acc = sx·b + acc per group, the lanes summed
// as ((0+4)+(1+5))+((2+6)+(3+7)) (FADD of the halves, then FADDP twice) —
// so the results are the AVX2 kernels' and qDotGo's bits. Go's assembler
// has no vector FMUL, FADD, FADDP or SCVTF: they are WORDs from
// internal/arm64enc.
//
// Registers: R0 the prepared input, R1–R4 the four rows' words, R5–R8
// their scales, R9–R12 their biases, R13 groups left, R14 blocks per
// group, R15 blocks left, R16 a temporary. V0–V7 the rows' sums acc (row
// j: V2j lanes 0–3, V2j+1 lanes 4–7), V8–V15 the rows' group sums sq
// (likewise), V16–V23 the block's prepared input (plane p: V16+2p,
// V17+2p), V24–V27 words and planes, V28–V31 the plane masks.
package main

import (
	"fmt"

	enc "etchat/internal/arm64enc"
)

// asm is the file being written.
var asm = enc.NewFile("qkernel_neon_gen.go")

var (
	words  = []string{"R1", "R2", "R3", "R4"}
	scales = []string{"R5", "R6", "R7", "R8"}
	biases = []string{"R9", "R10", "R11", "R12"}
)

// block is one block of 32 elements for the four rows: the prepared
// input's four planes loaded once, then per row its words split into
// planes, converted, and multiplied into sq (first: the group's first
// block, whose plane 0 is a plain multiply).
func block(bits int, first bool) {
	asm.Op("VLD1.P 64(R0), [V16.S4, V17.S4, V18.S4, V19.S4]")
	asm.Op("VLD1.P 64(R0), [V20.S4, V21.S4, V22.S4, V23.S4]")
	for j := 0; j < 4; j++ {
		if bits == 4 {
			asm.Op("VLD1.P 16(%s), [V24.S4]", words[j])
			asm.Op("VUSHR $4, V24.S4, V25.S4") // lanes 4–7: the same words' odd nibbles
		} else {
			asm.Op("VLD1.P 32(%s), [V24.S4, V25.S4]", words[j])
		}
		for pl := 0; pl < 4; pl++ {
			for h := 0; h < 2; h++ {
				w, t := 24+h, 26+h
				if bits == 8 && pl == 3 {
					asm.Op("VUSHR $24, V%d.S4, V%d.S4", w, t) // Q, not Q·2^24 (no int32 holds it)
				} else {
					asm.Op("VAND V%d.B16, V%d.B16, V%d.B16", 28+pl, w, t)
				}
				asm.Word(enc.SCVTF4S(t, t))
				sq, x := 8+2*j+h, 16+2*pl+h
				if first && pl == 0 {
					asm.Word(enc.FMUL4S(sq, x, t))
				} else {
					asm.Op("VFMLA V%d.S4, V%d.S4, V%d.S4", x, t, sq)
				}
			}
		}
	}
}

func gen(bits int) {
	name := fmt.Sprintf("qDotRows4Q%dNEON", bits)
	asm.Func(name+"(xp *float32, words *uint32, wstride int, scales, biases *float32, sstride, groups, bpg int, out *[4]float32)", 72)
	asm.Op("MOVD xp+0(FP), R0")
	asm.Op("MOVD words+8(FP), R1")
	asm.Op("MOVD wstride+16(FP), R16")
	asm.Op("ADD R16, R1, R2")
	asm.Op("ADD R16, R2, R3")
	asm.Op("ADD R16, R3, R4")
	asm.Op("MOVD scales+24(FP), R5")
	asm.Op("MOVD biases+32(FP), R9")
	asm.Op("MOVD sstride+40(FP), R16")
	for j := 1; j < 4; j++ {
		asm.Op("ADD R16, %s, %s", scales[j-1], scales[j])
		asm.Op("ADD R16, %s, %s", biases[j-1], biases[j])
	}
	asm.Op("MOVD groups+48(FP), R13")
	asm.Op("MOVD bpg+56(FP), R14")
	asm.Op("MOVD $qmask%d<>(SB), R16", bits)
	asm.Op("VLD1 (R16), [V28.S4, V29.S4, V30.S4, V31.S4]")
	for i := 0; i < 8; i++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	l := fmt.Sprintf("q%dn", bits)
	asm.Op("CBZ R13, %sdone", l)
	asm.Label(l + "group")
	asm.Op("MOVD R14, R15")
	block(bits, true)
	asm.Op("SUBS $1, R15, R15")
	asm.Op("BEQ %send", l)
	asm.Label(l + "block")
	block(bits, false)
	asm.Op("SUBS $1, R15, R15")
	asm.Op("BNE %sblock", l)
	asm.Label(l + "end")
	// the group's eight lane sums of x, then per row sq·s and sx·b
	asm.Op("VLD1.P 32(R0), [V16.S4, V17.S4]")
	for j := 0; j < 4; j++ {
		asm.Op("VLD1R.P 4(%s), [V24.S4]", scales[j])
		asm.Op("VLD1R.P 4(%s), [V25.S4]", biases[j])
		asm.Op("VFMLA V24.S4, V%d.S4, V%d.S4", 8+2*j, 2*j)
		asm.Op("VFMLA V24.S4, V%d.S4, V%d.S4", 9+2*j, 2*j+1)
		asm.Op("VFMLA V25.S4, V16.S4, V%d.S4", 2*j)
		asm.Op("VFMLA V25.S4, V17.S4, V%d.S4", 2*j+1)
	}
	asm.Op("SUBS $1, R13, R13")
	asm.Op("BNE %sgroup", l)
	asm.Label(l + "done")
	asm.Op("MOVD out+64(FP), R16")
	for j := 0; j < 4; j++ {
		asm.Word(enc.FADD4S(24, 2*j, 2*j+1)) // (0+4), (1+5), (2+6), (3+7)
		asm.Word(enc.FADDP4S(24, 24, 24))
		asm.Word(enc.FADDPS(24, 24))
		asm.Op("FMOVS F24, %d(R16)", 4*j)
	}
	asm.Op("RET")
}

// dot3x4 is dot3x4F32NEON, dot_amd64.s's dot3x4F32AVX2 (the prefill
// micro-kernel, dot3x4Go's order): out[4i+j] = x row i · w row j over n
// (a multiple of 8), each of the twelve sums one eight-lane fused
// accumulator, then its lanes summed as hsum8. Registers: R0–R2 the
// three x rows, R3–R6 the four w rows, R7 steps left, R8 a temporary.
// V0–V23 the sums (x row i, w row j: V8i+2j lanes 0–3, V8i+2j+1 lanes
// 4–7), V24–V29 the x rows' eight values, V30–V31 a w row's.
func dot3x4() {
	asm.Func("dot3x4F32NEON(x *float32, ldx int, w *float32, ldw int, n int, out *[12]float32)", 48)
	asm.Op("MOVD x+0(FP), R0")
	asm.Op("MOVD ldx+8(FP), R8")
	asm.Op("ADD R8<<2, R0, R1")
	asm.Op("ADD R8<<2, R1, R2")
	asm.Op("MOVD w+16(FP), R3")
	asm.Op("MOVD ldw+24(FP), R8")
	asm.Op("ADD R8<<2, R3, R4")
	asm.Op("ADD R8<<2, R4, R5")
	asm.Op("ADD R8<<2, R5, R6")
	asm.Op("MOVD n+32(FP), R7")
	asm.Op("LSR $3, R7, R7")
	for i := 0; i < 24; i++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	asm.Op("CBZ R7, d3x4done")
	asm.Label("d3x4loop")
	for i, r := range []string{"R0", "R1", "R2"} {
		asm.Op("VLD1.P 32(%s), [V%d.S4, V%d.S4]", r, 24+2*i, 25+2*i)
	}
	for j, r := range []string{"R3", "R4", "R5", "R6"} {
		asm.Op("VLD1.P 32(%s), [V30.S4, V31.S4]", r)
		for i := 0; i < 3; i++ {
			asm.Op("VFMLA V%d.S4, V30.S4, V%d.S4", 24+2*i, 8*i+2*j)
			asm.Op("VFMLA V%d.S4, V31.S4, V%d.S4", 25+2*i, 8*i+2*j+1)
		}
	}
	asm.Op("SUBS $1, R7, R7")
	asm.Op("BNE d3x4loop")
	asm.Label("d3x4done")
	asm.Op("MOVD out+40(FP), R8")
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			a := 8*i + 2*j
			asm.Word(enc.FADD4S(30, a, a+1))
			asm.Word(enc.FADDP4S(30, 30, 30))
			asm.Word(enc.FADDPS(30, 30))
			asm.Op("FMOVS F30, %d(R8)", 4*(4*i+j))
		}
	}
	asm.Op("RET")
}

// dequant is qDequantQ{4,8}NEON, qkernel_amd64.s's qDequantQ*AVX2 (the
// exact mode's prefill): a row's elements in order, each s·Q + b fused
// (FMLA onto b, as fma32). Registers: R0 dst, R1 words, R2 scales, R3
// biases, R4 groups left, R5 blocks per group, R6 blocks left. V0 the
// block's bytes (4-bit: V1 low, V2 high nibbles), V3–V4 its 32 elements
// as bytes in order, V5–V8 as uint16, V10–V17 as uint32 then fp32,
// V18–V25 the results, V29 b, V30 s, V31 the nibble mask.
func dequant(bits int) {
	name := fmt.Sprintf("qDequantQ%dNEON", bits)
	l := fmt.Sprintf("dq%d", bits)
	asm.Func(name+"(dst *float32, words *uint32, scales, biases *float32, groups, gs int)", 48)
	asm.Op("MOVD dst+0(FP), R0")
	asm.Op("MOVD words+8(FP), R1")
	asm.Op("MOVD scales+16(FP), R2")
	asm.Op("MOVD biases+24(FP), R3")
	asm.Op("MOVD groups+32(FP), R4")
	asm.Op("MOVD gs+40(FP), R5")
	asm.Op("LSR $5, R5, R5")
	asm.Op("VMOVI $15, V31.B16")
	asm.Op("CBZ R4, %sdone", l)
	asm.Op("CBZ R5, %sdone", l)
	asm.Label(l + "group")
	asm.Op("VLD1R.P 4(R2), [V30.S4]")
	asm.Op("VLD1R.P 4(R3), [V29.S4]")
	asm.Op("MOVD R5, R6")
	asm.Label(l + "block")
	if bits == 4 {
		// byte j holds elements 2j (low nibble) and 2j+1 (high)
		asm.Op("VLD1.P 16(R1), [V0.B16]")
		asm.Op("VAND V31.B16, V0.B16, V1.B16")
		asm.Op("VUSHR $4, V0.B16, V2.B16")
		asm.Op("VZIP1 V2.B16, V1.B16, V3.B16")
		asm.Op("VZIP2 V2.B16, V1.B16, V4.B16")
	} else {
		asm.Op("VLD1.P 32(R1), [V3.B16, V4.B16]") // byte k is element k
	}
	asm.Op("VUXTL V3.B8, V5.H8")
	asm.Op("VUXTL2 V3.B16, V6.H8")
	asm.Op("VUXTL V4.B8, V7.H8")
	asm.Op("VUXTL2 V4.B16, V8.H8")
	for i := 0; i < 4; i++ {
		asm.Op("VUXTL V%d.H4, V%d.S4", 5+i, 10+2*i)
		asm.Op("VUXTL2 V%d.H8, V%d.S4", 5+i, 11+2*i)
	}
	for i := 0; i < 8; i++ {
		asm.Word(enc.UCVTF4S(10+i, 10+i))
		asm.Op("VMOV V29.B16, V%d.B16", 18+i)
		asm.Op("VFMLA V30.S4, V%d.S4, V%d.S4", 10+i, 18+i)
	}
	asm.Op("VST1.P [V18.S4, V19.S4, V20.S4, V21.S4], 64(R0)")
	asm.Op("VST1.P [V22.S4, V23.S4, V24.S4, V25.S4], 64(R0)")
	asm.Op("SUBS $1, R6, R6")
	asm.Op("BNE %sblock", l)
	asm.Op("SUBS $1, R4, R4")
	asm.Op("BNE %sgroup", l)
	asm.Label(l + "done")
	asm.Op("RET")
}

func masks(bits int) {
	m := uint32(1)<<bits - 1
	for pl := 0; pl < 4; pl++ {
		for l := 0; l < 4; l++ {
			asm.Printf("DATA qmask%d<>+%d(SB)/4, $0x%x\n", bits, 16*pl+4*l, m<<(8*pl))
		}
	}
	asm.Printf("GLOBL qmask%d<>(SB), RODATA|NOPTR, $64\n", bits)
}

func main() {
	asm.Printf("\n")
	asm.Printf("// Plane masks: plane p of a word is word & (2^bits−1)<<8p (qkernel_amd64.s).\n")
	masks(4)
	masks(8)
	gen(4)
	gen(8)
	dot3x4()
	dequant(4)
	dequant(8)
	asm.Save("qkernel_neon_arm64.s") // or the path given (TestNEONGenerated)
}
