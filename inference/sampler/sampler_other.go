//go:build (!amd64 && !arm64) || purego

package sampler

var useAVX2 = false // settable, as on amd64, for the tests

func weigh(l, w []float32, maxv, floor, scale float32) { weighGo(l, w[:len(l)], maxv, floor, scale) }

func argmaxRow(x []float32) int { return argmax4(x) }
