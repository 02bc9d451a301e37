//go:build amd64 && !purego

#include "textflag.h"
#include "lanesum_amd64.h"

// HEADSUM stores one head's score: the halves of za (acc0|acc1) and zb
// (acc2|acc3) added as gemvBF16AVX2 adds Y0+Y1 and Y2+Y3, then their sum
// and LANESUM8 (ya, yb, xa: za's, zb's and za's lower views).
#define HEADSUM(za, zb, ya, yb, xa, dst) VEXTRACTF64X4 $1, za, Y10; VADDPS Y10, ya, ya; VEXTRACTF64X4 $1, zb, Y10; VADDPS Y10, yb, yb; VADDPS yb, ya, ya; LANESUM8(ya, xa, X10); MOVSS xa, dst

// WSUMHEAD2 and WSUMHEAD add p·row (the row widened in Y8–Y11, Z16–Z19)
// to one head's 32 or 64 outputs a0–a3: the product first, then the sum,
// as wsumRowsBF16AVX2.
#define WSUMHEAD2(p, a0, a1, a2, a3) VBROADCASTSS p, Y12; VMULPS Y8, Y12, Y13; VADDPS a0, Y13, a0; VMULPS Y9, Y12, Y13; VADDPS a1, Y13, a1; VMULPS Y10, Y12, Y13; VADDPS a2, Y13, a2; VMULPS Y11, Y12, Y13; VADDPS a3, Y13, a3

#define WSUMHEAD(p, a0, a1, a2, a3) VBROADCASTSS p, Z20; VMULPS Z16, Z20, Z21; VADDPS a0, Z21, a0; VMULPS Z17, Z20, Z21; VADDPS a1, Z21, a1; VMULPS Z18, Z20, Z21; VADDPS a2, Z21, a2; VMULPS Z19, Z20, Z21; VADDPS a3, Z21, a3

// func attnScores4BF16AVX512(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)
// For four query heads (q, q+qs, q+2qs, q+3qs floats; qs in bytes here as
// in os) against rows bf16 key rows of d elements (d a multiple of 64,
// rows d apart): out_h[j] = gemvBF16AVX2's dot of head h with row j, in
// its order: per 32 elements four 8-lane fused sums (two per 512-bit
// register), then (0+1)+(2+3) and LANESUM8. Each row is widened once for
// the four heads.
TEXT ·attnScores4BF16AVX512(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ qs+8(FP), R11
	LEAQ (R11)(R11*2), R12
	MOVQ k+16(FP), DI
	MOVQ d+24(FP), R10
	MOVQ rows+32(FP), CX
	MOVQ out+40(FP), DX
	MOVQ os+48(FP), R13
	LEAQ (R13)(R13*2), R14

as4row:
	TESTQ CX, CX
	JZ    as4done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ SI, R8
	MOVQ R10, BX

as4chunk:
	VPMOVZXWD 0(DI), Z8
	VPSLLD    $16, Z8, Z8
	VPMOVZXWD 32(DI), Z9
	VPSLLD    $16, Z9, Z9
	VFMADD231PS 0(R8), Z8, Z0
	VFMADD231PS 64(R8), Z9, Z1
	VFMADD231PS 0(R8)(R11*1), Z8, Z2
	VFMADD231PS 64(R8)(R11*1), Z9, Z3
	VFMADD231PS 0(R8)(R11*2), Z8, Z4
	VFMADD231PS 64(R8)(R11*2), Z9, Z5
	VFMADD231PS 0(R8)(R12*1), Z8, Z6
	VFMADD231PS 64(R8)(R12*1), Z9, Z7
	ADDQ $64, DI
	ADDQ $128, R8
	SUBQ $32, BX
	JNZ  as4chunk

	// head h: (Y0+Y1)+(Y2+Y3) of the AVX2 kernel is (lo+hi of Z2h) +
	// (lo+hi of Z2h+1)
	HEADSUM(Z0, Z1, Y0, Y1, X0, (DX))
	HEADSUM(Z2, Z3, Y2, Y3, X2, (DX)(R13*1))
	HEADSUM(Z4, Z5, Y4, Y5, X4, (DX)(R13*2))
	HEADSUM(Z6, Z7, Y6, Y7, X6, (DX)(R14*1))
	ADDQ $4, DX
	DECQ CX
	JMP  as4row

as4done:
	VZEROUPPER
	RET

// func attnWsum4BF16AVX512(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)
// For four heads (outputs o, o+os, …; probabilities p, p+ps, …; strides in
// bytes): o_h += p_h[j]·row j for j < rows, bf16 value rows d apart (d a
// multiple of 64), each term a product then a sum, rows in order: bit for
// bit wsumRowsBF16AVX2 per head, each row widened once for the four.
TEXT ·attnWsum4BF16AVX512(SB), NOSPLIT, $0-56
	MOVQ o+0(FP), DI
	MOVQ os+8(FP), R11
	LEAQ (R11)(R11*2), R12
	MOVQ v+16(FP), SI
	MOVQ d+24(FP), R10
	MOVQ p+40(FP), DX
	MOVQ ps+48(FP), R13
	LEAQ (R13)(R13*2), R14
	XORQ BX, BX // column of this pass

aw4pass:
	CMPQ BX, R10
	JGE  aw4done
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 0(DI)(R11*1), Z4
	VMOVUPS 64(DI)(R11*1), Z5
	VMOVUPS 128(DI)(R11*1), Z6
	VMOVUPS 192(DI)(R11*1), Z7
	VMOVUPS 0(DI)(R11*2), Z8
	VMOVUPS 64(DI)(R11*2), Z9
	VMOVUPS 128(DI)(R11*2), Z10
	VMOVUPS 192(DI)(R11*2), Z11
	VMOVUPS 0(DI)(R12*1), Z12
	VMOVUPS 64(DI)(R12*1), Z13
	VMOVUPS 128(DI)(R12*1), Z14
	VMOVUPS 192(DI)(R12*1), Z15
	LEAQ (SI)(BX*2), R8
	MOVQ DX, R9
	MOVQ rows+32(FP), CX

aw4row:
	TESTQ CX, CX
	JZ    aw4store
	VPMOVZXWD 0(R8), Z16
	VPSLLD    $16, Z16, Z16
	VPMOVZXWD 32(R8), Z17
	VPSLLD    $16, Z17, Z17
	VPMOVZXWD 64(R8), Z18
	VPSLLD    $16, Z18, Z18
	VPMOVZXWD 96(R8), Z19
	VPSLLD    $16, Z19, Z19
	WSUMHEAD((R9), Z0, Z1, Z2, Z3)
	WSUMHEAD((R9)(R13*1), Z4, Z5, Z6, Z7)
	WSUMHEAD((R9)(R13*2), Z8, Z9, Z10, Z11)
	WSUMHEAD((R9)(R14*1), Z12, Z13, Z14, Z15)
	LEAQ (R8)(R10*2), R8
	ADDQ $4, R9
	DECQ CX
	JMP  aw4row

aw4store:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 0(DI)(R11*1)
	VMOVUPS Z5, 64(DI)(R11*1)
	VMOVUPS Z6, 128(DI)(R11*1)
	VMOVUPS Z7, 192(DI)(R11*1)
	VMOVUPS Z8, 0(DI)(R11*2)
	VMOVUPS Z9, 64(DI)(R11*2)
	VMOVUPS Z10, 128(DI)(R11*2)
	VMOVUPS Z11, 192(DI)(R11*2)
	VMOVUPS Z12, 0(DI)(R12*1)
	VMOVUPS Z13, 64(DI)(R12*1)
	VMOVUPS Z14, 128(DI)(R12*1)
	VMOVUPS Z15, 192(DI)(R12*1)
	ADDQ $256, DI
	ADDQ $64, BX
	JMP  aw4pass

aw4done:
	VZEROUPPER
	RET

// func attnScores2BF16AVX2(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)
// attnScores4BF16AVX512 for two heads with AVX2 (d a multiple of 32): per
// head gemvBF16AVX2's instructions, each row widened once for the two.
TEXT ·attnScores2BF16AVX2(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ qs+8(FP), R11
	MOVQ k+16(FP), DI
	MOVQ d+24(FP), R10
	MOVQ rows+32(FP), CX
	MOVQ out+40(FP), DX
	MOVQ os+48(FP), R13

as2row:
	TESTQ CX, CX
	JZ    as2done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R8
	MOVQ R10, BX

as2chunk:
	VPMOVZXWD 0(DI), Y8
	VPSLLD    $16, Y8, Y8
	VPMOVZXWD 16(DI), Y9
	VPSLLD    $16, Y9, Y9
	VPMOVZXWD 32(DI), Y10
	VPSLLD    $16, Y10, Y10
	VPMOVZXWD 48(DI), Y11
	VPSLLD    $16, Y11, Y11
	VFMADD231PS 0(R8), Y8, Y0
	VFMADD231PS 32(R8), Y9, Y1
	VFMADD231PS 64(R8), Y10, Y2
	VFMADD231PS 96(R8), Y11, Y3
	VFMADD231PS 0(R8)(R11*1), Y8, Y4
	VFMADD231PS 32(R8)(R11*1), Y9, Y5
	VFMADD231PS 64(R8)(R11*1), Y10, Y6
	VFMADD231PS 96(R8)(R11*1), Y11, Y7
	ADDQ $64, DI
	ADDQ $128, R8
	SUBQ $32, BX
	JNZ  as2chunk

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	LANESUM8(Y0, X0, X12)
	MOVSS X0, (DX)
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	VADDPS Y6, Y4, Y4
	LANESUM8(Y4, X4, X12)
	MOVSS X4, (DX)(R13*1)
	ADDQ $4, DX
	DECQ CX
	JMP  as2row

as2done:
	VZEROUPPER
	RET

// func attnWsum2BF16AVX2(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)
// attnWsum4BF16AVX512 for two heads with AVX2 (d a multiple of 32): per
// head wsumRowsBF16AVX2's operations, each row widened once for the two.
TEXT ·attnWsum2BF16AVX2(SB), NOSPLIT, $0-56
	MOVQ o+0(FP), DI
	MOVQ os+8(FP), R11
	MOVQ v+16(FP), SI
	MOVQ d+24(FP), R10
	MOVQ p+40(FP), DX
	MOVQ ps+48(FP), R13
	XORQ BX, BX

aw2pass:
	CMPQ BX, R10
	JGE  aw2done
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 0(DI)(R11*1), Y4
	VMOVUPS 32(DI)(R11*1), Y5
	VMOVUPS 64(DI)(R11*1), Y6
	VMOVUPS 96(DI)(R11*1), Y7
	LEAQ (SI)(BX*2), R8
	MOVQ DX, R9
	MOVQ rows+32(FP), CX

aw2row:
	TESTQ CX, CX
	JZ    aw2store
	VPMOVZXWD 0(R8), Y8
	VPSLLD    $16, Y8, Y8
	VPMOVZXWD 16(R8), Y9
	VPSLLD    $16, Y9, Y9
	VPMOVZXWD 32(R8), Y10
	VPSLLD    $16, Y10, Y10
	VPMOVZXWD 48(R8), Y11
	VPSLLD    $16, Y11, Y11
	WSUMHEAD2((R9), Y0, Y1, Y2, Y3)
	WSUMHEAD2((R9)(R13*1), Y4, Y5, Y6, Y7)
	LEAQ (R8)(R10*2), R8
	ADDQ $4, R9
	DECQ CX
	JMP  aw2row

aw2store:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 0(DI)(R11*1)
	VMOVUPS Y5, 32(DI)(R11*1)
	VMOVUPS Y6, 64(DI)(R11*1)
	VMOVUPS Y7, 96(DI)(R11*1)
	ADDQ $128, DI
	ADDQ $32, BX
	JMP  aw2pass

aw2done:
	VZEROUPPER
	RET
