package qualitystore

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"etchat/inference/quality"
	"etchat/store"
)

// TestSaveListFromRun: a result is stored as a quality run whose columns
// carry its figures, and reads back whole but for the per-token agreement.
func TestSaveListFromRun(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "etchat.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &quality.Result{Model: "q4", ModelSHA256: "aa11", ModelPath: "/m/q4.pte", Engine: "cpu", Device: "cpu", Text: "bundled",
		Scheme: quality.Scheme, Vocab: 16384, Ctx: 128, First: 64, Windows: 2, Tokens: 256, Scored: 126, PPL: 12.5, PPLErr: 0.5,
		Seconds: 2, TokS: 127, Started: time.UnixMilli(1_800_000_000_000).UTC(),
		KLD: &quality.KLD{Base: quality.BaseInfo{Model: "bf16", ModelSHA256: "bb22", Engine: "mlx"}, Mean: 0.25, MeanErr: 0.01,
			SameTop: 80, Agree: []int{1, 0, 1}}}
	run, err := Save(ctx, db, r, "test")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Quality{PPL: 12.5, PPLErr: 0.5, Scored: 126, KLDMean: 0.25, KLDMeanErr: 0.01, SameTopPct: 80, BaseSHA256: "bb22"}
	if run.Kind != store.RunQuality || run.Quality != want || run.Ended.Sub(run.Started) != 2*time.Second {
		t.Errorf("stored %+v", run)
	}
	runs, err := List(ctx, db, "aa11", 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	back, err := FromRun(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	r.KLD.Agree = nil
	back.Started = back.Started.UTC()
	if !reflect.DeepEqual(back, r) {
		t.Errorf("read back\n %+v\nwant %+v", back, r)
	}
	if _, err := FromRun(store.Run{Kind: store.RunBench}); err == nil {
		t.Error("a bench run read as a quality run")
	}
}
