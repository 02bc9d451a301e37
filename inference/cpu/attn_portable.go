//go:build (!amd64 && !arm64) || purego

package cpu

// attendSIMD is false: attend widens the KV rows into fp32 copies.
func attendSIMD(D int) bool { return false }
