//go:build ignore

// Generates attn_arm64.s: go run attn_neon_gen.go
//
// attention's two-head kernels on NEON (attendHeadsN with n = 2: two query
// heads of one KV head, each bf16 row widened once for both):
// attnScores2BF16NEON is dotBF16NEON for two queries (each head's sixteen
// lanes and their sum in dotF32NEON's order, so the single-head path's
// bits), attnWsum2BF16NEON axpyBF16NEON for two outputs (rows in order,
// each element's steps fused as axpyNEON fuses them). Go's assembler has
// no vector FADD or FADDP: WORDs from internal/arm64enc.
package main

import enc "etchat/internal/arm64enc"

// asm is the file being written.
var asm = enc.NewFile("attn_neon_gen.go")

// widen loads sixteen bf16 from R1 (advancing it) into fp32 lanes
// V<at>…V<at+3>, as dotBF16NEON does (V20, V21 scratch).
func widen(at int) {
	asm.Op("VLD1.P 32(R1), [V20.H8, V21.H8]")
	asm.Op("VUXTL V20.H4, V%d.S4", at)
	asm.Op("VUXTL2 V20.H8, V%d.S4", at+1)
	asm.Op("VUXTL V21.H4, V%d.S4", at+2)
	asm.Op("VUXTL2 V21.H8, V%d.S4", at+3)
	for i := 0; i < 4; i++ {
		asm.Op("VSHL $16, V%d.S4, V%d.S4", at+i, at+i)
	}
}

// sum4 leaves V<r>+…+V<r+3>'s lanes summed in F<r>, dot_neon_gen.go's order.
func sum4(r int) {
	asm.Word(enc.FADD4S(r, r, r+1))
	asm.Word(enc.FADD4S(r+2, r+2, r+3))
	asm.Word(enc.FADD4S(r, r, r+2))
	asm.Word(enc.FADDP4S(r, r, r))
	asm.Word(enc.FADDPS(r, r))
}

func main() {

	asm.Func("attnScores2BF16NEON(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)", 56,
		"out[r] = q·k[r], out[os/4 + r] = q[qs/4:]·k[r] for r < rows (k rows d apart);",
		"d a positive multiple of 16, rows ≥ 1.")
	asm.Op("MOVD q+0(FP), R8")
	asm.Op("MOVD qs+8(FP), R9")
	asm.Op("MOVD k+16(FP), R1")
	asm.Op("MOVD d+24(FP), R10")
	asm.Op("LSR $4, R10, R10")
	asm.Op("MOVD rows+32(FP), R11")
	asm.Op("MOVD out+40(FP), R5")
	asm.Op("MOVD os+48(FP), R6")
	asm.Op("ADD R5, R6, R6")
	asm.Op("ADD R8, R9, R9")
	asm.Label("s2row")
	asm.Op("MOVD R8, R3")
	asm.Op("MOVD R9, R4")
	asm.Op("MOVD R10, R2")
	for i := 0; i < 8; i++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	asm.Label("s2loop")
	asm.Op("VLD1.P 64(R3), [V8.S4, V9.S4, V10.S4, V11.S4]")
	asm.Op("VLD1.P 64(R4), [V12.S4, V13.S4, V14.S4, V15.S4]")
	widen(16)
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V%d.S4, V%d.S4, V%d.S4", 8+i, 16+i, i)
	}
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V%d.S4, V%d.S4, V%d.S4", 12+i, 16+i, 4+i)
	}
	asm.Op("SUBS $1, R2, R2")
	asm.Op("BNE s2loop")
	sum4(0)
	sum4(4)
	asm.Op("FMOVS F0, (R5)")
	asm.Op("FMOVS F4, (R6)")
	asm.Op("ADD $4, R5, R5")
	asm.Op("ADD $4, R6, R6")
	asm.Op("SUBS $1, R11, R11")
	asm.Op("BNE s2row")
	asm.Op("RET")

	asm.Func("attnWsum2BF16NEON(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)", 56,
		"o[:d] += p[r]·v[r], o[os/4:][:d] += p[ps/4 + r]·v[r] for r < rows in order, fused;",
		"d a positive multiple of 16, rows ≥ 1.")
	asm.Op("MOVD o+0(FP), R8")
	asm.Op("MOVD os+8(FP), R9")
	asm.Op("MOVD v+16(FP), R1")
	asm.Op("MOVD d+24(FP), R10")
	asm.Op("LSR $4, R10, R10")
	asm.Op("MOVD rows+32(FP), R11")
	asm.Op("MOVD p+40(FP), R5")
	asm.Op("MOVD ps+48(FP), R6")
	asm.Op("ADD R5, R6, R6")
	asm.Op("ADD R8, R9, R9")
	asm.Label("w2row")
	asm.Op("FMOVS (R5), F16")
	asm.Op("VDUP V16.S[0], V16.S4")
	asm.Op("FMOVS (R6), F17")
	asm.Op("VDUP V17.S[0], V17.S4")
	asm.Op("ADD $4, R5, R5")
	asm.Op("ADD $4, R6, R6")
	asm.Op("MOVD R8, R3")
	asm.Op("MOVD R9, R4")
	asm.Op("MOVD R10, R2")
	asm.Label("w2loop")
	asm.Op("VLD1 (R3), [V0.S4, V1.S4, V2.S4, V3.S4]")
	asm.Op("VLD1 (R4), [V4.S4, V5.S4, V6.S4, V7.S4]")
	widen(8)
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V16.S4, V%d.S4, V%d.S4", 8+i, i)
	}
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V17.S4, V%d.S4, V%d.S4", 8+i, 4+i)
	}
	asm.Op("VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R3)")
	asm.Op("VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R4)")
	asm.Op("SUBS $1, R2, R2")
	asm.Op("BNE w2loop")
	asm.Op("SUBS $1, R11, R11")
	asm.Op("BNE w2row")
	asm.Op("RET")

	asm.Save("attn_arm64.s") // or the path given (TestNEONGenerated)
}
