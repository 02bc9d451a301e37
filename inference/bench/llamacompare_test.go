package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// debianPython is the interpreter scripts/setup gives python3-git and
// python3-tabulate (the python3 first on PATH may be another one).
const debianPython = "/usr/bin/python3"

// compareScript is llama.cpp's compare-llama-bench.py (c392e50,
// unmodified), kept beside the project in ../shared.
func compareScript(t *testing.T) string {
	if p := os.Getenv("ETCHAT_COMPARE_LLAMA_BENCH"); p != "" {
		return p
	}
	p := filepath.Join(fixtures.Root(), "..", "..", "shared", "tools", "llamacpp", "compare-llama-bench.py")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("compare-llama-bench.py: %v (set ETCHAT_COMPARE_LLAMA_BENCH to its path)", err)
	}
	return p
}

// TestCompareLlamaBench: llama.cpp's own compare script reads two etchat
// runs, stored by `-o sql` in one database under two build_commit values,
// and prints each test with both runs' avg_ts.
func TestCompareLlamaBench(t *testing.T) {
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s missing", debianPython)
	}
	if out, err := exec.Command(debianPython, "-c", "import git, tabulate").CombinedOutput(); err != nil {
		t.Skipf("%s lacks GitPython or tabulate (apt-get install python3-git python3-tabulate): %s", debianPython, out)
	}
	script := compareScript(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "llama-bench.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Equal lengths: the script cuts every build_commit to the shortest.
	builds := []string{"aaaa111", "bbbb222"}
	runs := make([][]*Result, len(builds))
	for i, build := range builds {
		o := Options{PTE: fixtures.PTE(fixtures.Llama3), Prompts: []int{8}, Gens: []int{4}, Reps: 2,
			Engine: cpuEngine(), Machine: testMachine, AppVersion: "test", BuildCommit: build}
		if runs[i], err = Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, "sql", runs[i]); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range strings.SplitAfter(b.String(), ";\n") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%v in %s", err, stmt)
			}
		}
	}
	db.Close()

	cmd := exec.Command(debianPython, script, "-i", path, "-b", builds[0], "-c", builds[1])
	cmd.Dir = dir // outside any git checkout: the builds are named by -b/-c alone
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("compare-llama-bench.py: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("compare-llama-bench.py -b %s -c %s:\n%s", builds[0], builds[1], out)
	for _, h := range []string{"| Test", "t/s " + builds[0], "t/s " + builds[1], "Speedup"} {
		if !strings.Contains(out, h) {
			t.Errorf("header %q missing:\n%s", h, out)
		}
	}
	for k, r := range runs[0] {
		name := r.Test.Name()
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "| "+name+" ") {
				line = l
			}
		}
		base, cand := fmt.Sprintf("%.2f", r.AvgTS()), fmt.Sprintf("%.2f", runs[1][k].AvgTS())
		if line == "" || !strings.Contains(line, base) || !strings.Contains(line, cand) {
			t.Errorf("%s: want a row with %s and %s, got %q in:\n%s", name, base, cand, line, out)
		}
	}
}
