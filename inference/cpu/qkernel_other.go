//go:build !amd64 || purego

package cpu

// What every build without amd64's assembly shares, arm64's NEON one
// included (the kernels arm64 replaces are in qkernel_portable.go).

func init() { qMatMulRange = qMatMulRangeFast }

var useAVX512 = false // settable, as on amd64, for the tests

func qDotRowsWide(out, xp []float32, w *qMatrix, scales, biases []float32, r0, r1 int) int { return r0 }

// qPrepRow is prepare's assembly (none here).
func qPrepRow(d, x []float32, groups, bpg int, tab *qPrepTab, mul float32) bool { return false }

// qDotRows3 is amd64's pipelined three-row kernel (none here).
func qDotRows3(acc *[4]float32, xp []float32, words []uint32, w1, w2 int, scales []float32, s1, s2, groups, bpg, bits int, folded bool) bool {
	return false
}
