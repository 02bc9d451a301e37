package cpu

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNEONGenerated: the committed arm64 assembly is what its generators
// write (nobody edited the output, nobody forgot to rerun them).
func TestNEONGenerated(t *testing.T) {
	checkGenerated(t, map[string]string{
		"qkernel_neon_gen.go":      "qkernel_neon_arm64.s",
		"qkernel_int8_neon_gen.go": "qkernel_int8_neon_arm64.s",
		"dot_neon_gen.go":          "dot_arm64.s",
		"attn_neon_gen.go":         "attn_arm64.s",
		"qprep_int8_neon_gen.go":   "qprep_int8_neon_arm64.s",
	})
}

// checkGenerated runs each generator (go run, for the host) into a
// temporary file and compares it with the committed one.
func checkGenerated(t *testing.T, gens map[string]string) {
	if testing.Short() {
		t.Skip("builds the generators (-short)")
	}
	for gen, file := range gens {
		out := filepath.Join(t.TempDir(), file)
		cmd := exec.Command("go", "run", gen, out)
		cmd.Env = append(os.Environ(), "GOARCH=", "GOOS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go run %s: %v\n%s", gen, err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what %s writes: run go generate (GOARCH=arm64 go generate ./inference/cpu)", file, gen)
		}
	}
}
