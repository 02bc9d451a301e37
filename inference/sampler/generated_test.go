package sampler

import (
	"testing"

	"etchat/internal/arm64enc"
)

// TestNEONGenerated: the committed arm64 assembly is what its generator
// writes.
func TestNEONGenerated(t *testing.T) {
	arm64enc.CheckGenerated(t, map[string]string{"sampler_neon_gen.go": "sampler_arm64.s"})
}
