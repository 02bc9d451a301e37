//go:build (!amd64 && !arm64) || purego

package cpu

// setSIMD: no assembly kernels here; the Go twins always run.
func setSIMD(on bool) (restore func()) { return func() {} }

// qPrepPairsKernel names the input quantizer qPrepPairsRow runs.
func qPrepPairsKernel() string { return "Go" }
