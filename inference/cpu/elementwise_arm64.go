//go:build arm64 && !purego

package cpu

// wsumRows adds p[j]·v[j·ld : j·ld+len(o)] to o for j < len(p), in that
// order (v: fp32 rows, or bf16 rows when vh is set): bit for bit len(p)
// calls of axpy. bf16 rows of a multiple of 16 are read in place by
// axpyBF16NEON (axpyNEON's steps on the widened row); fp32 rows and other
// widths go through wsumRowsGo (axpy per row, NEON where it applies).
func wsumRows(o []float32, v []float32, vh []uint16, ld int, p []float32) {
	n := len(o)
	if !useNEON || vh == nil || n == 0 || n%16 != 0 || len(p) == 0 {
		wsumRowsGo(o, v, vh, ld, p)
		return
	}
	_ = vh[(len(p)-1)*ld+n-1]
	for j, a := range p {
		axpyBF16NEON(&o[0], &vh[j*ld], n, a)
	}
}
