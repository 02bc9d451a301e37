package mlx

import "syscall"

// hostMacOS is this Mac's macOS version ("14.5"), "" if unknown.
func hostMacOS() string {
	v, err := syscall.Sysctl("kern.osproductversion")
	if err != nil {
		return ""
	}
	return v
}
