package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// colsOf is table's column names, sorted.
func colsOf(t *testing.T, raw *sql.DB, table string) []string {
	t.Helper()
	var cols []string
	crows, err := raw.Query("SELECT name FROM pragma_table_info(?) ORDER BY name", table)
	if err != nil {
		t.Fatal(err)
	}
	defer crows.Close()
	for crows.Next() {
		var c string
		crows.Scan(&c)
		cols = append(cols, c)
	}
	return cols
}

// rowsOf is every row of table as text, ordered, by column name (so a
// rebuilt table with its columns in another order compares equal); only,
// when given, limits it to those columns (the ones a table had before
// later migrations added more).
func rowsOf(t *testing.T, raw *sql.DB, table, order string, only ...string) []string {
	t.Helper()
	names := only
	if len(names) == 0 {
		names = colsOf(t, raw, table)
	}
	var cols []string
	for _, c := range names {
		cols = append(cols, "'"+c+"=' || quote("+c+")")
	}
	rows, err := raw.Query("SELECT " + strings.Join(cols, " || ' ' || ") + " FROM " + table + " ORDER BY " + order)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// openFrozen lays the frozen dump of schema version v (with its seeded
// rows) into a new database file and opens it raw, unmigrated.
func openFrozen(t *testing.T, v int) (string, *sql.DB) {
	t.Helper()
	frozen, err := os.ReadFile(frozenPath(v))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", v))
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(string(frozen)); err != nil {
		t.Fatal(err)
	}
	return path, raw
}

// TestMigration0004KeepsRunsAndAdmitsAPI: migrating a version-3 file with
// a bench run (and its sample) and a chat run keeps every row, column and
// id exactly, the samples still cascade with their run, and kind 'api' is
// now admitted while an unknown kind is still refused.
func TestMigration0004KeepsRunsAndAdmitsAPI(t *testing.T) {
	ctx := context.Background()
	path, raw := openFrozen(t, 3)
	runsBefore, samplesBefore := rowsOf(t, raw, "runs", "id"), rowsOf(t, raw, "bench_samples", "run_id, rep")
	runCols, sampleCols := colsOf(t, raw, "runs"), colsOf(t, raw, "bench_samples")
	raw.Close()
	if len(runsBefore) != 2 || len(samplesBefore) != 1 {
		t.Fatalf("seeded v3 holds %d runs and %d samples, want 2 and 1", len(runsBefore), len(samplesBefore))
	}

	db := openTest(t, path)
	if v, _ := db.Version(ctx); v < 4 {
		t.Fatalf("version %d after migrating", v)
	}
	// Later migrations add columns; the ones the rows had stay as they were.
	runsAfter, samplesAfter := rowsOf(t, db.sql, "runs", "id", runCols...), rowsOf(t, db.sql, "bench_samples", "run_id, rep", sampleCols...)
	if strings.Join(runsAfter, "\n") != strings.Join(runsBefore, "\n") {
		t.Errorf("runs changed:\n got %q\nwant %q", runsAfter, runsBefore)
	}
	if strings.Join(samplesAfter, "\n") != strings.Join(samplesBefore, "\n") {
		t.Errorf("bench_samples changed:\n got %q\nwant %q", samplesAfter, samplesBefore)
	}
	for _, tmp := range []string{"runs_0004", "bench_samples_0004"} {
		var n int
		db.sql.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = ?", tmp).Scan(&n)
		if n != 0 {
			t.Errorf("the migration left %s behind", tmp)
		}
	}

	api, err := db.InsertRun(ctx, Run{Kind: RunAPI, Engine: "cpu", ModelName: "Llama", Config: []byte(`{"cached_tokens":5}`),
		Stats: Stats{NumPromptTokens: 9, NumGeneratedTokens: 4}}, nil)
	if err != nil || api.Kind != RunAPI {
		t.Fatalf("inserting an api run: %+v, %v", api, err)
	}
	got, err := db.ListRuns(ctx, RunFilter{Kind: RunAPI})
	if err != nil || len(got) != 1 || got[0].ID != api.ID || string(got[0].Config) != `{"cached_tokens":5}` {
		t.Errorf("api runs: %+v, %v", got, err)
	}
	if _, err := db.sql.Exec("INSERT INTO runs(kind, started_ms) VALUES ('other', 1)"); err == nil {
		t.Error("the rebuilt table admits kind 'other'")
	}
	if _, err := db.InsertRun(ctx, Run{Kind: "other"}, nil); err == nil {
		t.Error("InsertRun admits kind 'other'")
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
