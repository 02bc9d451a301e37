package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
	"etchat/store"
)

// etchat run's first line names the engine, its device and why; the
// stored run keeps the device and the reason, and history shows it.
func TestRunDeviceShownAndStored(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "e.db")
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := Run(ctx, env, []string{"run", "--pte", pte, "--prompt-ids", "1,2", "--max-new-tokens", "2", "--engine", "cpu", "--db", dbPath}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "engine: cpu on cpu (asked for)" {
		t.Errorf("first line %q", first)
	}
	db, err := store.Open(ctx, dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	var cfg struct {
		Device       string `json:"device"`
		EngineReason string `json:"engine_reason"`
	}
	json.Unmarshal(runs[0].Config, &cfg)
	if runs[0].Engine != "cpu" || cfg.Device != "cpu" || cfg.EngineReason != "asked for" || runs[0].Stats.NumGeneratedTokens != 2 {
		t.Errorf("stored run %+v config %s", runs[0], runs[0].Config)
	}
	// The stored rate is the one the report printed (the precise one).
	if runs[0].DecodeTokS <= 0 {
		t.Errorf("decode rate %v", runs[0].DecodeTokS)
	}
	if _, err := db.InsertRun(ctx, store.Run{Kind: "chat", Engine: "mlx", Config: []byte(`{"device":"cuda"}`)}, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out.Reset()
	if code := Run(ctx, env, []string{"history", "--runs", "--db", dbPath}); code != 0 || !strings.Contains(out.String(), "mlx on cuda") {
		t.Errorf("history (%d):\n%s%s", code, out.String(), errb.String())
	}
}
