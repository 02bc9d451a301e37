package store

import (
	"context"
	"strings"
	"testing"
)

// TestMigration0006KeepsRunsAndAdmitsQuality: migrating a version-4 file
// (a bench run with its sample, a chat run, an api run) keeps every row and
// id, the new figures read as zero, the samples still cascade, and a
// quality run stores and reads back its figures while an unknown kind is
// still refused.
func TestMigration0006KeepsRunsAndAdmitsQuality(t *testing.T) {
	ctx := context.Background()
	path, raw := openFrozen(t, 4)
	runsBefore, samplesBefore := rowsOf(t, raw, "runs", "id"), rowsOf(t, raw, "bench_samples", "run_id, rep")
	runCols := colsOf(t, raw, "runs")
	raw.Close()
	if len(runsBefore) != 3 || len(samplesBefore) != 1 {
		t.Fatalf("seeded v4 holds %d runs and %d samples, want 3 and 1", len(runsBefore), len(samplesBefore))
	}

	db := openTest(t, path)
	if v, _ := db.Version(ctx); v < 6 {
		t.Fatalf("version %d after migrating", v)
	}
	// The old columns of every row are unchanged; the new ones are zero.
	if got := rowsOf(t, db.sql, "runs", "id", runCols...); strings.Join(got, "\n") != strings.Join(runsBefore, "\n") {
		t.Errorf("runs changed:\n got %q\nwant %q", got, runsBefore)
	}
	newCols := []string{"base_sha256", "kld_mean", "kld_mean_err", "n_scored", "ppl", "ppl_err", "same_top_pct"}
	for _, row := range rowsOf(t, db.sql, "runs", "id", newCols...) {
		if row != "base_sha256='' kld_mean=0.0 kld_mean_err=0.0 n_scored=0 ppl=0.0 ppl_err=0.0 same_top_pct=0.0" {
			t.Errorf("a migrated run's quality columns: %s", row)
		}
	}
	if got := rowsOf(t, db.sql, "bench_samples", "run_id, rep"); strings.Join(got, "\n") != strings.Join(samplesBefore, "\n") {
		t.Errorf("bench_samples changed:\n got %q\nwant %q", got, samplesBefore)
	}
	for _, tmp := range []string{"runs_0006", "bench_samples_0006"} {
		var n int
		db.sql.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = ?", tmp).Scan(&n)
		if n != 0 {
			t.Errorf("the migration left %s behind", tmp)
		}
	}

	q := Quality{PPL: 14.25, PPLErr: 0.5, Scored: 1449, KLDMean: 0.031, KLDMeanErr: 0.002, SameTopPct: 91.5, BaseSHA256: "bb22"}
	in, err := db.InsertRun(ctx, Run{Kind: RunQuality, Engine: "cpu", ModelSHA256: "aa11", ModelName: "Llama",
		Config: []byte(`{"ctx":128}`), Quality: q}, nil)
	if err != nil || in.Kind != RunQuality || in.Quality != q {
		t.Fatalf("inserting a quality run: %+v, %v", in, err)
	}
	got, err := db.ListRuns(ctx, RunFilter{Kind: RunQuality})
	if err != nil || len(got) != 1 || got[0].Quality != q || string(got[0].Config) != `{"ctx":128}` {
		t.Errorf("quality runs: %+v, %v", got, err)
	}
	if _, err := db.sql.Exec("INSERT INTO runs(kind, started_ms) VALUES ('other', 1)"); err == nil {
		t.Error("the rebuilt table admits kind 'other'")
	}
	if err := db.DeleteRun(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var n int
	db.sql.QueryRow("SELECT count(*) FROM bench_samples WHERE run_id = 1").Scan(&n)
	if n != 0 {
		t.Errorf("deleting the bench run left %d samples: the cascade was lost", n)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}
