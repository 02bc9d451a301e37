package benchstore

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"etchat/inference/bench"
	"etchat/internal/fixtures"
	"etchat/store"
)

func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "etchat.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	rs := smallRun(t)
	if err := Save(ctx, db, rs); err != nil {
		t.Fatal(err)
	}
	o := opts(t, fixtures.Llama3, []int{8}, nil, 2)
	o.NoWarmup = true
	second := run(t, o)
	if err := Save(ctx, db, second); err != nil {
		t.Fatal(err)
	}
	runs, err := db.ListRuns(ctx, store.RunFilter{Kind: "bench", Model: "llama3-tiny-offgraph"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(rs)+1 {
		t.Fatalf("%d stored runs, want %d", len(runs), len(rs)+1)
	}
	back, err := Load(ctx, db, runs)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]*bench.Result{}
	for _, r := range back {
		byID[r.RunID] = r
	}
	for _, r := range append(append([]*bench.Result{}, rs...), second...) {
		b := byID[r.RunID]
		if b == nil {
			t.Fatalf("run %d not loaded", r.RunID)
		}
		if b.Test != r.Test || b.Batch != r.Batch || b.Machine != r.Machine || b.Model != r.Model ||
			len(b.Reps) != len(r.Reps) || b.Reps[1] != r.Reps[1] || b.AvgTS() != r.AvgTS() {
			t.Errorf("run %d differs after the store:\n%+v\n%+v", r.RunID, b, r)
		}
	}
	// The store's own columns agree with the precise numbers.
	got, samples, err := db.GetRun(ctx, rs[1].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Bench.NGen != 4 || got.Bench.Repetitions != 2 || math.Abs(got.Bench.AvgTokS-rs[1].AvgTS()) > 1e-9 ||
		len(samples) != 2 || samples[0].TokS != rs[1].Reps[0].TokS(rs[1].Test) || got.Memory.Peak != rs[1].PeakMem() {
		t.Errorf("stored run %+v samples %+v", got.Bench, samples)
	}
	var mach bench.Machine
	if string(got.Machine) == "{}" || !strings.Contains(string(got.Machine), `"cpu":"Test CPU"`) {
		t.Errorf("machine %s", got.Machine)
	}
	_ = mach

	// A run without etchat's config (another writer) is rebuilt from the samples.
	plain, err := db.InsertRun(ctx, store.Run{Kind: "bench", Engine: "cpu", ModelName: "x", Bench: store.BenchTest{NGen: 10}},
		[]store.Sample{{TokS: 100}, {TokS: 50}})
	if err != nil {
		t.Fatal(err)
	}
	full, ss, _ := db.GetRun(ctx, plain.ID)
	pr, err := FromRun(full, ss)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Test.Name() != "tg10" || len(pr.Reps) != 2 || pr.Reps[0].Ns != 1e8 || pr.Reps[1].Ns != 2e8 || pr.AvgTS() != 75 {
		t.Errorf("rebuilt %+v", pr)
	}

	// Ids, narrowed by filters.
	id := rs[0].RunID
	if got, err := Select(ctx, db, bench.Selector{IDs: []int64{id, plain.ID}, Model: "llama3-tiny-offgraph"}); err != nil || len(got) != 1 || got[0].RunID != id {
		t.Errorf("ids + model: %v", err)
	}
	if _, err := Select(ctx, db, bench.Selector{IDs: []int64{id}, Engine: "metal"}); err == nil || !strings.Contains(err.Error(), "no stored benchmark runs match") {
		t.Errorf("ids + engine: %v", err)
	}
	// The native engine's earlier name selects its rows and the other way round.
	metal, err := db.InsertRun(ctx, store.Run{Kind: "bench", Engine: "metal", ModelName: "m", Bench: store.BenchTest{NGen: 10}},
		[]store.Sample{{TokS: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mlx", "metal", "MLX"} {
		got, err := Select(ctx, db, bench.Selector{Engine: name, Model: "m"})
		if err != nil || len(got) != 1 || got[0].RunID != metal.ID || got[0].Engine != "metal" {
			t.Errorf("engine %s: %v, %v", name, got, err)
		}
		if got, err := Select(ctx, db, bench.Selector{IDs: []int64{metal.ID}, Engine: name}); err != nil || len(got) != 1 {
			t.Errorf("id + engine %s: %v, %v", name, got, err)
		}
	}
	if _, err := Select(ctx, db, bench.Selector{IDs: []int64{9999}}); err == nil {
		t.Error("a missing run id selected nothing without error")
	}
}

func TestCompareFlagsPlantedSlowdown(t *testing.T) {
	ctx := context.Background()
	db := openStore(t)
	// Timed on a virtual clock that the engines advance: 1 ms a token
	// ±15% for the baseline and the rerun (different jitter), 2 ms for the
	// slow engine. The forwards are real.
	clock := newVirtualClock(1)
	mk := func(step time.Duration) []*bench.Result {
		o := opts(t, fixtures.Llama3, []int{32}, []int{16}, 5)
		o.Engine = slowEngine{Engine: cpuEngine(), clock: clock, step: step, jitter: 0.15}
		o.Clock = clock.Now
		return run(t, o)
	}
	base := mk(time.Millisecond)
	rerun := mk(time.Millisecond)
	slow := mk(2 * time.Millisecond)
	for _, rs := range [][]*bench.Result{base, rerun, slow} {
		if err := Save(ctx, db, rs); err != nil {
			t.Fatal(err)
		}
	}

	// Selected back from the store by filters; "latest" is the slow run.
	sel, _ := bench.ParseSelector("model=llama3-tiny-offgraph,engine=cpu,latest")
	latest, err := Select(ctx, db, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(latest) != 2 || latest[0].RunID != slow[0].RunID {
		t.Fatalf("latest selected %d results of batch %s (run %d), want the slow run %d", len(latest), latest[0].Batch, latest[0].RunID, slow[0].RunID)
	}
	baseSel, err := Select(ctx, db, bench.Selector{Batch: base[0].Batch})
	if err != nil {
		t.Fatal(err)
	}

	co := bench.CompareOptions{}
	for _, ch := range bench.Compare(baseSel, latest, co) {
		if !ch.Flagged || ch.DeltaPct > -30 || ch.Note != "slower" || !(ch.P < 0.01) {
			t.Errorf("%s: slowdown not flagged: Δ %.1f%% p %v %q", ch.Test.Name(), ch.DeltaPct, ch.P, ch.Note)
		}
	}
	for _, ch := range bench.Compare(base, rerun, co) {
		if ch.Flagged {
			t.Errorf("%s: rerun flagged: Δ %.1f%% p %v", ch.Test.Name(), ch.DeltaPct, ch.P)
		}
		if ch.Base == nil || ch.Cand == nil || math.IsNaN(ch.P) {
			t.Errorf("%s: not matched: %+v", ch.Test.Name(), ch)
		}
	}

	var b bytes.Buffer
	n, err := bench.WriteComparison(&b, base, slow, bench.Compare(base, slow, co))
	if err != nil || n != 2 || !strings.Contains(b.String(), "** slower") || !strings.Contains(b.String(), "2 of 2 tests changed") {
		t.Errorf("comparison (%d flagged):\n%s", n, b.String())
	}

	// Unmatched tests are listed, not compared.
	other := opts(t, fixtures.Llama3, []int{16}, []int{32}, 2)
	orun := run(t, other)
	chs := bench.Compare(base, orun, co)
	if len(chs) != 4 {
		t.Fatalf("%d changes", len(chs))
	}
	for _, ch := range chs {
		if ch.Flagged || (ch.Base != nil && ch.Cand != nil) {
			t.Errorf("unmatched %s compared: %+v", ch.Test.Name(), ch)
		}
	}
}
