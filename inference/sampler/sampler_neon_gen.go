//go:build ignore

// Generates sampler_arm64.s: go run sampler_neon_gen.go
//
// maxNEON, the largest value of a row for argmaxRow: sixteen running
// maxima (four registers), each lane replaced where the next value is
// greater (FCMGT, then BIT), so NaNs are skipped as argmax4's > skips
// them. Go's assembler has no vector FCMGT: a WORD from internal/arm64enc.
package main

import enc "etchat/internal/arm64enc"

// asm is the file being written.
var asm = enc.NewFile("sampler_neon_gen.go")

func main() {
	asm.Func("maxNEON(x *float32, n int, out *[16]float32)", 24,
		"n a positive multiple of 16: out holds sixteen lanes' maxima (-Inf where a",
		"lane saw no number), the caller takes the largest.")
	asm.Op("MOVD x+0(FP), R0")
	asm.Op("MOVD n+8(FP), R1")
	asm.Op("LSR $4, R1, R1")
	asm.Op("MOVW $0xff800000, R2") // -Inf
	asm.Op("VDUP R2, V0.S4")
	for i := 1; i < 4; i++ {
		asm.Op("VMOV V0.B16, V%d.B16", i)
	}
	asm.Label("loop")
	asm.Op("VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]")
	for i := 0; i < 4; i++ {
		asm.Word(enc.FCMGT4S(8+i, 4+i, i)) // x > max
	}
	for i := 0; i < 4; i++ {
		asm.Op("VBIT V%d.B16, V%d.B16, V%d.B16", 8+i, 4+i, i) // max = x there
	}
	asm.Op("SUBS $1, R1, R1")
	asm.Op("BNE loop")
	asm.Op("MOVD out+16(FP), R0")
	asm.Op("VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R0)")
	asm.Op("RET")
	asm.Save("sampler_arm64.s") // or the path given (TestNEONGenerated)
}
