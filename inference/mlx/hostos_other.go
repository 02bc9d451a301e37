//go:build !darwin

package mlx

// hostMacOS is "" off macOS.
func hostMacOS() string { return "" }
