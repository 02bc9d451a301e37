// Package benchstore keeps benchmark results in etchat's store: it maps
// bench.Result to store runs and samples and back, saves them, and selects
// stored results for comparison. It is the glue the CLI and the app share,
// so that neither inference/bench nor store knows the other.
package benchstore

import (
	"context"
	"encoding/json"
	"errors"
	"etchat/inference/engine"
	"fmt"
	"math"

	"etchat/inference/bench"
	"etchat/store"
)

// runConfig is what a bench run keeps in the store's config column: the
// test identity and everything needed to rebuild the Result, including
// the precise per-repetition timings (the store's stats are milliseconds).
type runConfig struct {
	Batch    string      `json:"batch"`
	Test     bench.Test  `json:"test"`
	Model    bench.Model `json:"model"`
	Backends string      `json:"backends"`
	Device   string      `json:"device,omitempty"`
	Warmup   bool        `json:"warmup"`
	Seed     uint64      `json:"seed"`
	LoadNs   int64       `json:"load_ns"`
	Reps     []bench.Rep `json:"reps"`
	Threads  int         `json:"n_threads,omitempty"`
	Build    string      `json:"build_commit,omitempty"`
}

// ToRun is a result as the store's run (one per test) and samples (one
// per repetition). The run's stats are the last repetition's.
func ToRun(r *bench.Result) (store.Run, []store.Sample, error) {
	if len(r.Reps) == 0 {
		return store.Run{}, nil, errors.New("result has no repetitions")
	}
	cfg, err := json.Marshal(runConfig{Batch: r.Batch, Test: r.Test, Model: r.Model, Backends: r.Backends, Device: r.Device,
		Warmup: r.Warmup, Seed: r.Seed, LoadNs: r.LoadNs, Reps: r.Reps, Threads: r.Threads, Build: r.BuildCommit})
	if err != nil {
		return store.Run{}, nil, err
	}
	mach, err := json.Marshal(r.Machine)
	if err != nil {
		return store.Run{}, nil, err
	}
	run := store.Run{
		Kind: store.RunBench, Engine: r.Engine, Numerics: r.Test.NumericsName(), ModelSHA256: r.Model.SHA256, ModelPath: r.Model.Path, ModelName: r.Model.Name,
		Config: cfg, Machine: mach, AppVersion: r.AppVersion, Started: r.TestTime, Ended: r.Ended,
		Stats:  r.Reps[len(r.Reps)-1].Stats,
		Memory: store.Memory{Peak: r.PeakMem()},
		Bench: store.BenchTest{NPrompt: r.Test.NPrompt, NGen: r.Test.NGen, NDepth: r.Test.NDepth,
			Repetitions: len(r.Reps), AvgTokS: r.AvgTS(), StddevTokS: r.StddevTS()},
	}
	samples := make([]store.Sample, len(r.Reps))
	for i, p := range r.Reps {
		samples[i] = store.Sample{Rep: i + 1, Stats: p.Stats, TokS: p.TokS(r.Test), MemPeak: p.PeakMem}
	}
	return run, samples, nil
}

// Save stores each result as a bench run and sets its RunID.
func Save(ctx context.Context, db *store.DB, results []*bench.Result) error {
	for _, r := range results {
		run, samples, err := ToRun(r)
		if err != nil {
			return err
		}
		got, err := db.InsertRun(ctx, run, samples)
		if err != nil {
			return fmt.Errorf("save %s: %w", r.Test.Name(), err)
		}
		r.RunID = got.ID
	}
	return nil
}

// FromRun rebuilds a result from a stored bench run and its samples. A run
// saved by another writer (no etchat bench config) is rebuilt from the
// store's columns, its timings from the samples' rates.
func FromRun(run store.Run, samples []store.Sample) (*bench.Result, error) {
	if run.Kind != store.RunBench {
		return nil, fmt.Errorf("run %d is a %s run, not a benchmark", run.ID, run.Kind)
	}
	var cfg runConfig
	if len(run.Config) > 0 {
		if err := json.Unmarshal(run.Config, &cfg); err != nil {
			return nil, fmt.Errorf("run %d: config: %w", run.ID, err)
		}
	}
	r := &bench.Result{
		RunID: run.ID, Batch: cfg.Batch, Test: cfg.Test, Model: cfg.Model, Engine: run.Engine, Device: cfg.Device, Backends: cfg.Backends,
		AppVersion: run.AppVersion, Warmup: cfg.Warmup, Seed: cfg.Seed, TestTime: run.Started, Ended: run.Ended,
		LoadNs: cfg.LoadNs, Reps: cfg.Reps, Threads: cfg.Threads, BuildCommit: cfg.Build,
	}
	if len(run.Machine) > 0 {
		_ = json.Unmarshal(run.Machine, &r.Machine) // an odd machine column is not worth losing the run
	}
	if r.Test.NPrompt == 0 && r.Test.NGen == 0 {
		r.Test.NPrompt, r.Test.NGen, r.Test.NDepth = run.Bench.NPrompt, run.Bench.NGen, run.Bench.NDepth
	}
	if run.Numerics == engine.NumericsFast { // the column is the record (older rows: exact)
		r.Test.Numerics = run.Numerics
	}
	if r.Model.SHA256 == "" {
		r.Model.SHA256, r.Model.Path, r.Model.Name = run.ModelSHA256, run.ModelPath, run.ModelName
	}
	if r.Batch == "" {
		r.Batch = fmt.Sprintf("run-%d", run.ID)
	}
	if len(r.Reps) == 0 {
		n := float64(r.Test.NPrompt + r.Test.NGen)
		for _, s := range samples {
			p := bench.Rep{Stats: s.Stats, TTFTNs: int64(s.TTFTMs * 1e6), PeakMem: s.MemPeak}
			if s.TokS > 0 && !math.IsInf(s.TokS, 0) {
				p.Ns = int64(math.Round(n * 1e9 / s.TokS))
			}
			r.Reps = append(r.Reps, p)
		}
	}
	return r, nil
}

// Load reads stored bench runs back as results (with their repetitions).
func Load(ctx context.Context, db *store.DB, runs []store.Run) ([]*bench.Result, error) {
	out := make([]*bench.Result, 0, len(runs))
	for _, run := range runs {
		if run.Kind != store.RunBench {
			continue
		}
		full, samples, err := db.GetRun(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		r, err := FromRun(full, samples)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Runs is the stored benchmark history of one database, as the Benchmarks
// view-model's port wants it.
type Runs struct{ db *store.DB }

// NewRuns serves db's benchmark history.
func NewRuns(db *store.DB) *Runs { return &Runs{db: db} }

// Save stores each result as a bench run and sets its RunID.
func (r *Runs) Save(ctx context.Context, results []*bench.Result) error {
	return Save(ctx, r.db, results)
}

// List reads up to limit stored bench results (0: all), newest first.
func (r *Runs) List(ctx context.Context, limit int) ([]*bench.Result, error) {
	runs, err := r.db.ListRuns(ctx, store.RunFilter{Kind: store.RunBench, Limit: limit})
	if err != nil {
		return nil, err
	}
	return Load(ctx, r.db, runs)
}

// Select reads the stored results a selector picks (see Select).
func (r *Runs) Select(ctx context.Context, sel bench.Selector) ([]*bench.Result, error) {
	return Select(ctx, r.db, sel)
}

// APIRuns returns up to limit stored runs of etchat serve, newest first.
func (r *Runs) APIRuns(ctx context.Context, limit int) ([]store.Run, error) {
	return r.db.ListRuns(ctx, store.RunFilter{Kind: store.RunAPI, Limit: limit})
}

// QualityRuns returns up to limit stored quality runs (etchat perplexity,
// the app's Quality view), newest first.
func (r *Runs) QualityRuns(ctx context.Context, limit int) ([]store.Run, error) {
	return r.db.ListRuns(ctx, store.RunFilter{Kind: store.RunQuality, Limit: limit})
}
