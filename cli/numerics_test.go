package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"etchat/internal/fixtures"
	"etchat/store"
)

// --numerics on run: fast by default on quantized weights (said on the
// first line, in --json and in the stored run); exact on request, which
// is still the reference's greedy reply token for token; refused with
// --engine mlx (before any library loads) and for an unknown mode.
func TestRunNumerics(t *testing.T) {
	var ref runRef
	fixtures.Reference(t, fixtures.Llama3Q4, &ref)
	c := ref.Cases[0]
	db := filepath.Join(t.TempDir(), "etchat.db")
	args := []string{"--pte", fixtures.PTE(fixtures.Llama3Q4), "--prompt-ids", commaIDs(c.InputIDs), "--max-new-tokens",
		strconv.Itoa(len(c.GreedyIDs)), "--ignore-eos", "--json", "--engine", "cpu", "--kv-storage-dtype", "fp32", "--db", db}
	type doc struct {
		Numerics     string `json:"numerics"`
		GeneratedIDs []int  `json:"generated_ids"`
	}
	var docs [2]doc
	for i, extra := range [][]string{nil, {"--numerics", "exact"}} {
		code, out, errs := runRunCLI(t, "", append(args, extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, code, errs)
		}
		if err := json.Unmarshal([]byte(out), &docs[i]); err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(errs, "\n")
		if fast := strings.HasSuffix(first, ", numerics fast"); fast != (i == 0) {
			t.Errorf("%v: first line %q", extra, first)
		}
	}
	if docs[0].Numerics != "fast" || docs[1].Numerics != "exact" {
		t.Errorf("--json numerics %q by default, %q with --numerics exact", docs[0].Numerics, docs[1].Numerics)
	}
	if commaIDs(docs[1].GeneratedIDs) != commaIDs(c.GreedyIDs) {
		t.Errorf("exact: %v, the reference %v", docs[1].GeneratedIDs, c.GreedyIDs)
	}
	sdb, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := sdb.ListRuns(context.Background(), store.RunFilter{})
	sdb.Close()
	if err != nil || len(runs) != 2 || runs[0].Numerics == runs[1].Numerics {
		t.Fatalf("stored runs %v, %v", runs, err)
	}

	code, _, errs := runRunCLI(t, "", "--pte", fixtures.PTE(fixtures.Llama3Q4), "--prompt-ids", "1,2", "--engine", "mlx", "--numerics", "exact")
	if code != 1 || !strings.Contains(errs, "no numerics modes") || !strings.Contains(errs, "hint: leave --numerics out with --engine mlx") {
		t.Errorf("--engine mlx --numerics exact: exit %d\n%s", code, errs)
	}
	code, _, errs = runRunCLI(t, "", "--pte", fixtures.PTE(fixtures.Llama3Q4), "--prompt-ids", "1,2", "--numerics", "approximate")
	if code != 2 || !strings.Contains(errs, `invalid value "approximate" for flag -numerics`) {
		t.Errorf("--numerics approximate: exit %d\n%s", code, errs)
	}
}

// bench --numerics exact,fast sweeps both modes as separate loads; the
// rows say which ran, the store keeps it, and compare matches exact with
// exact and fast with fast (and can select one mode).
func TestBenchNumericsSweep(t *testing.T) {
	db := filepath.Join(t.TempDir(), "etchat.db")
	args := []string{"bench", "--pte", fixtures.PTE(fixtures.Llama3Q4), "--engine", "cpu", "-p", "8", "-n", "4", "-r", "2",
		"--numerics", "exact,fast", "--db", db, "-o", "json", "-q"}
	var recs [][]map[string]any
	for range 2 {
		code, out, errs := runCLI(t, args...)
		var rs []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &rs) != nil || len(rs) != 4 {
			t.Fatalf("exit %d, %d records: %s\n%s", code, len(rs), errs, out)
		}
		recs = append(recs, rs)
	}
	var got []string
	for _, r := range recs[0] {
		got = append(got, r["test"].(string)+" "+r["numerics"].(string))
	}
	if strings.Join(got, ", ") != "pp8 exact, tg4 exact, pp8 fast, tg4 fast" {
		t.Errorf("rows %v", got)
	}
	code, out, errs := runCLI(t, "compare", "--db", db, "--json", "1,2,3,4", "5,6,7,8")
	var chs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &chs) != nil || len(chs) != 4 {
		t.Fatalf("compare: exit %d %s\n%s", code, errs, out)
	}
	for i, ch := range chs {
		if ch["baseline_run_id"].(float64) != float64(i+1) || ch["candidate_run_id"].(float64) != float64(i+5) {
			t.Errorf("change %d pairs runs %v and %v", i, ch["baseline_run_id"], ch["candidate_run_id"])
		}
	}
	code, out, errs = runCLI(t, "compare", "--db", db, "--json", "1,2", "numerics=fast,latest")
	chs = nil
	if code != 0 || json.Unmarshal([]byte(out), &chs) != nil || len(chs) != 4 {
		t.Fatalf("compare exact with fast: exit %d %s\n%s", code, errs, out)
	}
	for _, ch := range chs {
		if ch["baseline_run_id"] != nil && ch["candidate_run_id"] != nil {
			t.Errorf("an exact run was matched with a fast one: %v", ch)
		}
	}
	if code, _, errs := runCLI(t, "bench", "--pte", fixtures.PTE(fixtures.Llama3Q4), "--numerics", "exact,quick", "--no-save"); code != 2 {
		t.Errorf("--numerics exact,quick: exit %d %s", code, errs)
	}
}
