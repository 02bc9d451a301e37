package fuzzing

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// TestFuzzScriptWithoutTimer runs scripts/fuzz, copied into a module of
// its own, on a fuzz target that does not use Time: the script used to
// die there (cat found no timing file and pipefail ended it) before the
// next target ran or the table was printed. It must fuzz both targets,
// exit 0 and print a row for each, the timer-less one with "- -".
func TestFuzzScriptWithoutTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and fuzzes a module: skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	_, here, _, _ := runtime.Caller(0)
	script, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "scripts", "fuzz"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	files := map[string]string{
		"scripts/fuzz": string(script),
		"go.mod":       "module fuzzscript\n\ngo 1.22\n",
		"a/a.go":       "package a\n\nfunc Len(b []byte) int { return len(b) }\n",
		"a/a_test.go":  "package a\n\nimport \"testing\"\n\nfunc FuzzAlpha(f *testing.F) {\n\tf.Add([]byte(\"x\"))\n\tf.Fuzz(func(t *testing.T, b []byte) { _ = Len(b) })\n}\n",
		"b/b.go":       "package b\n\nfunc Two(b []byte) int { return 2 * len(b) }\n",
		"b/b_test.go":  "package b\n\nimport \"testing\"\n\nfunc FuzzBeta(f *testing.F) {\n\tf.Add([]byte(\"y\"))\n\tf.Fuzz(func(t *testing.T, b []byte) { _ = Two(b) })\n}\n",
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "fuzz"), "1s")
	cmd.Env = append(os.Environ(), "FUZZ_CACHE="+t.TempDir(), "FUZZ_NICE=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/fuzz: %v\n%s", err, out)
	}
	for _, target := range []string{"a.FuzzAlpha", "b.FuzzBeta"} {
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `\s+(\d+)\s.*-\s+-\s*$`).FindStringSubmatch(string(out))
		if row == nil || row[1] == "0" {
			t.Errorf("no row with executions and \"- -\" for %s:\n%s", target, out)
		}
	}
	if !regexp.MustCompile(`(?m)^target\s+execs`).Match(out) {
		t.Errorf("no table:\n%s", out)
	}
}
