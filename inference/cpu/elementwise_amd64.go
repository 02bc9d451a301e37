//go:build amd64 && !purego

package cpu

import "math"

//go:noescape
func wsumRowsF32AVX2(o *float32, v *float32, ld int, p *float32, nrows, n int)

//go:noescape
func wsumRowsBF16AVX2(o *float32, v *uint16, ld int, p *float32, nrows, n int)

// wsumRows adds p[j]·v[j·ld : j·ld+len(o)] to o for j < len(p), in that
// order: bit for bit len(p) calls of axpy, without reloading o for each.
// v holds fp32 rows, or bf16 rows when vh is set.
func wsumRows(o []float32, v []float32, vh []uint16, ld int, p []float32) {
	if len(p) == 0 || len(o) == 0 {
		return
	}
	last := (len(p)-1)*ld + len(o) // one past the last element read
	n := len(o) &^ 7
	if !useAVX2 || n == 0 {
		wsumRowsGo(o, v, vh, ld, p)
		return
	}
	if vh != nil {
		_ = vh[last-1]
		wsumRowsBF16AVX2(&o[0], &vh[0], ld, &p[0], len(p), n)
	} else {
		_ = v[last-1]
		wsumRowsF32AVX2(&o[0], &v[0], ld, &p[0], len(p), n)
	}
	if n < len(o) {
		wsumTail(o, v, vh, ld, p, n)
	}
}

// wsumTail is wsumRows for the columns from n on: axpy's own tail, axpyGo
// (the same code, so even NaN payloads match), over widened bf16 rows.
func wsumTail(o []float32, v []float32, vh []uint16, ld int, p []float32, n int) {
	var row []float32
	if vh != nil {
		row = make([]float32, len(o)-n)
	}
	for j, a := range p {
		if vh != nil {
			widenBF16Go(row, vh[j*ld+n:j*ld+len(o)])
			axpyGo(o[n:], row, a)
		} else {
			axpyGo(o[n:], v[j*ld+n:j*ld+len(o)], a)
		}
	}
}

//go:noescape
func expF32AVX2(dst, src *float32, n int) int

//go:noescape
func siluQuotAVX2(o, x *float32, n int)

// siluQuot sets o[i] = x[i] / (1 + o[i]), SiLU's last step (o: exp(−x)).
func siluQuot(o, x []float32) {
	x = x[:len(o)]
	i := 0
	if n := len(o) &^ 7; useAVX2 && n > 0 {
		siluQuotAVX2(&o[0], &x[0], n)
		i = n
	}
	siluQuotGo(o[i:], x[i:])
}

// expF32 sets dst[i] = float32(math.Exp(float64(src[i]))), bit for bit
// (dst may be src). The AVX2 kernel repeats math.archExp's FMA path, the
// one math.Exp takes wherever useAVX2 holds; fours it leaves (special
// values) and the tail go through math.Exp.
func expF32(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	for i < len(dst) {
		if n := (len(dst) - i) &^ 3; useAVX2 && n > 0 {
			i += expF32AVX2(&dst[i], &src[i], n)
		}
		for end := min(i+4, len(dst)); i < end; i++ {
			dst[i] = float32(math.Exp(float64(src[i])))
		}
	}
}

//go:noescape
func mulScalarAVX2(x *float32, n int, a float32)

//go:noescape
func subScalarAVX2(x *float32, n int, a float32)

// mulScalar sets x[i] = x[i]·a; subScalar x[i] = x[i] − a: the Go loops'
// bits, eight at a time.
func mulScalar(x []float32, a float32) {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		mulScalarAVX2(&x[0], n, a)
	} else {
		n = 0
	}
	mulScalarGo(x[n:], a)
}

func subScalar(x []float32, a float32) {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		subScalarAVX2(&x[0], n, a)
	} else {
		n = 0
	}
	subScalarGo(x[n:], a)
}
