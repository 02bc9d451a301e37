//go:build amd64 && !purego

#include "textflag.h"
#include "lanesum_amd64.h"

// Quantized dot products (4- and 8-bit affine, MLX packing) in blocks of
// 32 elements: a block's words are loaded once and split into four
// planes of eight lanes, plane p lane l holding the element that the
// prepared input (qPrep) keeps at 8p+l of the block:
//   8-bit: 8 words; plane p = word & (0xff << 8p), lane l: element 4l+p;
//   4-bit: 4 words, each twice, the upper copy shifted right by 4;
//          plane p = . & (0xf << 8p), lane l<4: element 8l+2p, lane
//          l≥4: element 8(l−4)+2p+1.
// A plane is Q·2^(8p) (the 8-bit plane 3 is shifted down instead: it
// would not fit an int32); the prepared input is scaled by 2^(−8p) to
// match, which changes no product. Per group: sq = Σ x·Q over its
// blocks (the first product a multiply, then fused multiply-adds in
// plane order), then acc = sq·scale + acc, acc = sx·bias + acc (fused;
// sx: the group's lane sums of x, stored after its blocks: the bias
// term cancels most of the scale term group by group); the result is
// acc's eight lanes summed as ((0+4)+(1+5))+((2+6)+(3+7)). The Go
// kernels (qkernel_fast.go) do exactly these operations in this order.

DATA qshift4<>+0(SB)/4, $0
DATA qshift4<>+4(SB)/4, $0
DATA qshift4<>+8(SB)/4, $0
DATA qshift4<>+12(SB)/4, $0
DATA qshift4<>+16(SB)/4, $4
DATA qshift4<>+20(SB)/4, $4
DATA qshift4<>+24(SB)/4, $4
DATA qshift4<>+28(SB)/4, $4
GLOBL qshift4<>(SB), RODATA|NOPTR, $32

DATA qshift8<>+0(SB)/4, $0
DATA qshift8<>+4(SB)/4, $4
DATA qshift8<>+8(SB)/4, $8
DATA qshift8<>+12(SB)/4, $12
DATA qshift8<>+16(SB)/4, $16
DATA qshift8<>+20(SB)/4, $20
DATA qshift8<>+24(SB)/4, $24
DATA qshift8<>+28(SB)/4, $28
GLOBL qshift8<>(SB), RODATA|NOPTR, $32

DATA qmask4<>+0(SB)/4, $0xf
DATA qmask4<>+4(SB)/4, $0xf
DATA qmask4<>+8(SB)/4, $0xf
DATA qmask4<>+12(SB)/4, $0xf
DATA qmask4<>+16(SB)/4, $0xf
DATA qmask4<>+20(SB)/4, $0xf
DATA qmask4<>+24(SB)/4, $0xf
DATA qmask4<>+28(SB)/4, $0xf
DATA qmask4<>+32(SB)/4, $0xf00
DATA qmask4<>+36(SB)/4, $0xf00
DATA qmask4<>+40(SB)/4, $0xf00
DATA qmask4<>+44(SB)/4, $0xf00
DATA qmask4<>+48(SB)/4, $0xf00
DATA qmask4<>+52(SB)/4, $0xf00
DATA qmask4<>+56(SB)/4, $0xf00
DATA qmask4<>+60(SB)/4, $0xf00
DATA qmask4<>+64(SB)/4, $0xf0000
DATA qmask4<>+68(SB)/4, $0xf0000
DATA qmask4<>+72(SB)/4, $0xf0000
DATA qmask4<>+76(SB)/4, $0xf0000
DATA qmask4<>+80(SB)/4, $0xf0000
DATA qmask4<>+84(SB)/4, $0xf0000
DATA qmask4<>+88(SB)/4, $0xf0000
DATA qmask4<>+92(SB)/4, $0xf0000
DATA qmask4<>+96(SB)/4, $0xf000000
DATA qmask4<>+100(SB)/4, $0xf000000
DATA qmask4<>+104(SB)/4, $0xf000000
DATA qmask4<>+108(SB)/4, $0xf000000
DATA qmask4<>+112(SB)/4, $0xf000000
DATA qmask4<>+116(SB)/4, $0xf000000
DATA qmask4<>+120(SB)/4, $0xf000000
DATA qmask4<>+124(SB)/4, $0xf000000
GLOBL qmask4<>(SB), RODATA|NOPTR, $128
DATA qmask8<>+0(SB)/4, $0xff
DATA qmask8<>+4(SB)/4, $0xff
DATA qmask8<>+8(SB)/4, $0xff
DATA qmask8<>+12(SB)/4, $0xff
DATA qmask8<>+16(SB)/4, $0xff
DATA qmask8<>+20(SB)/4, $0xff
DATA qmask8<>+24(SB)/4, $0xff
DATA qmask8<>+28(SB)/4, $0xff
DATA qmask8<>+32(SB)/4, $0xff00
DATA qmask8<>+36(SB)/4, $0xff00
DATA qmask8<>+40(SB)/4, $0xff00
DATA qmask8<>+44(SB)/4, $0xff00
DATA qmask8<>+48(SB)/4, $0xff00
DATA qmask8<>+52(SB)/4, $0xff00
DATA qmask8<>+56(SB)/4, $0xff00
DATA qmask8<>+60(SB)/4, $0xff00
DATA qmask8<>+64(SB)/4, $0xff0000
DATA qmask8<>+68(SB)/4, $0xff0000
DATA qmask8<>+72(SB)/4, $0xff0000
DATA qmask8<>+76(SB)/4, $0xff0000
DATA qmask8<>+80(SB)/4, $0xff0000
DATA qmask8<>+84(SB)/4, $0xff0000
DATA qmask8<>+88(SB)/4, $0xff0000
DATA qmask8<>+92(SB)/4, $0xff0000
DATA qmask8<>+96(SB)/4, $0xff000000
DATA qmask8<>+100(SB)/4, $0xff000000
DATA qmask8<>+104(SB)/4, $0xff000000
DATA qmask8<>+108(SB)/4, $0xff000000
DATA qmask8<>+112(SB)/4, $0xff000000
DATA qmask8<>+116(SB)/4, $0xff000000
DATA qmask8<>+120(SB)/4, $0xff000000
DATA qmask8<>+124(SB)/4, $0xff000000
GLOBL qmask8<>(SB), RODATA|NOPTR, $128

// Q4WORDS loads one block's four words of each of the four rows into
// Y8..Y11, the upper four lanes shifted right by 4 (qshift4).
#define Q4WORDS \
	VBROADCASTI128 (DI), Y8; VPSRLVD qshift4<>(SB), Y8, Y8; \
	VBROADCASTI128 (R9), Y9; VPSRLVD qshift4<>(SB), Y9, Y9; \
	VBROADCASTI128 (R10), Y10; VPSRLVD qshift4<>(SB), Y10, Y10; \
	VBROADCASTI128 (R11), Y11; VPSRLVD qshift4<>(SB), Y11, Y11

// Q4PLANE(M, off, OP) is one plane of a block for the four rows: the
// plane's prepared input (at off(SI)) loaded once into Y13, each row's
// plane masked (M) and converted in Y12, then OP (VMULPS: the group's
// first product; VFMADD231PS: the rest) into the row's sum Y4..Y7.
#define Q4PLANE(M, off, OP) \
	VMOVUPS off(SI), Y13; \
	VPAND M, Y8, Y12; VCVTDQ2PS Y12, Y12; OP Y13, Y12, Y4; \
	VPAND M, Y9, Y12; VCVTDQ2PS Y12, Y12; OP Y13, Y12, Y5; \
	VPAND M, Y10, Y12; VCVTDQ2PS Y12, Y12; OP Y13, Y12, Y6; \
	VPAND M, Y11, Y12; VCVTDQ2PS Y12, Y12; OP Y13, Y12, Y7

// Q4NEXT moves the pointers past one block and prefetches the next rows.
#define Q4NEXT \
	ADDQ $128, SI; ADDQ $16, DI; ADDQ $16, R9; ADDQ $16, R10; ADDQ $16, R11; \
	PREFETCHT0 (AX); ADDQ $64, AX

// func qDotRows4Q4AVX2(xp *float32, words *uint32, wstride int, scales, biases *float32, sstride int, groups, bpg int, out *float32)
// out[j] = row j's dot with xp, j < 4: row j's words at words+j·wstride
// bytes, its scales and biases at +j·sstride bytes; groups groups of bpg
// blocks, each group's blocks followed in xp by its eight lane sums.
// Each plane's prepared input is loaded once for the four rows and two
// masks stay in registers: the loads, not the arithmetic, bounded the
// earlier form (45 loads a group; now 29).
TEXT ·qDotRows4Q4AVX2(SB), NOSPLIT, $0-72
	MOVQ xp+0(FP), SI
	MOVQ words+8(FP), DI
	MOVQ wstride+16(FP), R8
	MOVQ scales+24(FP), DX
	MOVQ biases+32(FP), R14
	MOVQ sstride+40(FP), BX
	MOVQ groups+48(FP), CX
	LEAQ (DI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (BX)(BX*2), R13
	// AX: the words of the next four rows, as far in as these are (the
	// hardware prefetchers lose track of rows read 16 bytes at a time)
	LEAQ (R11)(R8*1), AX
	VMOVDQU qmask4<>(SB), Y15
	VMOVDQU qmask4<>+32(SB), Y14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
q4r4group:
	TESTQ CX, CX
	JZ q4r4done
	Q4WORDS
	Q4PLANE(Y15, 0, VMULPS)
	Q4PLANE(Y14, 32, VFMADD231PS)
	Q4PLANE(qmask4<>+64(SB), 64, VFMADD231PS)
	Q4PLANE(qmask4<>+96(SB), 96, VFMADD231PS)
	Q4NEXT
	MOVQ bpg+56(FP), R12
	DECQ R12
	JZ q4r4scale
q4r4block:
	Q4WORDS
	Q4PLANE(Y15, 0, VFMADD231PS)
	Q4PLANE(Y14, 32, VFMADD231PS)
	Q4PLANE(qmask4<>+64(SB), 64, VFMADD231PS)
	Q4PLANE(qmask4<>+96(SB), 96, VFMADD231PS)
	Q4NEXT
	DECQ R12
	JNZ q4r4block
q4r4scale:
	VBROADCASTSS (DX), Y12
	VFMADD231PS Y12, Y4, Y0
	VBROADCASTSS (DX)(BX*1), Y13
	VFMADD231PS Y13, Y5, Y1
	VBROADCASTSS (DX)(BX*2), Y12
	VFMADD231PS Y12, Y6, Y2
	VBROADCASTSS (DX)(R13*1), Y13
	VFMADD231PS Y13, Y7, Y3
	VMOVUPS (SI), Y8
	VBROADCASTSS (R14), Y12
	VFMADD231PS Y12, Y8, Y0
	VBROADCASTSS (R14)(BX*1), Y13
	VFMADD231PS Y13, Y8, Y1
	VBROADCASTSS (R14)(BX*2), Y12
	VFMADD231PS Y12, Y8, Y2
	VBROADCASTSS (R14)(R13*1), Y13
	VFMADD231PS Y13, Y8, Y3
	PREFETCHT0 (DX)(BX*4)
	PREFETCHT0 (R14)(BX*4)
	ADDQ $32, SI
	ADDQ $4, R14
	ADDQ $4, DX
	DECQ CX
	JMP q4r4group
q4r4done:
	MOVQ out+64(FP), DI
	LANESUM8(Y0, X0, X12)
	MOVSS X0, 0(DI)
	LANESUM8(Y1, X1, X12)
	MOVSS X1, 4(DI)
	LANESUM8(Y2, X2, X12)
	MOVSS X2, 8(DI)
	LANESUM8(Y3, X3, X12)
	MOVSS X3, 12(DI)
	VZEROUPPER
	RET

// func qDotRows4Q8AVX2(xp *float32, words *uint32, wstride int, scales, biases *float32, sstride int, groups, bpg int, out *float32)
// out[j] = row j's dot with xp, j < 4: row j's words at words+j·wstride
// bytes, its scales and biases at +j·sstride bytes; groups groups of bpg
// blocks, each group's blocks followed in xp by its eight lane sums.
TEXT ·qDotRows4Q8AVX2(SB), NOSPLIT, $0-72
	MOVQ xp+0(FP), SI
	MOVQ words+8(FP), DI
	MOVQ wstride+16(FP), R8
	MOVQ scales+24(FP), DX
	MOVQ biases+32(FP), R14
	MOVQ sstride+40(FP), BX
	MOVQ groups+48(FP), CX
	LEAQ (DI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (BX)(BX*2), R13
	// AX: the words of the next four rows, as far in as these are (the
	// hardware prefetchers lose track of rows read 16 bytes at a time)
	LEAQ (R11)(R8*1), AX
	VMOVDQU qmask8<>(SB), Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
q8r4group:
	TESTQ CX, CX
	JZ q8r4done
	VMOVDQU (DI), Y8
	VMOVDQU (R9), Y9
	VMOVDQU (R10), Y10
	VMOVDQU (R11), Y11
	VPAND Y15, Y8, Y12
	VCVTDQ2PS Y12, Y12
	VMULPS 0(SI), Y12, Y4
	VPAND Y15, Y9, Y13
	VCVTDQ2PS Y13, Y13
	VMULPS 0(SI), Y13, Y5
	VPAND Y15, Y10, Y12
	VCVTDQ2PS Y12, Y12
	VMULPS 0(SI), Y12, Y6
	VPAND Y15, Y11, Y13
	VCVTDQ2PS Y13, Y13
	VMULPS 0(SI), Y13, Y7
	VPAND qmask8<>+32(SB), Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 32(SI), Y12, Y4
	VPAND qmask8<>+32(SB), Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 32(SI), Y13, Y5
	VPAND qmask8<>+32(SB), Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 32(SI), Y12, Y6
	VPAND qmask8<>+32(SB), Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 32(SI), Y13, Y7
	VPAND qmask8<>+64(SB), Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 64(SI), Y12, Y4
	VPAND qmask8<>+64(SB), Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 64(SI), Y13, Y5
	VPAND qmask8<>+64(SB), Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 64(SI), Y12, Y6
	VPAND qmask8<>+64(SB), Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 64(SI), Y13, Y7
	VPSRLD $24, Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 96(SI), Y12, Y4
	VPSRLD $24, Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 96(SI), Y13, Y5
	VPSRLD $24, Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 96(SI), Y12, Y6
	VPSRLD $24, Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 96(SI), Y13, Y7
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ $128, AX
	MOVQ bpg+56(FP), R12
	DECQ R12
	JZ q8r4scale
q8r4block:
	VMOVDQU (DI), Y8
	VMOVDQU (R9), Y9
	VMOVDQU (R10), Y10
	VMOVDQU (R11), Y11
	VPAND Y15, Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 0(SI), Y12, Y4
	VPAND Y15, Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 0(SI), Y13, Y5
	VPAND Y15, Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 0(SI), Y12, Y6
	VPAND Y15, Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 0(SI), Y13, Y7
	VPAND qmask8<>+32(SB), Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 32(SI), Y12, Y4
	VPAND qmask8<>+32(SB), Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 32(SI), Y13, Y5
	VPAND qmask8<>+32(SB), Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 32(SI), Y12, Y6
	VPAND qmask8<>+32(SB), Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 32(SI), Y13, Y7
	VPAND qmask8<>+64(SB), Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 64(SI), Y12, Y4
	VPAND qmask8<>+64(SB), Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 64(SI), Y13, Y5
	VPAND qmask8<>+64(SB), Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 64(SI), Y12, Y6
	VPAND qmask8<>+64(SB), Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 64(SI), Y13, Y7
	VPSRLD $24, Y8, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 96(SI), Y12, Y4
	VPSRLD $24, Y9, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 96(SI), Y13, Y5
	VPSRLD $24, Y10, Y12
	VCVTDQ2PS Y12, Y12
	VFMADD231PS 96(SI), Y12, Y6
	VPSRLD $24, Y11, Y13
	VCVTDQ2PS Y13, Y13
	VFMADD231PS 96(SI), Y13, Y7
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ $128, AX
	DECQ R12
	JNZ q8r4block
q8r4scale:
	VBROADCASTSS (DX), Y12
	VFMADD231PS Y12, Y4, Y0
	VBROADCASTSS (DX)(BX*1), Y13
	VFMADD231PS Y13, Y5, Y1
	VBROADCASTSS (DX)(BX*2), Y12
	VFMADD231PS Y12, Y6, Y2
	VBROADCASTSS (DX)(R13*1), Y13
	VFMADD231PS Y13, Y7, Y3
	VMOVUPS (SI), Y8
	VBROADCASTSS (R14), Y12
	VFMADD231PS Y12, Y8, Y0
	VBROADCASTSS (R14)(BX*1), Y13
	VFMADD231PS Y13, Y8, Y1
	VBROADCASTSS (R14)(BX*2), Y12
	VFMADD231PS Y12, Y8, Y2
	VBROADCASTSS (R14)(R13*1), Y13
	VFMADD231PS Y13, Y8, Y3
	PREFETCHT0 (DX)(BX*4)
	PREFETCHT0 (R14)(BX*4)
	ADDQ $32, SI
	ADDQ $4, R14
	ADDQ $4, DX
	DECQ CX
	JMP q8r4group
q8r4done:
	MOVQ out+64(FP), DI
	LANESUM8(Y0, X0, X12)
	MOVSS X0, 0(DI)
	LANESUM8(Y1, X1, X12)
	MOVSS X1, 4(DI)
	LANESUM8(Y2, X2, X12)
	MOVSS X2, 8(DI)
	LANESUM8(Y3, X3, X12)
	MOVSS X3, 12(DI)
	VZEROUPPER
	RET

// func qDequantQ4AVX2(dst *float32, words *uint32, scales, biases *float32, groups, gs int)
// dst[k] = Q_k·scale + bias, fused, for the groups·gs elements of a row.
TEXT ·qDequantQ4AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ words+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), BX
	MOVQ groups+32(FP), CX
	MOVQ gs+40(FP), AX
	SHRQ $3, AX
	MOVL $0x0f, R12
	MOVQ R12, X15
	VPBROADCASTD X15, Y15
	VMOVDQU qshift8<>(SB), Y14
dq4group:
	TESTQ CX, CX
	JZ dq4done
	VBROADCASTSS (DX), Y12
	VBROADCASTSS (BX), Y13
	MOVQ AX, R9
dq4loop:
	VPBROADCASTD (SI), Y0
	VPSRLVD Y14, Y0, Y0
	VPAND Y15, Y0, Y0
	ADDQ $4, SI
	VCVTDQ2PS Y0, Y0
	VFMADD213PS Y13, Y12, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ R9
	JNZ dq4loop
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP dq4group
dq4done:
	VZEROUPPER
	RET

// func qDequantQ8AVX2(dst *float32, words *uint32, scales, biases *float32, groups, gs int)
// dst[k] = Q_k·scale + bias, fused, for the groups·gs elements of a row.
TEXT ·qDequantQ8AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ words+8(FP), SI
	MOVQ scales+16(FP), DX
	MOVQ biases+24(FP), BX
	MOVQ groups+32(FP), CX
	MOVQ gs+40(FP), AX
	SHRQ $3, AX
	MOVL $0xff, R12
	MOVQ R12, X15
	VPBROADCASTD X15, Y15
dq8group:
	TESTQ CX, CX
	JZ dq8done
	VBROADCASTSS (DX), Y12
	VBROADCASTSS (BX), Y13
	MOVQ AX, R9
dq8loop:
	VPMOVZXBD (SI), Y0
	ADDQ $8, SI
	VCVTDQ2PS Y0, Y0
	VFMADD213PS Y13, Y12, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ R9
	JNZ dq8loop
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JMP dq8group
dq8done:
	VZEROUPPER
	RET

// The three-row 4-bit kernel for groups of 32 (one block a group, as
// MLX's default and the exports' group size) with folded biases (each
// group's scale is its bias, times the BiasMul the prepared sums carry):
// the operations of qDotRows4Q4AVX2, row for row in the same order (the
// same bits), in fewer instructions. Decode is bound by how many the core
// issues (about 3.3 a cycle whatever their kind: removing any one kind
// from the loop barely changed its speed), so each scale is broadcast
// once for both of its multiply-adds, the prepared input is read by the
// multiply-adds themselves, the three rows' words share one index (R11),
// and a group's plane products are interleaved with the previous group's
// scale and bias terms. Registers: Y0–Y2 the totals, Y3–Y5 and Y6–Y8 the
// two groups' sums, Y9–Y11 the words, Y12 scratch, Y13–Y15 three masks.

#define Q3FWORDS \
	VBROADCASTI128 (DI)(R11*1), Y9; VPSRLVD qshift4<>(SB), Y9, Y9; \
	VBROADCASTI128 (R9)(R11*1), Y10; VPSRLVD qshift4<>(SB), Y10, Y10; \
	VBROADCASTI128 (R10)(R11*1), Y11; VPSRLVD qshift4<>(SB), Y11, Y11

#define Q3FPLANE(M, off, OP, s0, s1, s2) \
	VPAND M, Y9, Y12; VCVTDQ2PS Y12, Y12; OP off(SI), Y12, s0; \
	VPAND M, Y10, Y12; VCVTDQ2PS Y12, Y12; OP off(SI), Y12, s1; \
	VPAND M, Y11, Y12; VCVTDQ2PS Y12, Y12; OP off(SI), Y12, s2

// the previous group's scale and bias terms: scale·sq, then the same
// scale·(its lane sums, at -32(SI))
#define Q3FSCALE(sc, q, acc) \
	VBROADCASTSS sc, Y12; VFMADD231PS Y12, q, acc; VFMADD231PS -32(SI), Y12, acc

#define Q3FNEXT \
	ADDQ $160, SI; ADDQ $16, R11; ADDQ $4, DX; PREFETCHT0 (AX); ADDQ $48, AX

#define Q3FSTEP(n0, n1, n2, o0, o1, o2) \
	Q3FWORDS; \
	Q3FPLANE(Y15, 0, VMULPS, n0, n1, n2); \
	Q3FSCALE(-4(DX), o0, Y0); \
	Q3FPLANE(Y14, 32, VFMADD231PS, n0, n1, n2); \
	Q3FSCALE(-4(DX)(BX*1), o1, Y1); \
	Q3FPLANE(Y13, 64, VFMADD231PS, n0, n1, n2); \
	Q3FSCALE(-4(DX)(R13*1), o2, Y2); \
	Q3FPLANE(qmask4<>+96(SB), 96, VFMADD231PS, n0, n1, n2); \
	Q3FNEXT

// func qDotRows3Q4G32AVX2(xp *float32, words *uint32, w1, w2 int, scales *float32, s1, s2, groups int, out *float32)
// out[j] = row j's dot with xp, j < 3: rows at words, words+w1 and
// words+w2 bytes, their scales at +0, +s1 and +s2 bytes (the biases too);
// groups ≥ 1 groups of one block, each followed in xp by its lane sums.
TEXT ·qDotRows3Q4G32AVX2(SB), NOSPLIT, $0-72
	MOVQ xp+0(FP), SI
	MOVQ words+8(FP), DI
	MOVQ w1+16(FP), R9
	MOVQ w2+24(FP), R10
	MOVQ scales+32(FP), DX
	MOVQ s1+40(FP), BX
	MOVQ s2+48(FP), R13
	MOVQ groups+56(FP), CX
	LEAQ (DI)(R9*1), AX
	ADDQ R10, AX
	ADDQ DI, R9
	ADDQ DI, R10
	XORQ R11, R11
	VMOVDQU qmask4<>(SB), Y15
	VMOVDQU qmask4<>+32(SB), Y14
	VMOVDQU qmask4<>+64(SB), Y13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	Q3FWORDS
	Q3FPLANE(Y15, 0, VMULPS, Y3, Y4, Y5)
	Q3FPLANE(Y14, 32, VFMADD231PS, Y3, Y4, Y5)
	Q3FPLANE(Y13, 64, VFMADD231PS, Y3, Y4, Y5)
	Q3FPLANE(qmask4<>+96(SB), 96, VFMADD231PS, Y3, Y4, Y5)
	Q3FNEXT
	DECQ CX
q3fpair:
	CMPQ CX, $2
	JLT q3ftail
	Q3FSTEP(Y6, Y7, Y8, Y3, Y4, Y5)
	Q3FSTEP(Y3, Y4, Y5, Y6, Y7, Y8)
	SUBQ $2, CX
	JMP q3fpair
q3ftail:
	TESTQ CX, CX
	JZ q3flastA
	Q3FSTEP(Y6, Y7, Y8, Y3, Y4, Y5)
	Q3FSCALE(-4(DX), Y6, Y0)
	Q3FSCALE(-4(DX)(BX*1), Y7, Y1)
	Q3FSCALE(-4(DX)(R13*1), Y8, Y2)
	JMP q3fdone
q3flastA:
	Q3FSCALE(-4(DX), Y3, Y0)
	Q3FSCALE(-4(DX)(BX*1), Y4, Y1)
	Q3FSCALE(-4(DX)(R13*1), Y5, Y2)
q3fdone:
	MOVQ out+64(FP), DI
	LANESUM8(Y0, X0, X12)
	MOVSS X0, 0(DI)
	LANESUM8(Y1, X1, X12)
	MOVSS X1, 4(DI)
	LANESUM8(Y2, X2, X12)
	MOVSS X2, 8(DI)
	VZEROUPPER
	RET
