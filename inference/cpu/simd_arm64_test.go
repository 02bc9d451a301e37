//go:build arm64 && !purego

package cpu

// setSIMD switches the NEON kernels off (on: as detected) and returns
// what restores them.
func setSIMD(on bool) (restore func()) {
	n := useNEON
	useNEON = on && n
	return func() { useNEON = n }
}
