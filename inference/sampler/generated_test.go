package sampler

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNEONGenerated: the committed arm64 assembly is what its generator
// writes.
func TestNEONGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator (-short)")
	}
	out := filepath.Join(t.TempDir(), "sampler_arm64.s")
	cmd := exec.Command("go", "run", "sampler_neon_gen.go", out)
	cmd.Env = append(os.Environ(), "GOARCH=", "GOOS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run sampler_neon_gen.go: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("sampler_arm64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("sampler_arm64.s differs from what sampler_neon_gen.go writes: run GOARCH=arm64 go generate ./inference/sampler")
	}
}
