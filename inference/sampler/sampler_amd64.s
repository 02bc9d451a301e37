//go:build amd64 && !purego

#include "textflag.h"

// func weighAVX2(l, w *float32, n int, maxv, floor, scale float32, tab *float32)
// n is a multiple of 8. The same float32 operations, in the same order and
// unfused, as weightScaled.
TEXT ·weighAVX2(SB), NOSPLIT, $0-48
	MOVQ l+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ tab+40(FP), DX
	VBROADCASTSS maxv+24(FP), Y10
	VBROADCASTSS floor+28(FP), Y11
	VBROADCASTSS scale+32(FP), Y12
	MOVL $0x4B400000, AX // 1.5·2^23
	MOVQ AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x00000FFF, AX // expTabLen - 1
	MOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x38000000, AX // 0.5/(128·128) = 2^-15
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x3C000000, AX // 1/128
	MOVQ AX, X8
	VPBROADCASTD X8, Y8
	MOVL $0x3F800000, AX // 1
	MOVQ AX, X9
	VPBROADCASTD X9, Y9

wloop:
	CMPQ CX, $0
	JLE  wdone
	VMOVUPS (SI), Y0
	VCMPPS $0x1D, Y11, Y0, Y1 // l >= floor (false for NaN)
	VSUBPS Y10, Y0, Y2        // y = (l - maxv)
	VMULPS Y12, Y2, Y2        //     · scale
	VSUBPS Y2, Y13, Y3        // t = shifter - y
	VPAND  Y14, Y3, Y4        // j
	VSUBPS Y13, Y3, Y5        // t - shifter
	VADDPS Y5, Y2, Y5         // d = y + (t - shifter)
	VMULPS Y15, Y5, Y6        // d·2^-15
	VADDPS Y8, Y6, Y6         // 1/128 + …
	VMULPS Y5, Y6, Y6         // d·(…)
	VADDPS Y9, Y6, Y6         // 1 + …
	VPCMPEQD Y7, Y7, Y7
	VXORPS Y3, Y3, Y3
	VGATHERDPS Y7, (DX)(Y4*4), Y3 // expTab[j]
	VMULPS Y6, Y3, Y3
	VANDPS Y1, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  wloop

wdone:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
// n is a multiple of 8. The largest value, NaNs skipped; -Inf if none.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0xFF800000, AX // -Inf
	MOVQ AX, X0
	VPBROADCASTD X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3

mloop32:
	CMPQ CX, $32
	JL   mloop8
	// VMAXPS returns its second source (Go: the first operand) when
	// either is NaN: the accumulator.
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y5, Y1
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  mloop32

mloop8:
	CMPQ CX, $8
	JL   mdone
	VMOVUPS (SI), Y4
	VMAXPS Y0, Y4, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  mloop8

mdone:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func indexAVX2(x *float32, n int, v float32) int
// n is a multiple of 8. The first index of v in x, or -1.
TEXT ·indexAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS v+16(FP), Y0
	XORQ DX, DX

iloop:
	CMPQ DX, CX
	JGE  inone
	VCMPPS $0x00, (SI)(DX*4), Y0, Y1 // EQ_OQ
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ  ifound
	ADDQ $8, DX
	JMP  iloop

ifound:
	BSFL AX, AX
	ADDQ AX, DX
	VZEROUPPER
	MOVQ DX, ret+24(FP)
	RET

inone:
	VZEROUPPER
	MOVQ $-1, ret+24(FP)
	RET
