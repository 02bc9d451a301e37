package cpu

import (
	"testing"

	"etchat/internal/arm64enc"
)

// TestNEONGenerated: the committed arm64 assembly is what its generators
// write (nobody edited the output, nobody forgot to rerun them).
func TestNEONGenerated(t *testing.T) {
	arm64enc.CheckGenerated(t, map[string]string{
		"qkernel_neon_gen.go":      "qkernel_neon_arm64.s",
		"qkernel_int8_neon_gen.go": "qkernel_int8_neon_arm64.s",
		"dot_neon_gen.go":          "dot_arm64.s",
		"attn_neon_gen.go":         "attn_arm64.s",
		"qprep_int8_neon_gen.go":   "qprep_int8_neon_arm64.s",
	})
}
