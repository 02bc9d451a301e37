//go:build amd64 && !purego

package cpu

// setSIMD switches the assembly kernels off (on: as detected) and
// returns what restores them.
func setSIMD(on bool) (restore func()) {
	a2, a512 := useAVX2, useAVX512
	useAVX2, useAVX512 = on && a2, on && a512
	return func() { useAVX2, useAVX512 = a2, a512 }
}

// qPrepPairsKernel names the input quantizer qPrepPairsRow runs.
func qPrepPairsKernel() string {
	if useAVX2 {
		return "AVX2"
	}
	return "Go"
}
