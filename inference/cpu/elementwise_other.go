//go:build !amd64 || purego

package cpu

import "math"

// wsumRows adds p[j]·v[j·ld : j·ld+len(o)] to o for j < len(p), in that
// order (v: fp32 rows, or bf16 rows when vh is set).
func wsumRows(o []float32, v []float32, vh []uint16, ld int, p []float32) {
	wsumRowsGo(o, v, vh, ld, p)
}

// siluQuot sets o[i] = x[i] / (1 + o[i]), SiLU's last step (o: exp(−x)).
func siluQuot(o, x []float32) { siluQuotGo(o, x) }

// expF32 sets dst[i] = float32(math.Exp(float64(src[i]))) (dst may be
// src).
func expF32(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = float32(math.Exp(float64(v)))
	}
}

func mulScalar(x []float32, a float32) { mulScalarGo(x, a) }

func subScalar(x []float32, a float32) { subScalarGo(x, a) }
