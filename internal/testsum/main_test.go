package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealGoTest runs go test -json on a small module of passing, failing
// and skipping tests and reads what it printed.
func TestRealGoTest(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module m\n\ngo 1.21\n",
		"a/a_test.go": `package a

import "testing"

func TestPass(t *testing.T) {}
func TestNoDisplay(t *testing.T) { t.Skip("no display") }
func TestNoDisplayEither(t *testing.T) { t.Skipf("no %s", "display") }
func TestSubtests(t *testing.T) {
	t.Run("gpu", func(t *testing.T) { t.Log("looking"); t.Skip("no GPU on this machine") })
	t.Run("cpu", func(t *testing.T) {})
}
`,
		"b/b_test.go": `package b

import "testing"

func TestBroken(t *testing.T) { t.Log("working"); t.Error("it broke") }
func TestFine(t *testing.T) { t.Log("a line nobody should see") }
func TestQuiet(t *testing.T) { t.SkipNow() }
`,
		"c/c.go": "package c\n",
		// a binary that dies inside a test: that test never ends
		"d/d_test.go": `package d

import (
	"os"
	"testing"
)

func TestOK(t *testing.T) {}
func TestDies(t *testing.T) { t.Log("about to die"); os.Stderr.WriteString("crash report\\n"); os.Exit(3) }
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	js, err := cmd.Output()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatal(err)
	}
	var out bytes.Buffer
	skips, err := run(bytes.NewReader(js), &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"ok  \tm/a\t", "?   \tm/c\t[no test files]", "--- FAIL: TestBroken", "it broke", "working", "FAIL\tm/b\t",
		"about to die", "crash report", "FAIL\tm/d\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"=== RUN", "a line nobody should see", "--- PASS", "looking"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output has %q:\n%s", unwanted, got)
		}
	}
	var lines []string
	for _, g := range skips {
		lines = append(lines, g.Line())
	}
	want := []string{
		"skipped 2 tests (m/a.TestNoDisplay, m/a.TestNoDisplayEither): no display",
		"skipped 1 test (m/b.TestQuiet): (no reason given)",
		"skipped 1 test (m/a.TestSubtests/gpu): no GPU on this machine",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("skip lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestManyNamesAreCut(t *testing.T) {
	g := Skip{Reason: "why", Tests: []string{"p.A", "p.B", "p.C", "p.D", "p.E"}}
	if got := g.Line(); got != "skipped 5 tests (p.A, p.B, p.C and 2 more): why" {
		t.Errorf("%q", got)
	}
}

func TestNotJSON(t *testing.T) {
	var out bytes.Buffer
	// go's own lines pass through; a broken event is an error, not a panic
	if _, err := run(strings.NewReader("go: downloading x\n{\"Action\":"), &out); err == nil || !strings.Contains(err.Error(), "not go test -json") {
		t.Errorf("err %v", err)
	}
	if out.String() != "go: downloading x\n" {
		t.Errorf("out %q", out.String())
	}
}
