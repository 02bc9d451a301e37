//go:build !darwin

package cli

// translated is false off macOS: Rosetta exists only there.
func translated() bool { return false }
