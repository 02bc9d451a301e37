//go:build !amd64 || purego

package cpu

var useAttn4 = false // settable, as on amd64, for the tests

func attend4(k, v kvRows, D int) bool { return false }

func attendHeads4(out, q []float32, k, v kvRows, S, D, qBase, kBase, window int, scale float32, h, kh int, scores []float32) {
	panic("cpu: attendHeads4 without AVX-512") // attend4 is false
}
