package store

import (
	"context"
	"strings"
	"testing"
)

// withoutColumn drops column's cell from rowsOf's rows, failing the
// comparison (by leaving a marker) where its value is not want.
func withoutColumn(rows []string, column, want string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		cell := column + "=" + want
		switch {
		case strings.Contains(r, " "+cell+" "):
			r = strings.Replace(r, " "+cell+" ", " ", 1)
		case strings.HasSuffix(r, " "+cell):
			r = strings.TrimSuffix(r, " "+cell)
		case strings.HasPrefix(r, cell+" "):
			r = strings.TrimPrefix(r, cell+" ")
		default:
			r += " [" + column + " is not " + want + "]"
		}
		out[i] = r
	}
	return out
}

// TestMigration0007Numerics: a file from before the numerics column keeps
// every run as it was, each now reading as exact (what it ran: the only
// mode then); new runs record their mode, "" as exact, and an unknown
// mode is refused.
func TestMigration0007Numerics(t *testing.T) {
	ctx := context.Background()
	path, raw := openFrozen(t, 4)
	// Later migrations (0006's quality figures) add columns too: compare
	// the columns the rows had, and numerics beside them.
	cols := colsOf(t, raw, "runs")
	before := rowsOf(t, raw, "runs", "id", cols...)
	raw.Close()
	if len(before) == 0 {
		t.Fatal("the frozen v4 file holds no runs")
	}
	db := openTest(t, path)
	if after := withoutColumn(rowsOf(t, db.sql, "runs", "id", append(cols, "numerics")...), "numerics", "'exact'"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("runs changed:\n got %q\nwant %q", after, before)
	}
	old, err := db.ListRuns(ctx, RunFilter{})
	if err != nil || len(old) != len(before) {
		t.Fatalf("listing the old runs: %d, %v", len(old), err)
	}
	for _, r := range old {
		if r.Numerics != "exact" {
			t.Errorf("old run %d reads as %q", r.ID, r.Numerics)
		}
	}
	for _, n := range []string{"fast", "exact", ""} {
		r, err := db.InsertRun(ctx, Run{Kind: RunChat, Engine: "cpu", ModelName: "m", Numerics: n}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.ListRuns(ctx, RunFilter{})
		want := n
		if want == "" {
			want = "exact"
		}
		if err != nil || got[0].ID != r.ID && got[len(got)-1].ID != r.ID {
			t.Fatalf("run %d not listed: %v", r.ID, err)
		}
		for _, g := range got {
			if g.ID == r.ID && g.Numerics != want {
				t.Errorf("inserted %q, read %q", n, g.Numerics)
			}
		}
	}
	if _, err := db.InsertRun(ctx, Run{Kind: RunChat, Numerics: "approximate"}, nil); err == nil {
		t.Error("an unknown numerics mode was stored")
	}
}
