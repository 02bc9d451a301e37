// Package arm64enc encodes the few AArch64 Advanced SIMD instructions that
// Go's arm64 assembler does not know (vector FMUL, FADD, FADDP, FCMGT,
// SCVTF, UCVTF, FCVTAS, SADDLP, SADALP, SQXTN, SMAX, UMAXV, SDOT, SMMLA),
// for the generators of the NEON kernels (inference/cpu,
// inference/sampler), which emit them as WORD directives. Encodings from the Arm Architecture
// Reference Manual for A-profile (DDI 0487), section C7.2 (Alphabetical
// list of A64 Advanced SIMD and floating-point instructions); the tests
// hold each one to the words GNU as (or, for the input quantizer's, LLVM's
// assembler) writes for the same instruction.
package arm64enc

import "fmt"

// Inst is one encoded instruction and its assembly text (for the
// generated file's comment).
type Inst struct {
	Word uint32
	Text string
}

// Directive is the line a Go assembly file takes: WORD $0x…; // text.
func (i Inst) Directive() string {
	return fmt.Sprintf("WORD $0x%08x // %s", i.Word, i.Text)
}

// three is a three-register instruction d, n, m in the "three same"
// (or dot product) layout: Rm at bits 16–20, Rn at 5–9, Rd at 0–4.
func three(base uint32, name, arr string, d, n, m int, arrN, arrM string) Inst {
	check(d, n, m)
	return Inst{base | uint32(m)<<16 | uint32(n)<<5 | uint32(d),
		fmt.Sprintf("%s V%d.%s, V%d.%s, V%d.%s", name, d, arr, n, arrN, m, arrM)}
}

func two(base uint32, name, arrD, arrN string, d, n int) Inst {
	check(d, n)
	return Inst{base | uint32(n)<<5 | uint32(d), fmt.Sprintf("%s %s%d%s, V%d.%s", name, prefix(arrD), d, suffix(arrD), n, arrN)}
}

func prefix(arr string) string {
	if arr == "" || arr[0] != 'V' {
		return "V"
	}
	return ""
}

func suffix(arr string) string {
	if arr == "" {
		return ""
	}
	return "." + arr
}

func check(regs ...int) {
	for _, r := range regs {
		if r < 0 || r > 31 {
			panic(fmt.Sprintf("arm64enc: register V%d", r))
		}
	}
}

// FMUL Vd.4S, Vn.4S, Vm.4S (FMUL (vector), Q=1 sz=0).
func FMUL4S(d, n, m int) Inst { return three(0x6e20dc00, "FMUL", "4S", d, n, m, "4S", "4S") }

// FADD Vd.4S, Vn.4S, Vm.4S (FADD (vector), Q=1 sz=0).
func FADD4S(d, n, m int) Inst { return three(0x4e20d400, "FADD", "4S", d, n, m, "4S", "4S") }

// FSUB Vd.4S, Vn.4S, Vm.4S (FSUB (vector), Q=1 sz=0).
func FSUB4S(d, n, m int) Inst { return three(0x4ea0d400, "FSUB", "4S", d, n, m, "4S", "4S") }

// FADDP Vd.4S, Vn.4S, Vm.4S (FADDP (vector), Q=1 sz=0): lanes
// (n0+n1, n2+n3, m0+m1, m2+m3).
func FADDP4S(d, n, m int) Inst { return three(0x6e20d400, "FADDP", "4S", d, n, m, "4S", "4S") }

// FADDP Sd, Vn.2S (FADDP (scalar), sz=0): n0+n1.
func FADDPS(d, n int) Inst {
	check(d, n)
	return Inst{0x7e30d800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("FADDP S%d, V%d.2S", d, n)}
}

// FCMGT Vd.4S, Vn.4S, Vm.4S (FCMGT (register), Q=1 sz=0): all ones in
// each lane where n > m (false for a NaN in either).
func FCMGT4S(d, n, m int) Inst { return three(0x6ea0e400, "FCMGT", "4S", d, n, m, "4S", "4S") }

// SCVTF Vd.4S, Vn.4S (SCVTF (vector, integer), Q=1 sz=0).
func SCVTF4S(d, n int) Inst { return two(0x4e21d800, "SCVTF", "4S", "4S", d, n) }

// UCVTF Vd.4S, Vn.4S (UCVTF (vector, integer), Q=1 sz=0).
func UCVTF4S(d, n int) Inst { return two(0x6e21d800, "UCVTF", "4S", "4S", d, n) }

// SDOT Vd.4S, Vn.16B, Vm.16B (SDOT (vector), FEAT_DotProd):
// lane i += Σ_{j<4} n[4i+j]·m[4i+j], signed bytes.
func SDOT(d, n, m int) Inst { return three(0x4e809400, "SDOT", "4S", d, n, m, "16B", "16B") }

// SMMLA Vd.4S, Vn.16B, Vm.16B (SMMLA (vector), FEAT_I8MM): the
// 2×8 by 8×2 signed byte matrix product added to the 2×2 int32 matrix d.
func SMMLA(d, n, m int) Inst { return three(0x4e80a400, "SMMLA", "4S", d, n, m, "16B", "16B") }

// SADDLP Vd.4S, Vn.8H (SADDLP, Q=1 size=01): adjacent int16
// pairs summed into int32 lanes.
func SADDLP4S(d, n int) Inst { return two(0x4e602800, "SADDLP", "4S", "8H", d, n) }

// The input quantizer's (inference/cpu's qPrepPairsNEON) instructions.

// FCVTAS Vd.4S, Vn.4S (FCVTAS (vector), Q=1 sz=0): each lane converted
// to int32 rounding to nearest with ties away from zero (Go's
// math.Round; FCVTNS would round ties to even), saturating, NaN to 0.
func FCVTAS4S(d, n int) Inst { return two(0x4e21c800, "FCVTAS", "4S", "4S", d, n) }

// SQXTN Vd.4H, Vn.4S (SQXTN, Q=0 size=01): int32 lanes narrowed to
// int16 with saturation into the low half of d (the high half zeroed).
func SQXTN4H(d, n int) Inst { return two(0x0e614800, "SQXTN", "4H", "4S", d, n) }

// SQXTN2 Vd.8H, Vn.4S (SQXTN2, Q=1 size=01): SQXTN4H into the high half
// of d, the low half kept.
func SQXTN28H(d, n int) Inst { return two(0x4e614800, "SQXTN2", "8H", "4S", d, n) }

// SQXTN Vd.8B, Vn.8H (SQXTN, Q=0 size=00): int16 lanes narrowed to
// int8 with saturation into the low half of d.
func SQXTN8B(d, n int) Inst { return two(0x0e214800, "SQXTN", "8B", "8H", d, n) }

// SQXTN2 Vd.16B, Vn.8H (SQXTN2, Q=1 size=00): SQXTN8B into the high
// half of d.
func SQXTN216B(d, n int) Inst { return two(0x4e214800, "SQXTN2", "16B", "8H", d, n) }

// SMAX Vd.16B, Vn.16B, Vm.16B (SMAX, Q=1 size=00): signed byte maxima.
func SMAX16B(d, n, m int) Inst { return three(0x4e206400, "SMAX", "16B", d, n, m, "16B", "16B") }

// SADDLP Vd.8H, Vn.16B (SADDLP, Q=1 size=00): adjacent int8 pairs
// summed into int16 lanes.
func SADDLP8H(d, n int) Inst { return two(0x4e202800, "SADDLP", "8H", "16B", d, n) }

// SADALP Vd.8H, Vn.16B (SADALP, Q=1 size=00): SADDLP8H added to d.
func SADALP8H(d, n int) Inst { return two(0x4e206800, "SADALP", "8H", "16B", d, n) }

// UMAXV Sd, Vn.4S (UMAXV, Q=1 size=10): the largest of the four lanes
// as unsigned integers.
func UMAXVS(d, n int) Inst {
	check(d, n)
	return Inst{0x6eb0a800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("UMAXV S%d, V%d.4S", d, n)}
}
