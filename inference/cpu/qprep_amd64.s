//go:build amd64 && !purego

#include "textflag.h"

// func qPrepAVX512(dst, src *float32, groups, bpg int, perm *uint32, scale *float32, mul float32)
// qPrep.prepare for one row: per block of 32 inputs the 32 prepared slots
// (slot j = src[perm[j]]·scale[j], two VPERMI2PS over the block's two
// halves), the eight lane sums added plane by plane as prepare adds them
// (slot order), and after each group's bpg blocks its sums times mul.
TEXT ·qPrepAVX512(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ bpg+24(FP), R8
	MOVQ perm+32(FP), AX
	MOVQ scale+40(FP), BX
	VMOVDQU32 (AX), Z16
	VMOVDQU32 64(AX), Z17
	VMOVUPS (BX), Z18
	VMOVUPS 64(BX), Z19
	VBROADCASTSS mul+48(FP), Y20

qpgroup:
	TESTQ CX, CX
	JZ    qpdone
	VXORPS Y0, Y0, Y0
	MOVQ  R8, DX

qpblock:
	VMOVUPS    (SI), Z1
	VMOVUPS    64(SI), Z2
	VMOVAPS    Z16, Z3
	VPERMI2PS  Z2, Z1, Z3 // planes 0 and 1
	VMOVAPS    Z17, Z4
	VPERMI2PS  Z2, Z1, Z4 // planes 2 and 3
	VADDPS     Y3, Y0, Y0
	VEXTRACTF64X4 $1, Z3, Y5
	VADDPS     Y5, Y0, Y0
	VADDPS     Y4, Y0, Y0
	VEXTRACTF64X4 $1, Z4, Y6
	VADDPS     Y6, Y0, Y0
	VMULPS     Z18, Z3, Z3
	VMULPS     Z19, Z4, Z4
	VMOVUPS    Z3, (DI)
	VMOVUPS    Z4, 64(DI)
	ADDQ       $128, SI
	ADDQ       $128, DI
	DECQ       DX
	JNZ        qpblock

	VMULPS  Y20, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JMP     qpgroup

qpdone:
	VZEROUPPER
	RET
