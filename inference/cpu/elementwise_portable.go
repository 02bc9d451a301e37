//go:build (!amd64 && !arm64) || purego

package cpu

// wsumRows adds p[j]·v[j·ld : j·ld+len(o)] to o for j < len(p), in that
// order (v: fp32 rows, or bf16 rows when vh is set).
func wsumRows(o []float32, v []float32, vh []uint16, ld int, p []float32) {
	wsumRowsGo(o, v, vh, ld, p)
}
