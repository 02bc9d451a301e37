package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"etchat/internal/fixtures"

	_ "modernc.org/sqlite"
)

var (
	sharedOnce    sync.Once
	sharedResults []*Result
	sharedErr     error
)

// sharedRun is one small real run (pp8, tg4, at depths 0 and 3, 2 reps)
// on the llama3 fixture, measured once for the format tests.
func sharedRun(t *testing.T) []*Result {
	t.Helper()
	sharedOnce.Do(func() {
		o := Options{PTE: fixtures.PTE(fixtures.Llama3), Prompts: []int{8}, Gens: []int{4}, Depths: []int{0, 3}, Reps: 2,
			Engine: cpuEngine(), Machine: testMachine, AppVersion: "test 'quoted'"}
		sharedResults, sharedErr = Run(context.Background(), o)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedResults
}

func write(t *testing.T, format string, rs []*Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, rs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCSV(t *testing.T) {
	rs := sharedRun(t)
	rows, err := csv.NewReader(bytes.NewReader(write(t, "csv", rs))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(rs) {
		t.Fatalf("%d rows, want header + %d", len(rows), len(rs))
	}
	if slices.Contains(rows[0], "stats") {
		t.Error("csv carries the nested stats")
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	for _, c := range []string{"n_prompt", "n_gen", "n_depth", "avg_ts", "stddev_ts", "avg_ns", "stddev_ns", "samples_ts",
		"samples_ns", "test_time", "model_size", "model_n_params", "cpu_info", "gpu_info", "backends", "engine",
		"model_sha256", "cache", "app_version"} {
		if _, ok := col[c]; !ok {
			t.Errorf("no column %s", c)
		}
	}
	for i, r := range rs {
		row := rows[i+1]
		if row[col["n_prompt"]] != strconv.Itoa(r.Test.NPrompt) || row[col["n_depth"]] != strconv.Itoa(r.Test.NDepth) {
			t.Errorf("row %d: n_prompt %s n_depth %s", i, row[col["n_prompt"]], row[col["n_depth"]])
		}
		avg, err := strconv.ParseFloat(row[col["avg_ts"]], 64)
		if err != nil || avg != r.AvgTS() {
			t.Errorf("avg_ts %q, want %v", row[col["avg_ts"]], r.AvgTS())
		}
		if n := len(strings.Split(row[col["samples_ns"]], ",")); n != 2 {
			t.Errorf("samples_ns %q: %d values", row[col["samples_ns"]], n)
		}
		if row[col["cpu_info"]] != "Test CPU" || row[col["app_version"]] != "test 'quoted'" {
			t.Errorf("cpu_info %q app_version %q", row[col["cpu_info"]], row[col["app_version"]])
		}
	}
}

func TestJSONAndJSONL(t *testing.T) {
	rs := sharedRun(t)
	var arr []map[string]any
	if err := json.Unmarshal(write(t, "json", rs), &arr); err != nil {
		t.Fatal(err)
	}
	if len(arr) != len(rs) {
		t.Fatalf("%d objects", len(arr))
	}
	lines := strings.Split(strings.TrimSpace(string(write(t, "jsonl", rs))), "\n")
	if len(lines) != len(rs) {
		t.Fatalf("%d lines", len(lines))
	}
	for i, line := range lines {
		var rec Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		r := rs[i]
		if rec.Test != r.Test.Name() || rec.NGen != r.Test.NGen || len(rec.SamplesTS) != 2 || rec.SamplesTS[1] != r.SamplesTS()[1] {
			t.Errorf("line %d: %+v", i, rec)
		}
		if arr[i]["model_sha256"] != r.Model.SHA256 || arr[i]["samples_ns"].([]any)[0].(float64) != float64(r.Reps[0].Ns) {
			t.Errorf("json %d: %v", i, arr[i])
		}
		// Each repetition's ExecuTorch stats.
		if len(rec.Stats) != 2 || rec.Stats[1] != r.Reps[1] || rec.Stats[0].NumPromptTokens != int64(r.Test.NPrompt) {
			t.Errorf("line %d stats %+v", i, rec.Stats)
		}
		st := arr[i]["stats"].([]any)[0].(map[string]any)
		for _, k := range []string{"inference_start_ms", "prompt_eval_end_ms", "first_token_ms", "inference_end_ms",
			"aggregate_sampling_time_ms", "num_prompt_tokens", "num_generated_tokens", "model_load_start_ms"} {
			if _, ok := st[k]; !ok {
				t.Errorf("stats lack %s", k)
			}
		}
	}
}

func TestMarkdown(t *testing.T) {
	rs := sharedRun(t)
	lines := strings.Split(strings.TrimRight(string(write(t, "md", rs)), "\n"), "\n")
	if len(lines) != 2+len(rs) {
		t.Fatalf("%d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if !regexp.MustCompile(`^\|( -+:? \|)+$`).MatchString(lines[1]) {
		t.Errorf("separator %q", lines[1])
	}
	width := len([]rune(lines[0]))
	ts := regexp.MustCompile(`^\d+\.\d\d ± \d+\.\d\d$`)
	var tests []string
	for i, l := range lines {
		cells := strings.Split(l, "|")
		if len(cells) != len(MarkdownHeader)+2 || len([]rune(l)) != width {
			t.Fatalf("line %d has %d cells / width %d: %q", i, len(cells)-2, len([]rune(l)), l)
		}
		if i >= 2 {
			tests = append(tests, strings.TrimSpace(cells[7]))
			if v := strings.TrimSpace(cells[8]); !ts.MatchString(v) {
				t.Errorf("t/s %q not mean ± sd", v)
			}
		}
	}
	if got := strings.Join(tests, ","); got != "pp8,tg4,pp8 @ d3,tg4 @ d3" {
		t.Errorf("tests %s", got)
	}
}

func TestSQLLoads(t *testing.T) {
	rs := sharedRun(t)
	script := write(t, "sql", rs)
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range strings.SplitAfter(string(script), ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%v in %s", err, stmt)
		}
	}
	checkSQL(t, db, rs)

	// The sqlite3 shell, when installed.
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 shell not installed (apt-get install sqlite3); loaded through modernc sqlite only")
	}
	path := filepath.Join(t.TempDir(), "shell.db")
	cmd := exec.Command(shell, path)
	cmd.Stdin = bytes.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	sdb, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	checkSQL(t, sdb, rs)
}

func checkSQL(t *testing.T, db *sql.DB, rs []*Result) {
	t.Helper()
	rows, err := db.Query("SELECT test, n_prompt, n_gen, n_depth, avg_ts, app_version, warmup FROM " + SQLTable + " ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var test, app string
		var np, ng, nd, warm int
		var avg float64
		if err := rows.Scan(&test, &np, &ng, &nd, &avg, &app, &warm); err != nil {
			t.Fatal(err)
		}
		r := rs[i]
		if test != r.Test.Name() || np != r.Test.NPrompt || ng != r.Test.NGen || nd != r.Test.NDepth || avg != r.AvgTS() ||
			app != "test 'quoted'" || warm != 1 {
			t.Errorf("row %d: %s %d %d %d %v %q %d", i, test, np, ng, nd, avg, app, warm)
		}
		i++
	}
	if i != len(rs) {
		t.Fatalf("%d rows, want %d", i, len(rs))
	}
	checkLlamaTable(t, db, rs)
}

// checkLlamaTable: llama-bench's test table holds each result with its
// values mapped (the CPU engine on the CPU, bf16 KV).
func checkLlamaTable(t *testing.T, db *sql.DB, rs []*Result) {
	t.Helper()
	rows, err := db.Query("SELECT build_commit, n_threads, type_k, type_v, n_gpu_layers, n_batch, n_ubatch, use_mmap, n_prompt, n_gen, n_depth, avg_ts, test_time FROM " +
		LlamaBenchTable + " ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var build, tk, tv, when string
		var threads, ngl, nb, nub, mmap, np, ng, nd int
		var avg float64
		if err := rows.Scan(&build, &threads, &tk, &tv, &ngl, &nb, &nub, &mmap, &np, &ng, &nd, &avg, &when); err != nil {
			t.Fatal(err)
		}
		r := rs[i]
		if build != r.AppVersion || threads != r.Threads || threads < 1 || tk != "bf16" || tv != "bf16" || ngl != 0 ||
			nb != r.Model.Chunk || nub != nb || mmap != 1 || np != r.Test.NPrompt || ng != r.Test.NGen || nd != r.Test.NDepth ||
			avg != r.AvgTS() || when != r.TestTime.UTC().Format(time.RFC3339) {
			t.Errorf("test row %d: %q %d %q %q %d %d %d %d %d %d %d %v %q", i, build, threads, tk, tv, ngl, nb, nub, mmap, np, ng, nd, avg, when)
		}
		i++
	}
	if i != len(rs) {
		t.Fatalf("%d test rows, want %d", i, len(rs))
	}
}

func TestLlamaBenchNames(t *testing.T) {
	cases := []struct {
		c    Cache
		want string
	}{{Cache{DType: "fp32"}, "f32"}, {Cache{DType: "fp16"}, "f16"}, {Cache{DType: "bf16"}, "bf16"}, {Cache{InGraph: true}, "in-graph"}}
	for _, c := range cases {
		if got := ggmlType(c.c); got != c.want {
			t.Errorf("ggmlType(%+v) = %q, want %q", c.c, got, c.want)
		}
	}
	for dev, want := range map[string]int{"cpu": 0, "": 0, "cuda": 99, "metal": 99} {
		if got := gpuLayers(dev); got != want {
			t.Errorf("gpuLayers(%q) = %d, want %d", dev, got, want)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Write(os.Stdout, "xml", nil)
	if err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("err %v", err)
	}
}

func TestSizes(t *testing.T) {
	if got := MiB(65012868); got != "62.00 MiB" {
		t.Errorf("MiB %q", got)
	}
	if got := Params(32514560); got != "32.51 M" {
		t.Errorf("Params %q", got)
	}
	if MiB(0) != "" || Params(0) != "" {
		t.Error("unknown sizes should be empty")
	}
}
