//go:build ignore

// Generates qkernel_int8_amd64.s: go run qkernel_int8_gen.go
//
// The fast mode's AVX2 decode kernels (qkernel_int8.go describes the
// arithmetic): four weight rows against one input quantized to 8 bits per
// block, per block and row VPMADDUBSW (weights unsigned, input signed),
// VPMADDWD with ones into eight int32 lanes, converted and multiplied by
// d·s into the row's eight fp32 lanes; per group the bias term. The lanes
// are summed by the caller (hsum8), as qDotI8Go's are.
package main

import (
	"fmt"
	"os"
	"strings"
)

var b strings.Builder

func p(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
func label(s string)            { fmt.Fprintf(&b, "%s:\n", s) }

// row is the address of row j (0–3) from base, rows stride apart
// (stride3 = 3·stride).
func row(j int, base, stride, stride3 string) string {
	switch j {
	case 0:
		return "(" + base + ")"
	case 1:
		return "(" + base + ")(" + stride + "*1)"
	case 2:
		return "(" + base + ")(" + stride + "*2)"
	}
	return "(" + base + ")(" + stride3 + "*1)"
}

// Registers: SI q8, DX d, BX xsv, DI words, R8/R9 words stride (×1, ×3),
// R10 scales, R11/R12 scales stride (×1, ×3), R13 biases, R14 groups
// left, CX blocks left, AX mode. Y0–Y3 the rows' sums, Y4–Y7 the rows'
// products, Y8 the input block (8-bit), Y9 d, Y10 the byte mask, Y11
// int16 ones, Y12–Y15 temporaries.
func gen(bits int) {
	name := fmt.Sprintf("qDotRows4I8Q%dAVX2", bits)
	fmt.Fprintf(&b, "\n// func %s(q8 *int8, d, xsv *float32, words *uint32, wstride int, scales, biases *float32, sstride, groups, bpg, mode int, out *[32]float32)\n", name)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-96\n", name)
	p("MOVQ q8+0(FP), SI")
	p("MOVQ d+8(FP), DX")
	p("MOVQ xsv+16(FP), BX")
	p("MOVQ words+24(FP), DI")
	p("MOVQ wstride+32(FP), R8")
	p("LEAQ (R8)(R8*2), R9")
	p("MOVQ scales+40(FP), R10")
	p("MOVQ biases+48(FP), R13")
	p("MOVQ sstride+56(FP), R11")
	p("LEAQ (R11)(R11*2), R12")
	p("MOVQ groups+64(FP), R14")
	p("MOVQ mode+80(FP), AX")
	if bits == 4 {
		p("VMOVDQU qi8nib<>(SB), Y10")
	} else {
		p("VMOVDQU qi8sign<>(SB), Y10")
	}
	p("VMOVDQU qi8ones<>(SB), Y11")
	for j := 0; j < 4; j++ {
		p("VXORPS Y%d, Y%d, Y%d", j, j, j)
	}
	label(name + "_group")
	p("MOVQ bpg+72(FP), CX")
	label(name + "_block")
	p("VBROADCASTSS (DX), Y9")
	if bits == 8 {
		p("VMOVDQU (SI), Y8")
	}
	for j := 0; j < 4; j++ {
		t := fmt.Sprintf("Y%d", 4+j)
		w := row(j, "DI", "R8", "R9")
		if bits == 4 {
			// low nibbles in bytes 0–15, high nibbles in 16–31
			p("VMOVDQU %s, X%d", w, 4+j)
			p("VPSRLW $4, X%d, X12", 4+j)
			p("VINSERTI128 $1, X12, %s, %s", t, t)
			p("VPAND Y10, %s, %s", t, t)
			p("VPMADDUBSW (SI), %s, %s", t, t)
		} else {
			// Q−128 signed; |Q−128| × q·sign(Q−128)
			p("VMOVDQU %s, %s", w, t)
			p("VPXOR Y10, %s, %s", t, t)
			p("VPSIGNB %s, Y8, Y12", t)
			p("VPABSB %s, %s", t, t)
			p("VPMADDUBSW Y12, %s, %s", t, t)
		}
		p("VPMADDWD Y11, %s, %s", t, t)
		p("VCVTDQ2PS %s, %s", t, t)
		ds := fmt.Sprintf("Y%d", 13+j%2)
		p("VBROADCASTSS %s, %s", row(j, "R10", "R11", "R12"), ds)
		p("VMULPS Y9, %s, %s", ds, ds)
		p("VFMADD231PS %s, %s, Y%d", ds, t, j)
	}
	p("ADDQ $32, SI")
	p("ADDQ $4, DX")
	p("ADDQ $%d, DI", bits*4)
	p("DECQ CX")
	p("JNZ %s_block", name)
	// the group's bias term
	p("CMPQ AX, $%d", 0)
	p("JEQ %s_next", name)
	p("VMOVUPS (BX), Y15")
	p("CMPQ AX, $%d", 2)
	p("JEQ %s_bias", name)
	p("CMPQ AX, $%d", 3)
	p("JEQ %s_bias128", name)
	for j := 0; j < 4; j++ { // Σ·s
		p("VBROADCASTSS %s, Y13", row(j, "R10", "R11", "R12"))
		p("VFMADD231PS Y13, Y15, Y%d", j)
	}
	p("JMP %s_next", name)
	label(name + "_bias")
	for j := 0; j < 4; j++ { // Σ·b
		p("VBROADCASTSS %s, Y13", row(j, "R13", "R11", "R12"))
		p("VFMADD231PS Y13, Y15, Y%d", j)
	}
	p("JMP %s_next", name)
	label(name + "_bias128")
	for j := 0; j < 4; j++ { // Σ·(b + 128·s)
		p("VBROADCASTSS %s, Y13", row(j, "R13", "R11", "R12"))
		p("VBROADCASTSS %s, Y12", row(j, "R10", "R11", "R12"))
		p("VFMADD231PS qi8c128<>(SB), Y12, Y13")
		p("VFMADD231PS Y13, Y15, Y%d", j)
	}
	label(name + "_next")
	p("ADDQ $32, BX")
	p("ADDQ $4, R10")
	p("ADDQ $4, R13")
	p("DECQ R14")
	p("JNZ %s_group", name)
	p("MOVQ out+88(FP), DI")
	for j := 0; j < 4; j++ {
		p("VMOVUPS Y%d, %d(DI)", j, 32*j)
	}
	p("VZEROUPPER")
	p("RET")
}

// genPairs is the 4-bit group-32 folded kernel (qkernel_int8.go): two
// blocks per load. Registers: SI q8, DX dv, BX c16, DI words, R8/R9
// words stride (×1, ×3), R10 scales, R11/R12 scales stride, CX pairs
// left; Y0–Y3 sums, Y4–Y7 the rows' products, Y9 dv, Y10 the nibble
// mask, Y11 int16 ones, Y12 the high nibbles, Y13/Y14 the scales, Y15
// the scales' permutation; R13 the next four rows (prefetched: at real
// size the words come from DRAM).
func genPairs() {
	name := "qDotRows4PairsAVX2"
	fmt.Fprintf(&b, "\n// func %s(q8 *int8, dv *float32, c16 *int16, words *uint32, wstride int, scales *float32, sstride, pairs int, out *[32]float32)\n", name)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-72\n", name)
	p("MOVQ q8+0(FP), SI")
	p("MOVQ dv+8(FP), DX")
	p("MOVQ c16+16(FP), BX")
	p("MOVQ words+24(FP), DI")
	p("MOVQ wstride+32(FP), R8")
	p("LEAQ (R8)(R8*2), R9")
	p("MOVQ scales+40(FP), R10")
	p("MOVQ sstride+48(FP), R11")
	p("LEAQ (R11)(R11*2), R12")
	p("MOVQ pairs+56(FP), CX")
	p("LEAQ (DI)(R8*4), R13") // the next four rows, prefetched as these are read
	p("VMOVDQU qi8nib<>(SB), Y10")
	p("VMOVDQU qi8ones<>(SB), Y11")
	p("VMOVDQU qi8pairidx<>(SB), Y15")
	for j := 0; j < 4; j++ {
		p("VXORPS Y%d, Y%d, Y%d", j, j, j)
	}
	label(name + "_pair")
	p("VMOVUPS (DX), Y9")
	for j := 0; j < 4; j++ {
		p("PREFETCHT0 %s", row(j, "R13", "R8", "R9"))
	}
	for j := 0; j < 4; j++ {
		t := fmt.Sprintf("Y%d", 4+j)
		sc := fmt.Sprintf("Y%d", 13+j%2)
		p("VMOVDQU %s, %s", row(j, "DI", "R8", "R9"), t)
		p("VPSRLW $4, %s, Y12", t)
		p("VPAND Y10, %s, %s", t, t)
		p("VPAND Y10, Y12, Y12")
		p("VPMADDUBSW (SI), %s, %s", t, t)
		p("VPMADDUBSW 32(SI), Y12, Y12")
		p("VPADDW Y12, %s, %s", t, t)
		p("VPSUBW (BX), %s, %s", t, t)
		p("VPMADDWD Y11, %s, %s", t, t)
		p("VCVTDQ2PS %s, %s", t, t)
		p("VMOVSD %s, X%d", row(j, "R10", "R11", "R12"), 13+j%2)
		p("VPERMPS %s, Y15, %s", sc, sc)
		p("VMULPS Y9, %s, %s", sc, sc)
		p("VFMADD231PS %s, %s, Y%d", sc, t, j)
	}
	p("ADDQ $64, SI")
	p("ADDQ $32, DX")
	p("ADDQ $32, BX")
	p("ADDQ $32, DI")
	p("ADDQ $32, R13")
	p("ADDQ $8, R10")
	p("DECQ CX")
	p("JNZ %s_pair", name)
	p("MOVQ out+64(FP), DI")
	for j := 0; j < 4; j++ {
		p("VMOVUPS Y%d, %d(DI)", j, 32*j)
	}
	p("VZEROUPPER")
	p("RET")
}

// genGemmPairs is the pair kernel's prefill tile: two weight rows against
// four inputs, the inputs packed per pair of blocks (packPairs: the four
// inputs' 64 bytes of q one after the other, so their 32 floats of dv
// and 64 int16 of c16). Each pair of blocks of a row is loaded and split
// into its nibbles once and its two scales permuted once, then used for
// the four inputs (the decode kernel does that work per input); per
// input and row the same operations as genPairs in the same order, so
// every lane has the decode kernel's bits. Registers: SI q, DX dv, BX
// c16, DI words (row 1 at AX bytes), R10 scales (row 1 at R14 bytes),
// R13 the next two rows (prefetched), CX pairs left; Y0–Y7 the sums (row
// j, input i in Y(4j+i)), Y8/Y9 a row's low and high nibbles, Y10 its
// scales, Y11/Y12 temporaries, Y13 the nibble mask, Y14 int16 ones, Y15
// the scales' permutation.
func genGemmPairs() {
	name := "qGemmPairs2x4AVX2"
	fmt.Fprintf(&b, "\n// func %s(q8 *int8, dv *float32, c16 *int16, words *uint32, wstride int, scales *float32, sstride, pairs, accum int, out *[64]float32)\n", name)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-80\n", name)
	p("MOVQ q8+0(FP), SI")
	p("MOVQ dv+8(FP), DX")
	p("MOVQ c16+16(FP), BX")
	p("MOVQ words+24(FP), DI")
	p("MOVQ wstride+32(FP), AX")
	p("MOVQ scales+40(FP), R10")
	p("MOVQ sstride+48(FP), R14")
	p("LEAQ (DI)(AX*2), R13")
	p("VMOVDQU qi8nib<>(SB), Y13")
	p("VMOVDQU qi8ones<>(SB), Y14")
	p("VMOVDQU qi8pairidx<>(SB), Y15")
	// accum ≠ 0 continues the sums in out (a later part of K): the same
	// fused multiply-adds in the same order as one call over all of K
	p("MOVQ out+72(FP), CX")
	p("CMPQ accum+64(FP), $0")
	p("JEQ %s_zero", name)
	for j := 0; j < 8; j++ {
		p("VMOVUPS %d(CX), Y%d", 32*j, j)
	}
	p("JMP %s_start", name)
	label(name + "_zero")
	for j := 0; j < 8; j++ {
		p("VXORPS Y%d, Y%d, Y%d", j, j, j)
	}
	label(name + "_start")
	p("MOVQ pairs+56(FP), CX")
	label(name + "_pair")
	p("PREFETCHT0 (R13)")
	p("PREFETCHT0 (R13)(AX*1)")
	for j := 0; j < 2; j++ {
		w, s := "(DI)", "(R10)"
		if j == 1 {
			w, s = "(DI)(AX*1)", "(R10)(R14*1)"
		}
		p("VMOVDQU %s, Y8", w)
		p("VPSRLW $4, Y8, Y9")
		p("VPAND Y13, Y8, Y8")
		p("VPAND Y13, Y9, Y9")
		p("VMOVSD %s, X10", s)
		p("VPERMPS Y10, Y15, Y10")
		for i := 0; i < 4; i++ {
			p("VPMADDUBSW %d(SI), Y8, Y11", 64*i)
			p("VPMADDUBSW %d(SI), Y9, Y12", 64*i+32)
			p("VPADDW Y12, Y11, Y11")
			p("VPSUBW %d(BX), Y11, Y11", 32*i)
			p("VPMADDWD Y14, Y11, Y11")
			p("VCVTDQ2PS Y11, Y11")
			p("VMULPS %d(DX), Y10, Y12", 32*i)
			p("VFMADD231PS Y12, Y11, Y%d", 4*j+i)
		}
	}
	p("ADDQ $256, SI")
	p("ADDQ $128, DX")
	p("ADDQ $128, BX")
	p("ADDQ $32, DI")
	p("ADDQ $32, R13")
	p("ADDQ $8, R10")
	p("DECQ CX")
	p("JNZ %s_pair", name)
	p("MOVQ out+72(FP), DI")
	for j := 0; j < 8; j++ {
		p("VMOVUPS Y%d, %d(DI)", j, 32*j)
	}
	p("VZEROUPPER")
	p("RET")
}

// genGemmQ8 is the 8-bit group-32 prefill tile (qkernel_int8_q8gemm.go):
// two weight rows against four packed inputs. Registers: SI q8, DX d, BX
// xsv, DI words, AX words stride, R10 scales, R13 biases, R14 scales
// stride, R8 mode, CX blocks left; Y0–Y7 the sums (4·row + input), Y8 the
// row's Q−128, Y9 its |Q−128|, Y10 the input times its sign, Y11 the
// products, Y12 d·s (then the bias factor), Y13 s, Y14 int16 ones, Y15
// the sign bytes.
func genGemmQ8() {
	name := "qGemmQ8x2x4AVX2"
	fmt.Fprintf(&b, "\n// func %s(q8 *int8, d, xsv *float32, words *uint32, wstride int, scales, biases *float32, sstride, blocks, mode, accum int, out *[64]float32)\n", name)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-96\n", name)
	p("MOVQ q8+0(FP), SI")
	p("MOVQ d+8(FP), DX")
	p("MOVQ xsv+16(FP), BX")
	p("MOVQ words+24(FP), DI")
	p("MOVQ wstride+32(FP), AX")
	p("MOVQ scales+40(FP), R10")
	p("MOVQ biases+48(FP), R13")
	p("MOVQ sstride+56(FP), R14")
	p("MOVQ mode+72(FP), R8")
	p("VMOVDQU qi8ones<>(SB), Y14")
	p("VMOVDQU qi8sign<>(SB), Y15")
	// accum ≠ 0 continues the sums in out (a later part of K)
	p("MOVQ out+88(FP), CX")
	p("CMPQ accum+80(FP), $0")
	p("JEQ %s_zero", name)
	for j := 0; j < 8; j++ {
		p("VMOVUPS %d(CX), Y%d", 32*j, j)
	}
	p("JMP %s_start", name)
	label(name + "_zero")
	for j := 0; j < 8; j++ {
		p("VXORPS Y%d, Y%d, Y%d", j, j, j)
	}
	label(name + "_start")
	p("MOVQ blocks+64(FP), CX")
	label(name + "_block")
	for j := 0; j < 2; j++ {
		w, s, bi := "(DI)", "(R10)", "(R13)"
		if j == 1 {
			w, s, bi = "(DI)(AX*1)", "(R10)(R14*1)", "(R13)(R14*1)"
		}
		p("VMOVDQU %s, Y8", w)
		p("VPXOR Y15, Y8, Y8")
		p("VPABSB Y8, Y9")
		p("VBROADCASTSS %s, Y13", s)
		for i := 0; i < 4; i++ {
			p("VMOVDQU %d(SI), Y10", 32*i)
			p("VPSIGNB Y8, Y10, Y10")
			p("VPMADDUBSW Y10, Y9, Y11")
			p("VPMADDWD Y14, Y11, Y11")
			p("VCVTDQ2PS Y11, Y11")
			p("VBROADCASTSS %d(DX), Y12", 4*i)
			p("VMULPS Y13, Y12, Y12")
			p("VFMADD231PS Y12, Y11, Y%d", 4*j+i)
		}
		// the group's (block's) bias term: Σ·(b + 128·s)
		p("CMPQ R8, $%d", 3)
		p("JNE %s_nobias%d", name, j)
		p("VBROADCASTSS %s, Y12", bi)
		p("VFMADD231PS qi8c128<>(SB), Y13, Y12")
		for i := 0; i < 4; i++ {
			p("VFMADD231PS %d(BX), Y12, Y%d", 32*i, 4*j+i)
		}
		label(fmt.Sprintf("%s_nobias%d", name, j))
	}
	p("ADDQ $128, SI")
	p("ADDQ $16, DX")
	p("ADDQ $128, BX")
	p("ADDQ $32, DI")
	p("ADDQ $4, R10")
	p("ADDQ $4, R13")
	p("DECQ CX")
	p("JNZ %s_block", name)
	p("MOVQ out+88(FP), DI")
	for j := 0; j < 8; j++ {
		p("VMOVUPS Y%d, %d(DI)", j, 32*j)
	}
	p("VZEROUPPER")
	p("RET")
}

func data(name string, word uint32) {
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "DATA %s<>+%d(SB)/4, $0x%08x\n", name, 4*i, word)
	}
	fmt.Fprintf(&b, "GLOBL %s<>(SB), RODATA|NOPTR, $32\n", name)
}

func main() {
	b.WriteString(`// Code generated by qkernel_int8_gen.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The fast mode's AVX2 kernels (qkernel_int8.go): four rows of 4- or
// 8-bit weights against one input quantized to 8 bits per block, and the
// 4-bit pair layout's and the 8-bit group-32 prefill tiles, two rows
// against four inputs.

`)
	data("qi8nib", 0x0f0f0f0f)
	data("qi8sign", 0x80808080)
	data("qi8ones", 0x00010001)
	data("qi8c128", 0x43000000) // 128.0
	for i, v := range []int{0, 0, 0, 0, 1, 1, 1, 1} {
		fmt.Fprintf(&b, "DATA qi8pairidx<>+%d(SB)/4, $%d\n", 4*i, v)
	}
	b.WriteString("GLOBL qi8pairidx<>(SB), RODATA|NOPTR, $32\n")
	gen(4)
	gen(8)
	genPairs()
	genGemmPairs()
	genGemmQ8()
	if err := os.WriteFile("qkernel_int8_amd64.s", []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
