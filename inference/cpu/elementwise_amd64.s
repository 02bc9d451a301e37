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
