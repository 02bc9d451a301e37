//go:build amd64 && !purego

#include "textflag.h"
#include "lanesum_amd64.h"

// func dotBF16AVX2(x *float32, w *uint16, n int) float32
// n is a multiple of 8.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf32:
	CMPQ CX, $32
	JL   bf8
	VPMOVZXWD (DI), Y4
	VPMOVZXWD 16(DI), Y5
	VPMOVZXWD 32(DI), Y6
	VPMOVZXWD 48(DI), Y7
	VPSLLD $16, Y4, Y4
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VPSLLD $16, Y7, Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ $128, SI
	ADDQ $64, DI
	SUBQ $32, CX
	JMP  bf32

bf8:
	CMPQ CX, $8
	JL   bfdone
	VPMOVZXWD (DI), Y4
	VPSLLD $16, Y4, Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JMP  bf8

bfdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	LANESUM8(Y0, X0, X1)
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF32AVX2(x, y *float32, n int) float32
// n is a multiple of 8.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32:
	CMPQ CX, $32
	JL   f8
	VMOVUPS (DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f32

f8:
	CMPQ CX, $8
	JL   fdone
	VMOVUPS (DI), Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f8

fdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	LANESUM8(Y0, X0, X1)
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dot4F32AVX2(x *float32, ld int, w *float32, n int, out *float32)
// out[r] = x[r*ld : r*ld+n] · w[:n] for r = 0..3; n is a multiple of 8.
TEXT ·dot4F32AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), BX
	SHLQ $2, BX
	MOVQ w+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

d4loop:
	CMPQ CX, $8
	JL   d4done
	VMOVUPS (DI), Y4
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS (R8), Y4, Y1
	VFMADD231PS (R9), Y4, Y2
	VFMADD231PS (R10), Y4, Y3
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  d4loop

d4done:
	LANESUM8(Y0, X0, X5)
	MOVSS X0, (DX)
	LANESUM8(Y1, X1, X5)
	MOVSS X1, 4(DX)
	LANESUM8(Y2, X2, X5)
	MOVSS X2, 8(DX)
	LANESUM8(Y3, X3, X5)
	MOVSS X3, 12(DX)
	VZEROUPPER
	RET

// func dot4x2F32AVX2(x *float32, ld int, w0, w1 *float32, n int, out *float32)
// out[2r+j] = x[r*ld : r*ld+n] · wj[:n] for r = 0..3, j = 0..1;
// n is a multiple of 8.
TEXT ·dot4x2F32AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), BX
	SHLQ $2, BX
	MOVQ w0+16(FP), DI
	MOVQ w1+24(FP), R11
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (SI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

d42loop:
	CMPQ CX, $8
	JL   d42done
	VMOVUPS (DI), Y8
	VMOVUPS (R11), Y9
	VMOVUPS (SI), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y1
	VMOVUPS (R8), Y11
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y11, Y9, Y3
	VMOVUPS (R9), Y12
	VFMADD231PS Y12, Y8, Y4
	VFMADD231PS Y12, Y9, Y5
	VMOVUPS (R10), Y13
	VFMADD231PS Y13, Y8, Y6
	VFMADD231PS Y13, Y9, Y7
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $8, CX
	JMP  d42loop

d42done:
	LANESUM8(Y0, X0, X8)
	MOVSS X0, (DX)
	LANESUM8(Y1, X1, X8)
	MOVSS X1, 4(DX)
	LANESUM8(Y2, X2, X8)
	MOVSS X2, 8(DX)
	LANESUM8(Y3, X3, X8)
	MOVSS X3, 12(DX)
	LANESUM8(Y4, X4, X8)
	MOVSS X4, 16(DX)
	LANESUM8(Y5, X5, X8)
	MOVSS X5, 20(DX)
	LANESUM8(Y6, X6, X8)
	MOVSS X6, 24(DX)
	LANESUM8(Y7, X7, X8)
	MOVSS X7, 28(DX)
	VZEROUPPER
	RET

// func gemvF32AVX2(x *float32, w *float32, ld, k, nrows int, out *float32)
// out[i] = x[:k] · w[i*ld : i*ld+k] for i < nrows; k is a multiple of 8.
TEXT ·gemvF32AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ ld+16(FP), BX
	SHLQ $2, BX
	MOVQ k+24(FP), R12
	MOVQ nrows+32(FP), R13
	MOVQ out+40(FP), DX

gemvF32AVX2row:
	TESTQ R13, R13
	JZ   gemvF32AVX2end
	MOVQ SI, R8
	MOVQ DI, R9
	MOVQ R12, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

gemvF32AVX232:
	CMPQ CX, $32
	JL   gemvF32AVX28
	VMOVUPS 0(R9), Y4
	VMOVUPS 32(R9), Y5
	VMOVUPS 64(R9), Y6
	VMOVUPS 96(R9), Y7
	VFMADD231PS (R8), Y4, Y0
	VFMADD231PS 32(R8), Y5, Y1
	VFMADD231PS 64(R8), Y6, Y2
	VFMADD231PS 96(R8), Y7, Y3
	ADDQ $128, R8
	ADDQ $128, R9
	SUBQ $32, CX
	JMP  gemvF32AVX232

gemvF32AVX28:
	CMPQ CX, $8
	JL   gemvF32AVX2sum
	VMOVUPS 0(R9), Y4
	VFMADD231PS (R8), Y4, Y0
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JMP  gemvF32AVX28

gemvF32AVX2sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	LANESUM8(Y0, X0, X1)
	MOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ BX, DI
	DECQ R13
	JMP  gemvF32AVX2row

gemvF32AVX2end:
	VZEROUPPER
	RET

// func gemvBF16AVX2(x *float32, w *uint16, ld, k, nrows int, out *float32)
// out[i] = x[:k] · w[i*ld : i*ld+k] for i < nrows; k is a multiple of 8.
TEXT ·gemvBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ ld+16(FP), BX
	SHLQ $1, BX
	MOVQ k+24(FP), R12
	MOVQ nrows+32(FP), R13
	MOVQ out+40(FP), DX

gemvBF16AVX2row:
	TESTQ R13, R13
	JZ   gemvBF16AVX2end
	MOVQ SI, R8
	MOVQ DI, R9
	MOVQ R12, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

gemvBF16AVX232:
	CMPQ CX, $32
	JL   gemvBF16AVX28
	VPMOVZXWD 0(R9), Y4
	VPSLLD $16, Y4, Y4
	VPMOVZXWD 16(R9), Y5
	VPSLLD $16, Y5, Y5
	VPMOVZXWD 32(R9), Y6
	VPSLLD $16, Y6, Y6
	VPMOVZXWD 48(R9), Y7
	VPSLLD $16, Y7, Y7
	VFMADD231PS (R8), Y4, Y0
	VFMADD231PS 32(R8), Y5, Y1
	VFMADD231PS 64(R8), Y6, Y2
	VFMADD231PS 96(R8), Y7, Y3
	ADDQ $128, R8
	ADDQ $64, R9
	SUBQ $32, CX
	JMP  gemvBF16AVX232

gemvBF16AVX28:
	CMPQ CX, $8
	JL   gemvBF16AVX2sum
	VPMOVZXWD 0(R9), Y4
	VPSLLD $16, Y4, Y4
	VFMADD231PS (R8), Y4, Y0
	ADDQ $32, R8
	ADDQ $16, R9
	SUBQ $8, CX
	JMP  gemvBF16AVX28

gemvBF16AVX2sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	LANESUM8(Y0, X0, X1)
	MOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ BX, DI
	DECQ R13
	JMP  gemvBF16AVX2row

gemvBF16AVX2end:
	VZEROUPPER
	RET

// func readSumAVX2(p *uint64, n int) uint64
// Sums n uint64 words (n a multiple of 64: 512 bytes per pass) with
// 256-bit loads into eight accumulators, so that only memory bounds it:
// the read-bandwidth probe's loop.
TEXT ·readSumAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $6, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7

rsloop:
	TESTQ CX, CX
	JZ    rsdone
	VPADDQ 0(SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	VPADDQ 128(SI), Y4, Y4
	VPADDQ 160(SI), Y5, Y5
	VPADDQ 192(SI), Y6, Y6
	VPADDQ 224(SI), Y7, Y7
	VPADDQ 256(SI), Y0, Y0
	VPADDQ 288(SI), Y1, Y1
	VPADDQ 320(SI), Y2, Y2
	VPADDQ 352(SI), Y3, Y3
	VPADDQ 384(SI), Y4, Y4
	VPADDQ 416(SI), Y5, Y5
	VPADDQ 448(SI), Y6, Y6
	VPADDQ 480(SI), Y7, Y7
	ADDQ  $512, SI
	DECQ  CX
	JMP   rsloop

rsdone:
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y5, Y4, Y4
	VPADDQ Y7, Y6, Y6
	VPADDQ Y2, Y0, Y0
	VPADDQ Y6, Y4, Y4
	VPADDQ Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	VMOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// func axpyF32AVX2(a float32, x, y *float32, n int)
// y[i] += a·x[i] for i < n (a multiple of 8), rounded after the multiply
// as the Go loop is (no fused multiply-add).
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS a+0(FP), Y0
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX

ax32:
	CMPQ CX, $32
	JL   ax8
	VMULPS (SI), Y0, Y1
	VMULPS 32(SI), Y0, Y2
	VMULPS 64(SI), Y0, Y3
	VMULPS 96(SI), Y0, Y4
	VADDPS (DI), Y1, Y1
	VADDPS 32(DI), Y2, Y2
	VADDPS 64(DI), Y3, Y3
	VADDPS 96(DI), Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  ax32

ax8:
	CMPQ CX, $8
	JL   axdone
	VMULPS (SI), Y0, Y1
	VADDPS (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  ax8

axdone:
	VZEROUPPER
	RET

// func widenBF16AVX2(dst *float32, src *uint16, n int)
// dst[i] = the float32 of bfloat16 src[i], for n a multiple of 16.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX

wbloop:
	TESTQ CX, CX
	JZ    wbdone
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JMP  wbloop

wbdone:
	VZEROUPPER
	RET

// func dot3x4F32AVX2(x *float32, ldx int, w *float32, ldw int, n int, out *float32)
// out[4i+j] = x[i·ldx : i·ldx+n] · w[j·ldw : j·ldw+n] for i < 3, j < 4; n a
// multiple of 8. Each of the twelve sums is one eight-lane fused
// accumulator over n, then its lanes summed ((0+4)+(1+5))+((2+6)+(3+7)):
// the prefill micro-kernel, three x rows kept in registers against four
// weight rows read from L1.
TEXT ·dot3x4F32AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ ldx+8(FP), R8
	SHLQ $2, R8
	MOVQ w+16(FP), DI
	MOVQ ldw+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	LEAQ (R9)(R9*2), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
d34loop:
	VMOVUPS (SI), Y12
	VMOVUPS (SI)(R8*1), Y13
	VMOVUPS (SI)(R8*2), Y14
	VMOVUPS (DI), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS (DI)(R9*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS (DI)(R9*2), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS (DI)(R10*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ d34loop
	MOVQ out+40(FP), DI
	LANESUM8(Y0, X0, X12)
	MOVSS X0, 0(DI)
	LANESUM8(Y1, X1, X12)
	MOVSS X1, 4(DI)
	LANESUM8(Y2, X2, X12)
	MOVSS X2, 8(DI)
	LANESUM8(Y3, X3, X12)
	MOVSS X3, 12(DI)
	LANESUM8(Y4, X4, X12)
	MOVSS X4, 16(DI)
	LANESUM8(Y5, X5, X12)
	MOVSS X5, 20(DI)
	LANESUM8(Y6, X6, X12)
	MOVSS X6, 24(DI)
	LANESUM8(Y7, X7, X12)
	MOVSS X7, 28(DI)
	LANESUM8(Y8, X8, X12)
	MOVSS X8, 32(DI)
	LANESUM8(Y9, X9, X12)
	MOVSS X9, 36(DI)
	LANESUM8(Y10, X10, X12)
	MOVSS X10, 40(DI)
	LANESUM8(Y11, X11, X12)
	MOVSS X11, 44(DI)
	VZEROUPPER
	RET

// func deinterleave16AVX2(dst, src *float32, n int)
// For each 16 floats of src: the 8 even-indexed ones, then the 8 odd; n a
// multiple of 16. The input order gemvBF16x16AVX2 reads.
TEXT ·deinterleave16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX

dilloop:
	TESTQ CX, CX
	JZ    dildone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xdd, Y1, Y0, Y3
	VPERMPD $0xd8, Y2, Y2
	VPERMPD $0xd8, Y3, Y3
	VMOVUPS Y2, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JMP  dilloop

dildone:
	VZEROUPPER
	RET

// func gemvBF16x16AVX2(xp *float32, w *uint16, ld, k, nrows int, out *float32)
// out[i] = x · w[i*ld : i*ld+k] for i < nrows, with x given deinterleaved
// by 16 (deinterleave16AVX2); k a multiple of 32. Sixteen bf16 weights are
// one 32-byte load: shifted left 16 they are the even elements as fp32,
// masked to their high halves the odd ones: two vector ops per 16
// weights instead of two widening loads and two shifts.
TEXT ·gemvBF16x16AVX2(SB), NOSPLIT, $0-48
	MOVQ xp+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ ld+16(FP), BX
	SHLQ $1, BX
	MOVQ k+24(FP), R12
	SHRQ $5, R12
	MOVQ nrows+32(FP), R13
	MOVQ out+40(FP), DX
	MOVL $0xffff0000, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15

g16row:
	TESTQ R13, R13
	JZ    g16end
	MOVQ SI, R8
	MOVQ DI, R9
	MOVQ R12, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

g16loop:
	// 4 KB ahead (four rows at K = 512): each block of rows starts a new
	// stream the hardware prefetchers must first learn (+5–10% decode
	// on llama-bench-bf16 at two threads)
	PREFETCHT0 4096(R9)
	VMOVDQU (R9), Y4
	VMOVDQU 32(R9), Y5
	VPSLLD $16, Y4, Y6
	VPAND Y15, Y4, Y4
	VPSLLD $16, Y5, Y7
	VPAND Y15, Y5, Y5
	VFMADD231PS (R8), Y6, Y0
	VFMADD231PS 32(R8), Y4, Y1
	VFMADD231PS 64(R8), Y7, Y2
	VFMADD231PS 96(R8), Y5, Y3
	ADDQ $128, R8
	ADDQ $64, R9
	DECQ CX
	JNZ  g16loop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	LANESUM8(Y0, X0, X1)
	MOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ BX, DI
	DECQ R13
	JMP  g16row

g16end:
	VZEROUPPER
	RET
