//go:build ignore

// Generates dot_arm64.s: go run dot_neon_gen.go
//
// The float kernels of the decode's dense matmuls and attention on NEON:
// dotF32NEON and dotBF16NEON (sixteen lanes in four registers, summed
// ((0+1)+(2+3)) by register then pairwise; like amd64's AVX2 dots they are
// held to the exact sums by a tolerance, not to the Go loop's bits) and
// axpyNEON (y += a·x, fused per element as Go's arm64 compiler fuses
// axpyGo, so the same bits) with axpyBF16NEON (x bf16, widened first). Go's assembler has no vector FADD or FADDP:
// WORDs from internal/arm64enc.
package main

import enc "etchat/internal/arm64enc"

// asm is the file being written.
var asm = enc.NewFile("dot_neon_gen.go")

// sum4 leaves V0+V1+V2+V3's lanes summed in F0 and returns it at off.
func sum4(off int) {
	asm.Word(enc.FADD4S(0, 0, 1))
	asm.Word(enc.FADD4S(2, 2, 3))
	asm.Word(enc.FADD4S(0, 0, 2))
	asm.Word(enc.FADDP4S(0, 0, 0))
	asm.Word(enc.FADDPS(0, 0))
	asm.Op("FMOVS F0, ret+%d(FP)", off)
	asm.Op("RET")
}

func zero4() {
	for i := 0; i < 4; i++ {
		asm.Op("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
}

func main() {

	asm.Func("dotF32NEON(x, y *float32, n int) float32", 28, "n a positive multiple of 16.")
	asm.Op("MOVD x+0(FP), R0")
	asm.Op("MOVD y+8(FP), R1")
	asm.Op("MOVD n+16(FP), R2")
	asm.Op("LSR $4, R2, R2")
	zero4()
	asm.Label("f32loop")
	asm.Op("VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]")
	asm.Op("VLD1.P 64(R1), [V8.S4, V9.S4, V10.S4, V11.S4]")
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V%d.S4, V%d.S4, V%d.S4", 4+i, 8+i, i)
	}
	asm.Op("SUBS $1, R2, R2")
	asm.Op("BNE f32loop")
	sum4(24)

	asm.Func("dotBF16NEON(x *float32, w *uint16, n int) float32", 28, "n a positive multiple of 16; a bf16 widens exactly (bits << 16).")
	asm.Op("MOVD x+0(FP), R0")
	asm.Op("MOVD w+8(FP), R1")
	asm.Op("MOVD n+16(FP), R2")
	asm.Op("LSR $4, R2, R2")
	zero4()
	asm.Label("bf16loop")
	asm.Op("VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]")
	asm.Op("VLD1.P 32(R1), [V12.H8, V13.H8]")
	asm.Op("VUXTL V12.H4, V8.S4")
	asm.Op("VUXTL2 V12.H8, V9.S4")
	asm.Op("VUXTL V13.H4, V10.S4")
	asm.Op("VUXTL2 V13.H8, V11.S4")
	for i := 0; i < 4; i++ {
		asm.Op("VSHL $16, V%d.S4, V%d.S4", 8+i, 8+i)
	}
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V%d.S4, V%d.S4, V%d.S4", 4+i, 8+i, i)
	}
	asm.Op("SUBS $1, R2, R2")
	asm.Op("BNE bf16loop")
	sum4(24)

	asm.Func("axpyNEON(y, x *float32, n int, a float32)", 28, "y[i] += a·x[i], fused; n a positive multiple of 16.")
	asm.Op("MOVD y+0(FP), R0")
	asm.Op("MOVD x+8(FP), R1")
	asm.Op("MOVD n+16(FP), R2")
	asm.Op("LSR $4, R2, R2")
	asm.Op("FMOVS a+24(FP), F16")
	asm.Op("VDUP V16.S[0], V16.S4")
	asm.Label("axpyloop")
	asm.Op("VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]")
	asm.Op("VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]")
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V16.S4, V%d.S4, V%d.S4", 4+i, i)
	}
	asm.Op("VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)")
	asm.Op("SUBS $1, R2, R2")
	asm.Op("BNE axpyloop")
	asm.Op("RET")

	// attention's weighted sum over bf16 value rows read in place: each
	// row widened as dotBF16NEON widens it, then axpyNEON's fused steps,
	// so axpyNEON's bits on the widened row
	asm.Func("axpyBF16NEON(y *float32, x *uint16, n int, a float32)", 28, "y[i] += a·bf16(x[i]), fused; n a positive multiple of 16.")
	asm.Op("MOVD y+0(FP), R0")
	asm.Op("MOVD x+8(FP), R1")
	asm.Op("MOVD n+16(FP), R2")
	asm.Op("LSR $4, R2, R2")
	asm.Op("FMOVS a+24(FP), F16")
	asm.Op("VDUP V16.S[0], V16.S4")
	asm.Label("axpybf16loop")
	asm.Op("VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]")
	asm.Op("VLD1.P 32(R1), [V12.H8, V13.H8]")
	asm.Op("VUXTL V12.H4, V4.S4")
	asm.Op("VUXTL2 V12.H8, V5.S4")
	asm.Op("VUXTL V13.H4, V6.S4")
	asm.Op("VUXTL2 V13.H8, V7.S4")
	for i := 0; i < 4; i++ {
		asm.Op("VSHL $16, V%d.S4, V%d.S4", 4+i, 4+i)
	}
	for i := 0; i < 4; i++ {
		asm.Op("VFMLA V16.S4, V%d.S4, V%d.S4", 4+i, i)
	}
	asm.Op("VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)")
	asm.Op("SUBS $1, R2, R2")
	asm.Op("BNE axpybf16loop")
	asm.Op("RET")

	asm.Save("dot_arm64.s") // or the path given (TestNEONGenerated)
}
