//go:build amd64 && !purego

#include "textflag.h"

// The fast mode's input quantizer for the pair kernel in AVX2
// (qPrepPairsRowGo's bits; hand-written: one loop, no variants to
// generate). Per block of 32 inputs: amax = max|x|, d = amax/127 and
// id = 1/d by VDIVSS as Go divides, then id = 0 where d = 0 as Go leaves
// it (VCMPSS not-equal, true for NaN, as a mask): d is 0 for a block whose
// max|x| is at most 63 denormal steps too, where 1/d = +Inf would make the
// nonzero q ±127 and Go's are 0; q = x·id rounded half away from zero
// as trunc(v + copysign(0.49999997, v)) (equal to Go's float64
// trunc(v ± 0.5) for every float32 v: see TestQPrepPairsRowBitIdentical),
// clamped to ±127; NaN lanes (0·Inf when d is denormal enough that 1/d
// overflows, or ∞·0 when the block holds ±Inf) become 0 as Go's
// int8(NaN) does on amd64. max|x| is taken on the bits as unsigned
// integers (VPMAXUD): the order of non-negative floats, and a NaN's |bits|
// are above +Inf's, so a NaN input makes d NaN and the block's q 0 as Go's
// max does, rather than a NaN quietly dropped.

DATA qpi8c<>+0(SB)/4, $0x7fffffff  // |x| mask
DATA qpi8c<>+4(SB)/4, $0x80000000  // sign mask
DATA qpi8c<>+8(SB)/4, $0x3effffff  // 0.49999997, the float below 0.5
DATA qpi8c<>+12(SB)/4, $0x42fe0000 // 127
DATA qpi8c<>+16(SB)/4, $0xc2fe0000 // -127
DATA qpi8c<>+20(SB)/4, $0x3f800000 // 1
GLOBL qpi8c<>(SB), RODATA|NOPTR, $24

// VPERMD's indices: VPACKSSDW/VPACKSSWB leave the dwords of elements
// 0-3, 8-11, 16-19, 24-27 in the low lane and 4-7, … in the high one.
DATA qpi8perm<>+0(SB)/4, $0
DATA qpi8perm<>+4(SB)/4, $4
DATA qpi8perm<>+8(SB)/4, $1
DATA qpi8perm<>+12(SB)/4, $5
DATA qpi8perm<>+16(SB)/4, $2
DATA qpi8perm<>+20(SB)/4, $6
DATA qpi8perm<>+24(SB)/4, $3
DATA qpi8perm<>+28(SB)/4, $7
GLOBL qpi8perm<>(SB), RODATA|NOPTR, $32

// VPSHUFB's mask: per 16-byte lane the even bytes, then the odd ones.
DATA qpi8shuf<>+0(SB)/8, $0x0e0c0a0806040200
DATA qpi8shuf<>+8(SB)/8, $0x0f0d0b0907050301
DATA qpi8shuf<>+16(SB)/8, $0x0e0c0a0806040200
DATA qpi8shuf<>+24(SB)/8, $0x0f0d0b0907050301
GLOBL qpi8shuf<>(SB), RODATA|NOPTR, $32

DATA qpi8ones<>+0(SB)/8, $0x0101010101010101
DATA qpi8ones<>+8(SB)/8, $0x0101010101010101
DATA qpi8ones<>+16(SB)/8, $0x0101010101010101
DATA qpi8ones<>+24(SB)/8, $0x0101010101010101
GLOBL qpi8ones<>(SB), RODATA|NOPTR, $32

// QLANE quantizes the eight floats in R with id (Y4) into int32 lanes.
#define QLANE(R) \
	VMULPS     Y4, R, R; \
	VCMPPS     $3, R, R, Y5; \
	VANDNPS    R, Y5, R; \
	VANDPS     Y14, R, Y5; \
	VORPS      Y13, Y5, Y5; \
	VADDPS     Y5, R, R; \
	VMINPS     Y12, R, R; \
	VMAXPS     Y11, R, R; \
	VCVTTPS2DQ R, R

// QBLOCK quantizes the 32 floats at off(SI): D gets d (low lane), OUT the
// block's 16 even elements' bytes, then its 16 odd ones'.
#define QBLOCK(off, D, OUT) \
	VMOVUPS      off(SI), Y0; \
	VMOVUPS      off+32(SI), Y1; \
	VMOVUPS      off+64(SI), Y2; \
	VMOVUPS      off+96(SI), Y3; \
	VANDPS       Y15, Y0, Y4; \
	VANDPS       Y15, Y1, Y5; \
	VPMAXUD      Y5, Y4, Y4; \
	VANDPS       Y15, Y2, Y5; \
	VANDPS       Y15, Y3, Y6; \
	VPMAXUD      Y6, Y5, Y5; \
	VPMAXUD      Y5, Y4, Y4; \
	VEXTRACTF128 $1, Y4, X5; \
	VPMAXUD      X5, X4, X4; \
	VPERMILPS    $0x4e, X4, X5; \
	VPMAXUD      X5, X4, X4; \
	VPERMILPS    $0xb1, X4, X5; \
	VPMAXUD      X5, X4, X4; \
	VDIVSS       X12, X4, D; \
	VMOVSS       qpi8c<>+20(SB), X4; \
	VDIVSS       D, X4, X4; \
	VXORPS       X5, X5, X5; \
	VCMPSS       $4, X5, D, X5; \
	VANDPS       X5, X4, X4; \
	VBROADCASTSS X4, Y4; \
	QLANE(Y0); \
	QLANE(Y1); \
	QLANE(Y2); \
	QLANE(Y3); \
	VPACKSSDW    Y1, Y0, Y0; \
	VPACKSSDW    Y3, Y2, Y2; \
	VPACKSSWB    Y2, Y0, Y0; \
	VMOVDQU      qpi8perm<>(SB), Y5; \
	VPERMD       Y0, Y5, Y0; \
	VPSHUFB      qpi8shuf<>(SB), Y0, Y0; \
	VPERMQ       $0xd8, Y0, OUT

// func qPrepPairsAVX2(x *float32, q8 *int8, dv *float32, c16 *int16, pairs int)
// qPrepPairsRowGo: per pair of blocks (64 inputs) 64 bytes of q (the two
// blocks' even elements, then their odd ones), 8 floats of dv (d0 four
// times, d1 four times) and 16 int16 of c16 (8·the sum of each two
// adjacent bytes of the even half and of the odd half).
TEXT ·qPrepPairsAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q8+8(FP), DI
	MOVQ dv+16(FP), DX
	MOVQ c16+24(FP), BX
	MOVQ pairs+32(FP), CX
	VBROADCASTSS qpi8c<>+0(SB), Y15
	VBROADCASTSS qpi8c<>+4(SB), Y14
	VBROADCASTSS qpi8c<>+8(SB), Y13
	VBROADCASTSS qpi8c<>+12(SB), Y12
	VBROADCASTSS qpi8c<>+16(SB), Y11

qpi8loop:
	QBLOCK(0, X9, Y8)
	QBLOCK(128, X7, Y10)
	VPERM2I128   $0x20, Y10, Y8, Y0 // even elements of both blocks
	VPERM2I128   $0x31, Y10, Y8, Y1 // odd ones
	VMOVDQU      Y0, (DI)
	VMOVDQU      Y1, 32(DI)
	VMOVDQU      qpi8ones<>(SB), Y5
	VPMADDUBSW   Y0, Y5, Y0
	VPMADDUBSW   Y1, Y5, Y1
	VPADDW       Y1, Y0, Y0
	VPSLLW       $3, Y0, Y0
	VMOVDQU      Y0, (BX)
	VBROADCASTSS X9, X9
	VBROADCASTSS X7, X7
	VINSERTF128  $1, X7, Y9, Y9
	VMOVUPS      Y9, (DX)
	ADDQ         $256, SI
	ADDQ         $64, DI
	ADDQ         $32, DX
	ADDQ         $32, BX
	DECQ         CX
	JNZ          qpi8loop
	VZEROUPPER
	RET
