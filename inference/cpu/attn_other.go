//go:build (!amd64 && !arm64) || purego

package cpu

// settable, as on amd64, for the tests
var useAttn4, useAttn2 = false, false

func attendGroup(k, v kvRows, D int) int { return 0 }

func attendHeadsN(n int, out, q []float32, k, v kvRows, T, t, S, D, qBase, kBase, window int, scale float32, h, kh int, scores []float32) {
	panic("cpu: attendHeadsN without SIMD") // attendGroup is 0
}

// attendSIMD is false: attend widens the KV rows into fp32 copies.
func attendSIMD(D int) bool { return false }
