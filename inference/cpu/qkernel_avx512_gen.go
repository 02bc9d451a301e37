//go:build ignore

// Generates qkernel_avx512_amd64.s: go run qkernel_avx512_gen.go
//
// The AVX-512 decode kernels do the AVX2 kernels' (qkernel_amd64.s)
// operations in the same order, eight lanes per row, with two rows in
// one 512-bit register: row 2i in the low half, row 2i+1 in the high
// half, the prepared input broadcast to both halves. Every lane's
// arithmetic is the AVX2 kernel's, so the results are the same bits (and
// those of qDotGo); the final lane sums are done by the caller (hsum8).
package main

import (
	"fmt"
	"os"
	"strings"
)

var b strings.Builder

func p(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
func label(s string)            { fmt.Fprintf(&b, "%s:\n", s) }

// rowAddr is the address of row r (0–3 from base) rows stride apart
// (stride3 = 3·stride).
func rowAddr(r int, base, stride, stride3 string) string {
	switch r % 4 {
	case 0:
		return "(" + base + ")"
	case 1:
		return "(" + base + ")(" + stride + "*1)"
	case 2:
		return "(" + base + ")(" + stride + "*2)"
	}
	return "(" + base + ")(" + stride3 + "*1)"
}

func z(i int) string { return fmt.Sprintf("Z%d", i) }
func y(i int) string { return fmt.Sprintf("Y%d", i) }

// quads holds the base registers of rows 4q…4q+3: the words while the
// blocks run, the scales and then the biases at the end of a group.
// pfTiles is how many passes of rows ahead the kernels prefetch.
const pfTiles = 1

var quads = []string{"DI", "R9", "R10", "R12"}

// kern is one kernel's register plan: pairs of rows (two per 512-bit
// register), and where its constants live.
type kern struct {
	bits, pairs                  int
	acc, sq, words, x, tmp, ntmp int // first registers (ntmp temporaries)
	mask                         [4]string
	shift                        string // 4-bit: the word shifts (register or memory)
	scaleTmp, sx                 int
	folded                       bool // biases folded: each scale serves as its bias
}

func (k *kern) block(first bool) {
	for i := 0; i < k.pairs; i++ {
		q := quads[i/2]
		lo, hi := rowAddr(2*i%4, q, "R8", "R13"), rowAddr((2*i+1)%4, q, "R8", "R13")
		w := z(k.words + i)
		if k.bits == 4 {
			// unmasked loads: masked ones that miss the cache are slow
			t := y(k.tmp + i%k.ntmp)
			p("VBROADCASTI32X4 %s, %s", lo, w)
			p("VBROADCASTI32X4 %s, %s", hi, t)
			p("VINSERTI64X4 $1, %s, %s, %s", t, w, w)
			p("VPSRLVD %s, %s, %s", k.shift, w, w)
		} else {
			p("VMOVDQU32 %s, %s", lo, strings.Replace(w, "Z", "Y", 1))
			p("VINSERTI64X4 $1, %s, %s, %s", hi, w, w)
		}
	}
	for j := 0; j < 4; j++ {
		p("VBROADCASTF64X4 %d(SI), %s", 32*j, z(k.x+j))
	}
	n := 0
	for pl := 0; pl < 4; pl++ {
		for i := 0; i < k.pairs; i++ {
			t := z(k.tmp + n%k.ntmp)
			n++
			w := z(k.words + i)
			switch {
			case k.bits == 8 && pl == 3:
				p("VPSRLD $24, %s, %s", w, t)
			case strings.HasPrefix(k.mask[pl], "Z"):
				p("VPANDD %s, %s, %s", k.mask[pl], w, t)
			default:
				p("VPANDD.BCST %s, %s, %s", k.mask[pl], w, t)
			}
			p("VCVTDQ2PS %s, %s", t, t)
			if first && pl == 0 {
				p("VMULPS %s, %s, %s", z(k.x+pl), t, z(k.sq+i))
			} else {
				p("VFMADD231PS %s, %s, %s", z(k.x+pl), t, z(k.sq+i))
			}
		}
	}
	wb := 16
	if k.bits == 8 {
		wb = 32
	}
	// the words of the rows pfTiles passes ahead, as far into them as
	// this pass is into its own (hardware prefetchers lose track of
	// eight rows read a few bytes at a time)
	for o := 0; o < 2*k.pairs*wb; o += 64 {
		p("PREFETCHT0 %d(R10)", o)
	}
	p("ADDQ $%d, R10", 2*k.pairs*wb)
	p("ADDQ $128, SI")
	for q := 0; q < k.pairs/2; q++ {
		p("ADDQ $%d, %s", wb, quads[q])
	}
}

func (k *kern) gen() {
	rows := 2 * k.pairs
	name := fmt.Sprintf("qDotRows%dQ%dAVX512", rows, k.bits)
	if k.folded {
		name = fmt.Sprintf("qDotRows%dQ%dFoldedAVX512", rows, k.bits)
	}
	nq := k.pairs / 2
	fmt.Fprintf(&b, `
// func %s(xp *float32, words *uint32, wstride int, scales, biases *float32, sstride int, groups, bpg int, out *float32)
// out[j] = row j's dot with xp, j < %d: row j's words at words+j·wstride bytes, its scales and biases
// at +j·sstride bytes; groups groups of bpg blocks, each group's blocks
// followed in xp by its eight lane sums.
TEXT ·%s(SB), NOSPLIT, $%d-72
`, name, rows, name, 8*nq)
	m := 0xf
	if k.bits == 8 {
		m = 0xff
	}
	for pl := 0; pl < 4; pl++ {
		if strings.HasPrefix(k.mask[pl], "Z") {
			p("MOVL $0x%x, AX", m<<(8*pl))
			p("VPBROADCASTD AX, %s", k.mask[pl])
		}
	}
	if k.bits == 4 && strings.HasPrefix(k.shift, "Z") {
		p("VMOVDQU64 qshift4z<>(SB), %s", k.shift)
	}
	p("MOVL $0xff00, AX")
	p("KMOVW AX, K1")
	p("MOVQ xp+0(FP), SI")
	p("MOVQ words+8(FP), DI")
	p("MOVQ wstride+16(FP), R8")
	p("MOVQ scales+24(FP), DX")
	p("MOVQ biases+32(FP), R14")
	p("SUBQ DX, R14") // biases − scales: the bias of a row is its scale's address + R14
	p("MOVQ sstride+40(FP), BX")
	p("MOVQ groups+48(FP), CX")
	p("LEAQ (R8)(R8*2), R13")
	p("LEAQ (BX)(BX*2), R11")
	for q := 1; q < nq; q++ {
		p("LEAQ (%s)(R8*4), %s", quads[q-1], quads[q])
	}
	// prefetch pointers: words (R10) and scales (R12; biases at +R14)
	// of the rows pfTiles passes ahead
	sh := 0
	for 1<<sh < 2*k.pairs*pfTiles {
		sh++
	}
	p("MOVQ R8, R10")
	p("SHLQ $%d, R10", sh)
	p("ADDQ DI, R10")
	p("MOVQ BX, R12")
	p("SHLQ $%d, R12", sh)
	p("ADDQ DX, R12")
	for i := 0; i < k.pairs; i++ {
		p("VPXORD %s, %s, %s", z(k.acc+i), z(k.acc+i), z(k.acc+i))
	}
	pre := fmt.Sprintf("q%dr%d", k.bits, rows)
	if k.folded {
		pre += "f"
	}
	label(pre + "group")
	p("TESTQ CX, CX")
	p("JZ %sdone", pre)
	k.block(true)
	p("MOVQ bpg+56(FP), AX")
	p("DECQ AX")
	p("JZ %sscale", pre)
	label(pre + "block")
	k.block(false)
	p("DECQ AX")
	p("JNZ %sblock", pre)
	label(pre + "scale")
	// the word pointers make room for the scales' and biases'
	for q := 0; q < nq; q++ {
		p("MOVQ %s, w%d-%d(SP)", quads[q], q, 8*(q+1))
	}
	p("MOVQ DX, DI")
	for q := 1; q < nq; q++ {
		p("LEAQ (%s)(BX*4), %s", quads[q-1], quads[q])
	}
	for i := 0; i < k.pairs; i++ {
		t := z(k.scaleTmp + i)
		q := quads[i/2]
		p("VBROADCASTSS %s, %s", rowAddr(2*i%4, q, "BX", "R11"), t)
		p("VBROADCASTSS %s, %s", rowAddr((2*i+1)%4, q, "BX", "R11"), y(k.tmp+i%k.ntmp))
		p("VINSERTF64X4 $1, %s, %s, %s", y(k.tmp+i%k.ntmp), t, t)
		p("VFMADD231PS %s, %s, %s", t, z(k.sq+i), z(k.acc+i))
	}
	p("VBROADCASTF64X4 (SI), %s", z(k.sx))
	if !k.folded {
		for q := 0; q < nq; q++ {
			p("ADDQ R14, %s", quads[q])
		}
	}
	for i := 0; i < k.pairs; i++ {
		t := z(k.scaleTmp + i)
		if !k.folded {
			q := quads[i/2]
			p("VBROADCASTSS %s, %s", rowAddr(2*i%4, q, "BX", "R11"), t)
			p("VBROADCASTSS %s, %s", rowAddr((2*i+1)%4, q, "BX", "R11"), y(k.tmp+i%k.ntmp))
			p("VINSERTF64X4 $1, %s, %s, %s", y(k.tmp+i%k.ntmp), t, t)
		}
		// folded: the scale again, against the Σx the preparation
		// multiplied by BiasMul
		p("VFMADD231PS %s, %s, %s", t, z(k.sx), z(k.acc+i))
	}
	for q := 0; q < nq; q++ {
		p("MOVQ w%d-%d(SP), %s", q, 8*(q+1), quads[q])
	}
	p("PREFETCHT0 (R12)")
	if !k.folded {
		p("PREFETCHT0 (R12)(R14*1)")
	}
	p("ADDQ $%d, R12", 4*2*k.pairs)
	p("ADDQ $32, SI")
	p("ADDQ $4, DX")
	p("DECQ CX")
	p("JMP %sgroup", pre)
	label(pre + "done")
	// each row's eight lanes summed as qDotRows4Q*AVX2 (and hsum8) do
	p("MOVQ out+64(FP), DI")
	for i := 0; i < k.pairs; i++ {
		a := k.acc + i
		p("VEXTRACTF64X4 $1, %s, Y12", z(a))
		for j, r := range []int{a, 12} {
			p("VEXTRACTF128 $1, Y%d, X13", r)
			p("VADDPS X13, X%d, X%d", r, r)
			p("VHADDPS X%d, X%d, X%d", r, r, r)
			p("VHADDPS X%d, X%d, X%d", r, r, r)
			p("MOVSS X%d, %d(DI)", r, 4*(2*i+j))
		}
	}
	p("VZEROUPPER")
	p("RET")
}

func main() {
	b.WriteString(`// Code generated by qkernel_avx512_gen.go; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// The AVX-512 decode kernels: the AVX2 kernels' operations and order
// (qkernel_amd64.s), two rows per 512-bit register (row 2i in the low
// eight lanes, row 2i+1 in the high eight), eight rows per pass.

`)
	for i, v := range []int{0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4} {
		fmt.Fprintf(&b, "DATA qshift4z<>+%d(SB)/4, $%d\n", 4*i, v)
	}
	b.WriteString("GLOBL qshift4z<>(SB), RODATA|NOPTR, $64\n")
	for _, bits := range []int{4, 8} {
		m := 1<<bits - 1
		for pl := 0; pl < 4; pl++ {
			fmt.Fprintf(&b, "DATA qmask%dz<>+%d(SB)/4, $0x%x\n", bits, 4*pl, m<<(8*pl))
		}
		fmt.Fprintf(&b, "GLOBL qmask%dz<>(SB), RODATA|NOPTR, $16\n", bits)
	}
	for _, folded := range []bool{false, true} {
		for _, bits := range []int{4, 8} {
			// eight rows: every constant in a register
			k8 := kern{bits: bits, pairs: 4, acc: 0, sq: 4, words: 8, x: 20, tmp: 24, ntmp: 4,
				mask: [4]string{"Z15", "Z16", "Z17", "Z18"}, shift: "Z14", scaleTmp: 28, sx: 19, folded: folded}
			k8.gen()
		}
	}
	if err := os.WriteFile("qkernel_avx512_amd64.s", []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
