package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
	"etchat/store"
)

// The native engine through the command line, against the real library:
// `run --engine mlx` gives the CPU engine's ids and says its device, and
// `bench --engine mlx` stores rows that name the engine and device.
func TestNativeRunAndBenchStored(t *testing.T) {
	lib := nativelib.Require(t)
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "e.db")
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	getenv := func(k string) string {
		if k == "ETCHAT_RUNNER" {
			return lib
		}
		return ""
	}
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}
		if code := Run(ctx, env, args); code != 0 {
			t.Fatalf("etchat %v: exit %d: %s", args, code, errb.String())
		}
		return out.String(), errb.String()
	}
	ids := map[string][]int{}
	for _, e := range []string{"cpu", "mlx"} {
		out, _ := run("run", "--pte", pte, "--prompt", "Hello there", "--max-new-tokens", "8", "--ignore-eos", "--json", "--engine", e)
		var res struct {
			Engine, Device string
			GeneratedIDs   []int `json:"generated_ids"`
		}
		if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "\n{")+1:]), &res); err != nil {
			t.Fatalf("%s: %v in %q", e, err, out)
		}
		if res.Engine != e || (e == "mlx" && res.Device != "cpu") || len(res.GeneratedIDs) != 8 {
			t.Errorf("%s: engine %q device %q ids %v", e, res.Engine, res.Device, res.GeneratedIDs)
		}
		ids[e] = res.GeneratedIDs
	}
	if !slices.Equal(ids["cpu"], ids["mlx"]) {
		t.Errorf("engines disagree: cpu %v, mlx %v", ids["cpu"], ids["mlx"])
	}

	run("bench", "--engine", "mlx", "--pte", pte, "-p", "16", "-n", "8", "-r", "1", "-q", "--db", dbPath)
	db, err := store.Open(ctx, dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("stored runs %d (%v), want pp16 and tg8", len(runs), err)
	}
	for _, r := range runs {
		var cfg struct{ Device string }
		_ = json.Unmarshal(r.Config, &cfg)
		if r.Engine != "mlx" || cfg.Device != "cpu" || r.Kind != "bench" {
			t.Errorf("stored %s run: engine %q device %q", r.Kind, r.Engine, cfg.Device)
		}
	}
	out, _ := run("history", "--runs", "--db", dbPath)
	if !strings.Contains(out, "mlx on cpu") {
		t.Errorf("history does not say mlx on cpu:\n%s", out)
	}
}
