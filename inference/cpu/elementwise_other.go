//go:build !amd64 || purego

package cpu

import "math"

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
