//go:build amd64 && !purego

#include "textflag.h"

// The prefill GEMM's kernels (gemm_amd64.go). A panel is eight weight rows
// interleaved by eight: for each k-step of 8, rows 0…7's eight elements in
// turn (64 floats), so one 512-bit load holds two rows' lanes.

// the lanes where the reduction leaves outputs 0…7 (see gemm6x8F32AVX512)
DATA gemmIdx<>+0(SB)/4, $0
DATA gemmIdx<>+4(SB)/4, $4
DATA gemmIdx<>+8(SB)/4, $8
DATA gemmIdx<>+12(SB)/4, $12
DATA gemmIdx<>+16(SB)/4, $2
DATA gemmIdx<>+20(SB)/4, $6
DATA gemmIdx<>+24(SB)/4, $10
DATA gemmIdx<>+28(SB)/4, $14
DATA gemmIdx<>+32(SB)/4, $0
DATA gemmIdx<>+36(SB)/4, $0
DATA gemmIdx<>+40(SB)/4, $0
DATA gemmIdx<>+44(SB)/4, $0
DATA gemmIdx<>+48(SB)/4, $0
DATA gemmIdx<>+52(SB)/4, $0
DATA gemmIdx<>+56(SB)/4, $0
DATA gemmIdx<>+60(SB)/4, $0
GLOBL gemmIdx<>(SB), RODATA|NOPTR, $64

// func gemm6x8F32AVX512(x *float32, ldx int, p *float32, k int, out *float32, ldo int)
// out[i·ldo + j] = x[i·ldx : i·ldx+k] · (panel row j) for i < 6, j < 8; k a
// positive multiple of 8. Register Z(4i+q) holds the sums of x row i with
// panel rows 2q (low eight lanes) and 2q+1 (high eight): each output is one
// eight-lane fused accumulator over k, as in dot3x4F32AVX2, its lanes then
// summed ((0+4)+(1+5))+((2+6)+(3+7)), four outputs per instruction.
TEXT ·gemm6x8F32AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R8
	SHLQ $2, R8
	MOVQ p+16(FP), DI
	MOVQ k+24(FP), CX
	SHRQ $3, CX
	LEAQ (R8)(R8*2), R10
	LEAQ (R8)(R8*4), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
g68loop:
	VMOVUPS 0(DI), Z24
	VMOVUPS 64(DI), Z25
	VMOVUPS 128(DI), Z26
	VMOVUPS 192(DI), Z27
	VBROADCASTF32X8 (SI), Z28
	VFMADD231PS Z24, Z28, Z0
	VFMADD231PS Z25, Z28, Z1
	VFMADD231PS Z26, Z28, Z2
	VFMADD231PS Z27, Z28, Z3
	VBROADCASTF32X8 (SI)(R8*1), Z29
	VFMADD231PS Z24, Z29, Z4
	VFMADD231PS Z25, Z29, Z5
	VFMADD231PS Z26, Z29, Z6
	VFMADD231PS Z27, Z29, Z7
	VBROADCASTF32X8 (SI)(R8*2), Z30
	VFMADD231PS Z24, Z30, Z8
	VFMADD231PS Z25, Z30, Z9
	VFMADD231PS Z26, Z30, Z10
	VFMADD231PS Z27, Z30, Z11
	VBROADCASTF32X8 (SI)(R10*1), Z31
	VFMADD231PS Z24, Z31, Z12
	VFMADD231PS Z25, Z31, Z13
	VFMADD231PS Z26, Z31, Z14
	VFMADD231PS Z27, Z31, Z15
	VBROADCASTF32X8 (SI)(R8*4), Z28
	VFMADD231PS Z24, Z28, Z16
	VFMADD231PS Z25, Z28, Z17
	VFMADD231PS Z26, Z28, Z18
	VFMADD231PS Z27, Z28, Z19
	VBROADCASTF32X8 (SI)(R11*1), Z29
	VFMADD231PS Z24, Z29, Z20
	VFMADD231PS Z25, Z29, Z21
	VFMADD231PS Z26, Z29, Z22
	VFMADD231PS Z27, Z29, Z23
	ADDQ $32, SI
	ADDQ $256, DI
	DECQ CX
	JNZ g68loop
	MOVQ out+32(FP), DI
	MOVQ ldo+40(FP), R9
	SHLQ $2, R9
	VMOVDQU32 gemmIdx<>(SB), Z31
	// row 0: per register, the 128-bit blocks added pairwise: lane l of block 0 is a[l]+a[l+4] of the low output, block 2 of the high one
	VSHUFF32X4 $0xB1, Z0, Z0, Z24
	VADDPS Z24, Z0, Z0
	VSHUFF32X4 $0xB1, Z1, Z1, Z24
	VADDPS Z24, Z1, Z1
	VSHUFF32X4 $0xB1, Z2, Z2, Z24
	VADDPS Z24, Z2, Z2
	VSHUFF32X4 $0xB1, Z3, Z3, Z24
	VADDPS Z24, Z3, Z3
	// outputs 0…3 and 4…7, one per block
	VSHUFF32X4 $0x88, Z1, Z0, Z25
	VSHUFF32X4 $0x88, Z3, Z2, Z26
	// lanes 0 and 2 of a block: (s0+s1) and (s2+s3)
	VPERMILPS $0xB1, Z25, Z27
	VADDPS Z27, Z25, Z25
	VPERMILPS $0xB1, Z26, Z27
	VADDPS Z27, Z26, Z26
	VSHUFPS $0x88, Z26, Z25, Z28
	VPERMILPS $0xB1, Z28, Z29
	VADDPS Z29, Z28, Z28
	VPERMPS Z28, Z31, Z30
	VMOVUPS Y30, (DI)
	// row 1: per register, the 128-bit blocks added pairwise: lane l of block 0 is a[l]+a[l+4] of the low output, block 2 of the high one
	VSHUFF32X4 $0xB1, Z4, Z4, Z24
	VADDPS Z24, Z4, Z4
	VSHUFF32X4 $0xB1, Z5, Z5, Z24
	VADDPS Z24, Z5, Z5
	VSHUFF32X4 $0xB1, Z6, Z6, Z24
	VADDPS Z24, Z6, Z6
	VSHUFF32X4 $0xB1, Z7, Z7, Z24
	VADDPS Z24, Z7, Z7
	// outputs 0…3 and 4…7, one per block
	VSHUFF32X4 $0x88, Z5, Z4, Z25
	VSHUFF32X4 $0x88, Z7, Z6, Z26
	// lanes 0 and 2 of a block: (s0+s1) and (s2+s3)
	VPERMILPS $0xB1, Z25, Z27
	VADDPS Z27, Z25, Z25
	VPERMILPS $0xB1, Z26, Z27
	VADDPS Z27, Z26, Z26
	VSHUFPS $0x88, Z26, Z25, Z28
	VPERMILPS $0xB1, Z28, Z29
	VADDPS Z29, Z28, Z28
	VPERMPS Z28, Z31, Z30
	VMOVUPS Y30, (DI)(R9*1)
	// row 2: per register, the 128-bit blocks added pairwise: lane l of block 0 is a[l]+a[l+4] of the low output, block 2 of the high one
	VSHUFF32X4 $0xB1, Z8, Z8, Z24
	VADDPS Z24, Z8, Z8
	VSHUFF32X4 $0xB1, Z9, Z9, Z24
	VADDPS Z24, Z9, Z9
	VSHUFF32X4 $0xB1, Z10, Z10, Z24
	VADDPS Z24, Z10, Z10
	VSHUFF32X4 $0xB1, Z11, Z11, Z24
	VADDPS Z24, Z11, Z11
	// outputs 0…3 and 4…7, one per block
	VSHUFF32X4 $0x88, Z9, Z8, Z25
	VSHUFF32X4 $0x88, Z11, Z10, Z26
	// lanes 0 and 2 of a block: (s0+s1) and (s2+s3)
	VPERMILPS $0xB1, Z25, Z27
	VADDPS Z27, Z25, Z25
	VPERMILPS $0xB1, Z26, Z27
	VADDPS Z27, Z26, Z26
	VSHUFPS $0x88, Z26, Z25, Z28
	VPERMILPS $0xB1, Z28, Z29
	VADDPS Z29, Z28, Z28
	VPERMPS Z28, Z31, Z30
	VMOVUPS Y30, (DI)(R9*2)
	// row 3: per register, the 128-bit blocks added pairwise: lane l of block 0 is a[l]+a[l+4] of the low output, block 2 of the high one
	VSHUFF32X4 $0xB1, Z12, Z12, Z24
	VADDPS Z24, Z12, Z12
	VSHUFF32X4 $0xB1, Z13, Z13, Z24
	VADDPS Z24, Z13, Z13
	VSHUFF32X4 $0xB1, Z14, Z14, Z24
	VADDPS Z24, Z14, Z14
	VSHUFF32X4 $0xB1, Z15, Z15, Z24
	VADDPS Z24, Z15, Z15
	// outputs 0…3 and 4…7, one per block
	VSHUFF32X4 $0x88, Z13, Z12, Z25
	VSHUFF32X4 $0x88, Z15, Z14, Z26
	// lanes 0 and 2 of a block: (s0+s1) and (s2+s3)
	VPERMILPS $0xB1, Z25, Z27
	VADDPS Z27, Z25, Z25
	VPERMILPS $0xB1, Z26, Z27
	VADDPS Z27, Z26, Z26
	VSHUFPS $0x88, Z26, Z25, Z28
	VPERMILPS $0xB1, Z28, Z29
	VADDPS Z29, Z28, Z28
	VPERMPS Z28, Z31, Z30
	LEAQ (R9)(R9*2), R10
	VMOVUPS Y30, (DI)(R10*1)
	// row 4: per register, the 128-bit blocks added pairwise: lane l of block 0 is a[l]+a[l+4] of the low output, block 2 of the high one
	VSHUFF32X4 $0xB1, Z16, Z16, Z24
	VADDPS Z24, Z16, Z16
	VSHUFF32X4 $0xB1, Z17, Z17, Z24
	VADDPS Z24, Z17, Z17
	VSHUFF32X4 $0xB1, Z18, Z18, Z24
	VADDPS Z24, Z18, Z18
	VSHUFF32X4 $0xB1, Z19, Z19, Z24
	VADDPS Z24, Z19, Z19
	// outputs 0…3 and 4…7, one per block
	VSHUFF32X4 $0x88, Z17, Z16, Z25
	VSHUFF32X4 $0x88, Z19, Z18, Z26
	// lanes 0 and 2 of a block: (s0+s1) and (s2+s3)
	VPERMILPS $0xB1, Z25, Z27
	VADDPS Z27, Z25, Z25
	VPERMILPS $0xB1, Z26, Z27
	VADDPS Z27, Z26, Z26
	VSHUFPS $0x88, Z26, Z25, Z28
	VPERMILPS $0xB1, Z28, Z29
	VADDPS Z29, Z28, Z28
	VPERMPS Z28, Z31, Z30
	VMOVUPS Y30, (DI)(R9*4)
	// row 5: per register, the 128-bit blocks added pairwise: lane l of block 0 is a[l]+a[l+4] of the low output, block 2 of the high one
	VSHUFF32X4 $0xB1, Z20, Z20, Z24
	VADDPS Z24, Z20, Z20
	VSHUFF32X4 $0xB1, Z21, Z21, Z24
	VADDPS Z24, Z21, Z21
	VSHUFF32X4 $0xB1, Z22, Z22, Z24
	VADDPS Z24, Z22, Z22
	VSHUFF32X4 $0xB1, Z23, Z23, Z24
	VADDPS Z24, Z23, Z23
	// outputs 0…3 and 4…7, one per block
	VSHUFF32X4 $0x88, Z21, Z20, Z25
	VSHUFF32X4 $0x88, Z23, Z22, Z26
	// lanes 0 and 2 of a block: (s0+s1) and (s2+s3)
	VPERMILPS $0xB1, Z25, Z27
	VADDPS Z27, Z25, Z25
	VPERMILPS $0xB1, Z26, Z27
	VADDPS Z27, Z26, Z26
	VSHUFPS $0x88, Z26, Z25, Z28
	VPERMILPS $0xB1, Z28, Z29
	VADDPS Z29, Z28, Z28
	VPERMPS Z28, Z31, Z30
	LEAQ (R9)(R9*4), R10
	VMOVUPS Y30, (DI)(R10*1)
	VZEROUPPER
	RET

// func gemmPackF32AVX2(dst, src *float32, ld, m, k int)
// dst: the panel of rows src[j·ld : j·ld+k], j < m ≤ 8 (k a multiple of 8);
// rows m…7 are left as they are.
TEXT ·gemmPackF32AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ m+24(FP), DX
	MOVQ k+32(FP), R9
	SHRQ $3, R9

gpfrow:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, CX

gpfloop:
	VMOVUPS (AX), Y0
	VMOVUPS Y0, (BX)
	ADDQ $32, AX
	ADDQ $256, BX
	DECQ CX
	JNZ  gpfloop
	ADDQ R8, SI
	ADDQ $32, DI
	DECQ DX
	JNZ  gpfrow
	VZEROUPPER
	RET

// func gemmPackBF16AVX2(dst *float32, src *uint16, ld, m, k int)
// gemmPackF32AVX2 from bfloat16 rows, widened to fp32.
TEXT ·gemmPackBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $1, R8
	MOVQ m+24(FP), DX
	MOVQ k+32(FP), R9
	SHRQ $3, R9

gpbrow:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, CX

gpbloop:
	VPMOVZXWD (AX), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, (BX)
	ADDQ $16, AX
	ADDQ $256, BX
	DECQ CX
	JNZ  gpbloop
	ADDQ R8, SI
	ADDQ $32, DI
	DECQ DX
	JNZ  gpbrow
	VZEROUPPER
	RET

// func prefetchRows(p *byte, ld, m, n int)
// Asks for the n bytes at p, p+ld, … p+(m−1)·ld to be brought into L2
// (m, n > 0): the next panel's weights, fetched while this one computes.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ ld+8(FP), R8
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), R9

pfrow:
	MOVQ SI, AX
	MOVQ R9, CX

pfloop:
	PREFETCHT1 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JG   pfloop
	ADDQ R8, SI
	DECQ DX
	JNZ  pfrow
	RET
