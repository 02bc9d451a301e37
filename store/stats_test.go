package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The stats' JSON keys are the runner's and the 0002 schema's, unchanged;
// aggregate_model_execution_time_ms is the one key added, and it is kept.
func TestStatsKeys(t *testing.T) {
	b, err := json.Marshal(Stats{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(b, &got)
	want := []string{"model_load_start_ms", "model_load_end_ms", "inference_start_ms", "prompt_eval_end_ms", "first_token_ms",
		"inference_end_ms", "aggregate_sampling_time_ms", "aggregate_model_execution_time_ms", "num_prompt_tokens", "num_generated_tokens"}
	if len(got) != len(want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("key %s missing from %s", k, b)
		}
	}
}

// A run saved with every stats field reads back whole, through GetRun and
// through the JSON export; a run written by an earlier etchat (the frozen
// 0002 schema, its JSON export) reads back unchanged, its execution time 0.
func TestStatsRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	st := Stats{ModelLoadStartMs: 1, ModelLoadEndMs: 2, InferenceStartMs: 3, PromptEvalEndMs: 53, FirstTokenMs: 54,
		InferenceEndMs: 1053, AggregateSamplingTimeMs: 7, AggregateModelExecutionTimeMs: 990, NumPromptTokens: 5, NumGeneratedTokens: 100}
	r, err := db.InsertRun(ctx, Run{Kind: "bench", Engine: "mlx", Stats: st}, []Sample{{Stats: st}})
	if err != nil {
		t.Fatal(err)
	}
	got, samples, err := db.GetRun(ctx, r.ID)
	if err != nil || got.Stats != st || len(samples) != 1 || samples[0].Stats != st {
		t.Fatalf("read back %+v %+v (%v), want %+v", got.Stats, samples, err, st)
	}
	// Rates: derived from the stats when the caller gives none.
	if got.PrefillTokS != 100 || got.DecodeTokS != 100 || got.TTFTMs != 51 {
		t.Errorf("derived rates %v %v %v", got.PrefillTokS, got.DecodeTokS, got.TTFTMs)
	}
	// The caller's (precise) rates are kept, so a reply has one rate.
	r2, err := db.InsertRun(ctx, Run{Kind: "chat", Stats: st, PrefillTokS: 101.5, DecodeTokS: 99.25, TTFTMs: 50.5}, nil)
	if err != nil || r2.PrefillTokS != 101.5 || r2.DecodeTokS != 99.25 || r2.TTFTMs != 50.5 {
		t.Errorf("caller's rates: %+v, %v", r2, err)
	}
	var buf bytes.Buffer
	if err := db.ExportRunsJSON(ctx, &buf, RunFilter{}); err != nil {
		t.Fatal(err)
	}
	var back []RunExport
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != 2 {
		t.Fatalf("export: %v, %d runs", err, len(back))
	}
	for _, b := range back {
		if b.Stats != st {
			t.Errorf("exported stats %+v, want %+v", b.Stats, st)
		}
	}

	// An export written before the field existed reads back unchanged.
	old := []byte(`{"id":7,"kind":"chat","engine":"metal","stats":{"model_load_start_ms":1,"model_load_end_ms":2,"inference_start_ms":3,
		"prompt_eval_end_ms":53,"first_token_ms":54,"inference_end_ms":1053,"aggregate_sampling_time_ms":7,"num_prompt_tokens":5,
		"num_generated_tokens":100},"prefill_tok_s":100}`)
	var oldRun RunExport
	if err := json.Unmarshal(old, &oldRun); err != nil {
		t.Fatal(err)
	}
	wantOld := st
	wantOld.AggregateModelExecutionTimeMs = 0
	if oldRun.Stats != wantOld || oldRun.Engine != "metal" || oldRun.PrefillTokS != 100 {
		t.Errorf("old export: %+v", oldRun)
	}

	// The frozen 0002 database: its run reads back with the 0002 values.
	frozen, err := os.ReadFile(frozenPath(2))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v2.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(frozen)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	v2 := openTest(t, path)
	run, ss, err := v2.GetRun(ctx, 1)
	if err != nil || !reflect.DeepEqual(run.Stats, Stats{NumPromptTokens: 512}) || len(ss) != 1 || ss[0].TokS != 99.5 || ss[0].Stats.NumPromptTokens != 512 {
		t.Errorf("0002 run: %+v %+v, %v", run, ss, err)
	}
	// A run stored as "metal" (the native engine's earlier name) keeps it.
	frozen3, err := os.ReadFile(frozenPath(3))
	if err != nil {
		t.Fatal(err)
	}
	path3 := filepath.Join(t.TempDir(), "v3.db")
	raw, _ = sql.Open("sqlite", path3)
	if _, err := raw.Exec(string(frozen3)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	v3 := openTest(t, path3)
	if run, _, err := v3.GetRun(ctx, 2); err != nil || run.Engine != "metal" || run.Stats.AggregateModelExecutionTimeMs != 42 {
		t.Errorf("0003 run: %+v, %v", run, err)
	}
}
