package cli_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"etchat/cli"
	"etchat/internal/fixtures"
	"etchat/store"
)

func TestBenchStoresAndCompares(t *testing.T) {
	db := filepath.Join(t.TempDir(), "etchat.db")
	pte := fixtures.PTE(fixtures.Llama3)
	args := []string{"bench", "--pte", pte, "--engine", "cpu", "-p", "8", "-n", "4", "-d", "0,3", "-r", "2", "--db", db}

	r := runCLI(t, nil, "", append(args, "-o", "csv")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("csv: %d rows, %v\n%s", len(rows), err, r.stdout)
	}
	// Progress and the saved ids go to stderr.
	for _, want := range []string{"engine: cpu", "[1/4] pp8 | bf16 c128 w0: warmup", "rep 2/2", "[4/4] tg4 @ d3", "saved as runs 1,2,3,4"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runCLI(t, nil, "", append(args, "-o", "json", "-q")...)
	var recs []map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &recs) != nil || len(recs) != 4 || r.stderr != "" {
		t.Fatalf("json run: exit %d, %d records, stderr %q", r.code, len(recs), r.stderr)
	}
	if recs[3]["test"] != "tg4 @ d3" || recs[3]["engine"] != "cpu" || recs[3]["run_id"].(float64) != 8 {
		t.Errorf("record %v", recs[3])
	}

	// Both runs are stored and listed.
	ctx := context.Background()
	sdb, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := sdb.ListRuns(ctx, store.RunFilter{Kind: "bench", Model: "llama3-tiny-offgraph"})
	sdb.Close()
	if err != nil || len(runs) != 8 {
		t.Fatalf("%d stored runs, %v", len(runs), err)
	}
	r = runCLI(t, nil, "", "history", "--runs", "--db", db)
	if r.code != 0 || strings.Count(r.stdout, "bench") < 8 {
		t.Errorf("history --runs: exit %d\n%s", r.code, r.stdout)
	}

	// Compare: by ids, and by filters (latest = the second invocation).
	r = runCLI(t, nil, "", "compare", "--db", db, "1,2,3,4", "model=llama3-tiny-offgraph,engine=cpu,latest")
	if r.code != 0 {
		t.Fatalf("compare exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"baseline : llama3-tiny-offgraph", "runs 1,2,3,4", "runs 5,6,7,8", "| pp8 @ d3 ", "tests changed beyond the noise"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "(n=2)"); n != 8 {
		t.Errorf("%d result cells, want 8:\n%s", n, r.stdout)
	}

	plotPath := filepath.Join(t.TempDir(), "cmp.png")
	r = runCLI(t, nil, "", "compare", "--db", db, "--json", "--plot", plotPath, "1,2,3,4", "5,6,7,8")
	var chs []map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &chs) != nil || len(chs) != 4 {
		t.Fatalf("compare --json: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	if chs[0]["baseline_run_id"].(float64) != 1 || chs[0]["candidate_run_id"].(float64) != 5 || chs[0]["change_pct"] == nil {
		t.Errorf("change %v", chs[0])
	}
	checkPNG(t, plotPath)

	r = runCLI(t, nil, "", "compare", "--db", db, "model=nope", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "no stored benchmark runs match") {
		t.Errorf("no match: exit %d %q", r.code, r.stderr)
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() < 100 || img.Bounds().Dy() < 100 {
		t.Errorf("image %v", img.Bounds())
	}
}

func TestBenchNoSaveMarkdownPlot(t *testing.T) {
	dir := t.TempDir()
	db, plotPath := filepath.Join(dir, "etchat.db"), filepath.Join(dir, "bench.png")
	r := runCLI(t, nil, "", "bench", "--pte", fixtures.PTE(fixtures.InGraph), "--engine", "cpu", "-p", "8,16", "-n", "0",
		"-r", "1", "--no-warmup", "--db", db, "--no-save", "--plot", plotPath, "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], " pp8 |") || !strings.Contains(lines[3], "in-graph c128") || !strings.Contains(lines[3], " ± ") {
		t.Errorf("markdown:\n%s", r.stdout)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("--no-save created the database: %v", err)
	}
	checkPNG(t, plotPath)
}

func TestBenchDoesNotFit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "etchat.db")
	r := runCLI(t, nil, "", "bench", "--pte", fixtures.PTE(fixtures.Llama3), "--engine", "cpu", "-p", "64", "-n", "8", "-d", "0,100", "-r", "1", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "does not fit") || !strings.Contains(r.stderr, "pp64 @ d100 needs 164") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("output before the check failed: %q", r.stdout)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("database touched: %v", err)
	}
}

func TestBenchBadFlags(t *testing.T) {
	pte := fixtures.PTE(fixtures.Llama3)
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"-p", "abc"}, "flag -p"},
		{[]string{"-n", "4,x"}, "flag -n"},
		{[]string{"-d", "-1"}, "flag -d"},
		{[]string{"-r", "0"}, "flag -r"},
		{[]string{"-r", "many"}, "-r"},
		{[]string{"-o", "xml"}, "flag -o"},
		{[]string{"--engine", "gpu"}, "flag -engine"},
		{[]string{"--kv-storage-dtype", "int4"}, "flag -kv-storage-dtype"},
		{[]string{"--kv-max-capacity", "big"}, "flag -kv-max-capacity"},
		{[]string{"--kv-windows", "8;x"}, "flag -kv-windows"},
		{[]string{"--plot", "out.svg"}, "flag -plot"},
		{[]string{"-p", "0", "-n", "0"}, "-p and -n"},
		{[]string{"--bogus"}, "bogus"},
	} {
		r := runCLI(t, nil, "", append([]string{"bench", "--pte", pte, "--no-save"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.flag) {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
	}
	if r := runCLI(t, nil, "", "bench", "-p", "8"); r.code != 2 || !strings.Contains(r.stderr, "-pte is required") {
		t.Errorf("no --pte: exit %d %q", r.code, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"1"}, "BASELINE and CANDIDATE"},
		{[]string{"--alpha", "2", "1", "2"}, "flag -alpha"},
		{[]string{"--min-change", "-1", "1", "2"}, "flag -min-change"},
		{[]string{"color=red", "2"}, "BASELINE"},
	} {
		r := runCLI(t, nil, "", append([]string{"compare"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("compare %v: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
	}
}

// TestBenchSQLBuildCommit: -o sql writes llama-bench's test table, its
// build_commit from $ETCHAT_BUILD_COMMIT, else this build's version or VCS
// revision.
func TestBenchSQLBuildCommit(t *testing.T) {
	args := []string{"bench", "--pte", fixtures.PTE(fixtures.InGraph), "--engine", "cpu", "-p", "8", "-n", "0",
		"-r", "1", "--no-warmup", "--no-save", "-o", "sql", "-q"}
	r := runCLI(t, map[string]string{cli.BuildCommitEnv: "abc1234"}, "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "CREATE TABLE IF NOT EXISTS test (") || !strings.Contains(r.stdout, "INSERT INTO test (build_commit, ") ||
		!strings.Contains(r.stdout, "VALUES ('abc1234', ") {
		t.Errorf("sql without the override's build_commit:\n%s", r.stdout)
	}
	r = runCLI(t, nil, "", args...)
	m := regexp.MustCompile(`INSERT INTO test \(build_commit, [^)]*\) VALUES \('([^']*)'`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || (m[1] != cli.Version && !regexp.MustCompile(`^[0-9a-f]{7}$`).MatchString(m[1])) {
		t.Errorf("exit %d, build_commit %q, want %q or a revision:\n%s%s", r.code, m, cli.Version, r.stdout, r.stderr)
	}
}
