//go:build amd64 && !purego

#include "textflag.h"

// func wsumRowsF32AVX2(o *float32, v *float32, ld int, p *float32, nrows, n int)
// o[i] += p[j]·v[j*ld+i] for j < nrows in order, i < n (a multiple of 8):
// per lane a multiply, then an add with the product as first operand,
// exactly as axpyF32AVX2 (so NaN payloads match too). Columns go in
// blocks of 32 held in registers across all rows.
TEXT ·wsumRowsF32AVX2(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ ld+16(FP), BX
	SHLQ $2, BX
	MOVQ p+24(FP), DX
	MOVQ nrows+32(FP), R13
	MOVQ n+40(FP), CX

wf32blk:
	CMPQ CX, $32
	JL   wf8blk
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ SI, R8
	MOVQ DX, R9
	MOVQ R13, R10

wf32row:
	TESTQ R10, R10
	JZ    wf32store
	VBROADCASTSS (R9), Y4
	VMULPS 0(R8), Y4, Y5
	VMULPS 32(R8), Y4, Y6
	VMULPS 64(R8), Y4, Y7
	VMULPS 96(R8), Y4, Y8
	VADDPS Y0, Y5, Y0
	VADDPS Y1, Y6, Y1
	VADDPS Y2, Y7, Y2
	VADDPS Y3, Y8, Y3
	ADDQ BX, R8
	ADDQ $4, R9
	DECQ R10
	JMP  wf32row

wf32store:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  wf32blk

wf8blk:
	CMPQ CX, $8
	JL   wf32done
	VMOVUPS (DI), Y0
	MOVQ SI, R8
	MOVQ DX, R9
	MOVQ R13, R10

wf8row:
	TESTQ R10, R10
	JZ    wf8store
	VBROADCASTSS (R9), Y4
	VMULPS (R8), Y4, Y5
	VADDPS Y0, Y5, Y0
	ADDQ BX, R8
	ADDQ $4, R9
	DECQ R10
	JMP  wf8row

wf8store:
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  wf8blk

wf32done:
	VZEROUPPER
	RET

// func wsumRowsBF16AVX2(o *float32, v *uint16, ld int, p *float32, nrows, n int)
// wsumRowsF32AVX2 over bfloat16 rows, each widened exactly first.
TEXT ·wsumRowsBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ ld+16(FP), BX
	SHLQ $1, BX
	MOVQ p+24(FP), DX
	MOVQ nrows+32(FP), R13
	MOVQ n+40(FP), CX

wh32blk:
	CMPQ CX, $32
	JL   wh8blk
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ SI, R8
	MOVQ DX, R9
	MOVQ R13, R10

wh32row:
	TESTQ R10, R10
	JZ    wh32store
	VBROADCASTSS (R9), Y4
	VPMOVZXWD 0(R8), Y9
	VPSLLD $16, Y9, Y9
	VPMOVZXWD 16(R8), Y10
	VPSLLD $16, Y10, Y10
	VPMOVZXWD 32(R8), Y11
	VPSLLD $16, Y11, Y11
	VPMOVZXWD 48(R8), Y12
	VPSLLD $16, Y12, Y12
	VMULPS Y9, Y4, Y5
	VMULPS Y10, Y4, Y6
	VMULPS Y11, Y4, Y7
	VMULPS Y12, Y4, Y8
	VADDPS Y0, Y5, Y0
	VADDPS Y1, Y6, Y1
	VADDPS Y2, Y7, Y2
	VADDPS Y3, Y8, Y3
	ADDQ BX, R8
	ADDQ $4, R9
	DECQ R10
	JMP  wh32row

wh32store:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $64, SI
	SUBQ $32, CX
	JMP  wh32blk

wh8blk:
	CMPQ CX, $8
	JL   wh8done
	VMOVUPS (DI), Y0
	MOVQ SI, R8
	MOVQ DX, R9
	MOVQ R13, R10

wh8row:
	TESTQ R10, R10
	JZ    wh8store
	VBROADCASTSS (R9), Y4
	VPMOVZXWD (R8), Y9
	VPSLLD $16, Y9, Y9
	VMULPS Y9, Y4, Y5
	VADDPS Y0, Y5, Y0
	ADDQ BX, R8
	ADDQ $4, R9
	DECQ R10
	JMP  wh8row

wh8store:
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $8, CX
	JMP  wh8blk

wh8done:
	VZEROUPPER
	RET

// Constants of math.archExp (exp_amd64.s), each four times for 256-bit
// operands.
#define EXPC(off, bits) DATA expv<>+off(SB)/8, $bits; DATA expv<>+(off+8)(SB)/8, $bits; DATA expv<>+(off+16)(SB)/8, $bits; DATA expv<>+(off+24)(SB)/8, $bits

EXPC(0, 0x3ff71547652b82fe)   // LOG2E
EXPC(32, 0x3fe62e42fefa3000)  // LN2U
EXPC(64, 0x3d53de6af278ece6)  // LN2L
EXPC(96, 0x3fb0000000000000)  // 0.0625
EXPC(128, 0x3efa01a01a01a01a) // 2.4801587301587301587e-5
EXPC(160, 0x3f2a01a01a01a01a) // 1.9841269841269841270e-4
EXPC(192, 0x3f56c16c16c16c17) // 1.3888888888888888889e-3
EXPC(224, 0x3f81111111111111) // 8.3333333333333333333e-3
EXPC(256, 0x3fa5555555555555) // 4.1666666666666666667e-2
EXPC(288, 0x3fc5555555555555) // 1.6666666666666666667e-1
EXPC(320, 0x3fe0000000000000) // 0.5
EXPC(352, 0x3ff0000000000000) // 1.0
EXPC(384, 0x4000000000000000) // 2.0
EXPC(416, 0x4085e00000000000) // 700: |x| above it takes the scalar path
EXPC(448, 0x7fffffffffffffff) // abs mask
EXPC(480, 0x000003ff000003ff) // exponent bias, as int32s
GLOBL expv<>(SB), RODATA, $512

// func expF32AVX2(dst, src *float32, n int) int
// dst[i] = float32(math.Exp(float64(src[i]))) four at a time, by the
// operations of math.archExp's FMA path in the same order (so bit for bit
// the same double, then the same rounding to float32), for n a multiple
// of 4. It stops before the first four holding a value outside
// [−700, 700] or a NaN (the scalar path's special cases: overflow,
// underflow, subnormal results, non-finite input) and returns how many it
// did.
TEXT ·expF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	VMOVUPD expv<>+416(SB), Y14
	VMOVUPD expv<>+448(SB), Y15

	// eight at a time: two independent fours interleaved, to overlap the
	// long dependency chain of each
exp8loop:
	LEAQ 8(AX), R8
	CMPQ R8, CX
	JG   exploop
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y8
	VANDPD Y15, Y0, Y3
	VANDPD Y15, Y8, Y11
	VCMPPD $2, Y14, Y3, Y3
	VCMPPD $2, Y14, Y11, Y11
	VANDPD Y11, Y3, Y3
	VMOVMSKPD Y3, DX
	CMPQ DX, $15
	JNE  exploop // the fours one by one, to stop at the right one
	VMULPD expv<>+0(SB), Y0, Y1
	VMULPD expv<>+0(SB), Y8, Y9
	VCVTPD2DQY Y1, X2
	VCVTPD2DQY Y9, X10
	VCVTDQ2PD X2, Y1
	VCVTDQ2PD X10, Y9
	VFNMADD231PD expv<>+32(SB), Y1, Y0
	VFNMADD231PD expv<>+32(SB), Y9, Y8
	VFNMADD231PD expv<>+64(SB), Y1, Y0
	VFNMADD231PD expv<>+64(SB), Y9, Y8
	VMULPD expv<>+96(SB), Y0, Y0
	VMULPD expv<>+96(SB), Y8, Y8
	VMOVUPD expv<>+128(SB), Y1
	VMOVUPD expv<>+128(SB), Y9
	VFMADD213PD expv<>+160(SB), Y0, Y1
	VFMADD213PD expv<>+160(SB), Y8, Y9
	VFMADD213PD expv<>+192(SB), Y0, Y1
	VFMADD213PD expv<>+192(SB), Y8, Y9
	VFMADD213PD expv<>+224(SB), Y0, Y1
	VFMADD213PD expv<>+224(SB), Y8, Y9
	VFMADD213PD expv<>+256(SB), Y0, Y1
	VFMADD213PD expv<>+256(SB), Y8, Y9
	VFMADD213PD expv<>+288(SB), Y0, Y1
	VFMADD213PD expv<>+288(SB), Y8, Y9
	VFMADD213PD expv<>+320(SB), Y0, Y1
	VFMADD213PD expv<>+320(SB), Y8, Y9
	VFMADD213PD expv<>+352(SB), Y0, Y1
	VFMADD213PD expv<>+352(SB), Y8, Y9
	VMULPD Y1, Y0, Y0
	VMULPD Y9, Y8, Y8
	VADDPD expv<>+384(SB), Y0, Y1
	VADDPD expv<>+384(SB), Y8, Y9
	VMULPD Y1, Y0, Y0
	VMULPD Y9, Y8, Y8
	VADDPD expv<>+384(SB), Y0, Y1
	VADDPD expv<>+384(SB), Y8, Y9
	VMULPD Y1, Y0, Y0
	VMULPD Y9, Y8, Y8
	VADDPD expv<>+384(SB), Y0, Y1
	VADDPD expv<>+384(SB), Y8, Y9
	VMULPD Y1, Y0, Y0
	VMULPD Y9, Y8, Y8
	VADDPD expv<>+384(SB), Y0, Y1
	VADDPD expv<>+384(SB), Y8, Y9
	VFMADD213PD expv<>+352(SB), Y1, Y0
	VFMADD213PD expv<>+352(SB), Y9, Y8
	VPADDD expv<>+480(SB), X2, X2
	VPADDD expv<>+480(SB), X10, X10
	VPMOVSXDQ X2, Y2
	VPMOVSXDQ X10, Y10
	VPSLLQ $52, Y2, Y2
	VPSLLQ $52, Y10, Y10
	VMULPD Y2, Y0, Y0
	VMULPD Y10, Y8, Y8
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y8, X8
	VMOVUPS X0, (DI)(AX*4)
	VMOVUPS X8, 16(DI)(AX*4)
	ADDQ $8, AX
	JMP  exp8loop

exploop:
	CMPQ AX, CX
	JGE  expdone
	VCVTPS2PD (SI)(AX*4), Y0
	VANDPD Y15, Y0, Y3
	VCMPPD $2, Y14, Y3, Y3 // |x| <= 700, false for NaN
	VMOVMSKPD Y3, DX
	CMPQ DX, $15
	JNE  expdone
	VMULPD expv<>+0(SB), Y0, Y1 // x·LOG2E
	VCVTPD2DQY Y1, X2            // k, rounded to nearest
	VCVTDQ2PD X2, Y1
	VFNMADD231PD expv<>+32(SB), Y1, Y0 // x −= k·LN2U
	VFNMADD231PD expv<>+64(SB), Y1, Y0 // x −= k·LN2L
	VMULPD expv<>+96(SB), Y0, Y0
	VMOVUPD expv<>+128(SB), Y1
	VFMADD213PD expv<>+160(SB), Y0, Y1
	VFMADD213PD expv<>+192(SB), Y0, Y1
	VFMADD213PD expv<>+224(SB), Y0, Y1
	VFMADD213PD expv<>+256(SB), Y0, Y1
	VFMADD213PD expv<>+288(SB), Y0, Y1
	VFMADD213PD expv<>+320(SB), Y0, Y1
	VFMADD213PD expv<>+352(SB), Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD expv<>+384(SB), Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD expv<>+384(SB), Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD expv<>+384(SB), Y0, Y1
	VMULPD Y1, Y0, Y0
	VADDPD expv<>+384(SB), Y0, Y1
	VFMADD213PD expv<>+352(SB), Y1, Y0
	// · 2^k
	VPADDD expv<>+480(SB), X2, X2
	VPMOVSXDQ X2, Y2
	VPSLLQ $52, Y2, Y2
	VMULPD Y2, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)(AX*4)
	ADDQ $4, AX
	JMP  exp8loop

expdone:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// func siluQuotAVX2(o, x *float32, n int)
// o[i] = x[i] / (1 + o[i]) for i < n (a multiple of 8): the float32 add
// and the correctly rounded division of the Go expression, eight at a
// time (the scalar divisions were most of SiLU's time).
TEXT ·siluQuotAVX2(SB), NOSPLIT, $0-24
	MOVQ o+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVL $0x3f800000, DX
	MOVL DX, X15
	VBROADCASTSS X15, Y15

siluq8:
	CMPQ AX, CX
	JGE  siluqdone
	VADDPS (DI)(AX*4), Y15, Y0
	VMOVUPS (SI)(AX*4), Y1
	VDIVPS Y0, Y1, Y1
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ $8, AX
	JMP  siluq8

siluqdone:
	VZEROUPPER
	RET

// SCALARPASS applies op (VMULPS or VSUBPS) with the broadcast scalar in Y0
// as second operand to n floats at DI (n a multiple of 8): x·a or x − a,
// x first, as the Go loops compute them (so even NaN payloads match).
#define SCALARPASS(op, l32, l8, done) \
l32: \
	CMPQ CX, $32; \
	JL   l8; \
	VMOVUPS (DI), Y1; \
	VMOVUPS 32(DI), Y2; \
	VMOVUPS 64(DI), Y3; \
	VMOVUPS 96(DI), Y4; \
	op Y0, Y1, Y1; \
	op Y0, Y2, Y2; \
	op Y0, Y3, Y3; \
	op Y0, Y4, Y4; \
	VMOVUPS Y1, (DI); \
	VMOVUPS Y2, 32(DI); \
	VMOVUPS Y3, 64(DI); \
	VMOVUPS Y4, 96(DI); \
	ADDQ $128, DI; \
	SUBQ $32, CX; \
	JMP  l32; \
l8: \
	CMPQ CX, $8; \
	JL   done; \
	VMOVUPS (DI), Y1; \
	op Y0, Y1, Y1; \
	VMOVUPS Y1, (DI); \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP  l8; \
done: \
	VZEROUPPER; \
	RET

// func mulScalarAVX2(x *float32, n int, a float32)
TEXT ·mulScalarAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS a+16(FP), Y0
	SCALARPASS(VMULPS, ms32, ms8, msdone)

// func subScalarAVX2(x *float32, n int, a float32)
TEXT ·subScalarAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS a+16(FP), Y0
	SCALARPASS(VSUBPS, ss32, ss8, ssdone)
