package arm64enc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CheckGenerated is the test that a package's committed arm64 assembly is
// what its generators write (nobody edited the output, nobody forgot to
// rerun them): each generator (gens: generator → the file it writes, both
// in the test's package folder) runs with go run, for the host, into a
// temporary file that must equal the committed one. It lives here, beside
// the writer every generator uses, so that each package with generated
// NEON code tests it the same way. Skipped under -short (it builds the
// generators).
func CheckGenerated(t testing.TB, gens map[string]string) {
	t.Helper()
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
			t.Errorf("%s differs from what %s writes: run GOARCH=arm64 go generate in its package", file, gen)
		}
	}
}
