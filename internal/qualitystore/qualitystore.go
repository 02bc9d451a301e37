// Package qualitystore keeps quality runs (inference/quality's results)
// in etchat's store as runs of kind quality, and reads them back: the glue
// the CLI and the app share, so that neither inference/quality nor store
// knows the other.
package qualitystore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"etchat/inference/bench"
	"etchat/inference/quality"
	"etchat/store"
)

// ToRun is a result as the store's run: the figures a list shows in the
// run's quality columns, the whole result (without the per-token
// agreement, which can be long) in its config.
func ToRun(r *quality.Result, appVersion string) (store.Run, error) {
	c := *r
	if r.KLD != nil {
		k := *r.KLD
		k.Agree = nil
		c.KLD = &k
	}
	cfg, err := json.Marshal(c)
	if err != nil {
		return store.Run{}, err
	}
	mach, err := json.Marshal(bench.DetectMachine())
	if err != nil {
		return store.Run{}, err
	}
	run := store.Run{Kind: store.RunQuality, Engine: r.Engine, ModelSHA256: r.ModelSHA256, ModelPath: r.ModelPath, ModelName: r.Model,
		Config: cfg, Machine: mach, AppVersion: appVersion, Started: r.Started,
		Ended:   r.Started.Add(time.Duration(r.Seconds * float64(time.Second))),
		Quality: store.Quality{PPL: r.PPL, PPLErr: r.PPLErr, Scored: r.Scored}}
	if r.Stopped {
		run.Error = "stopped"
	}
	if k := r.KLD; k != nil {
		run.Quality.KLDMean, run.Quality.KLDMeanErr, run.Quality.SameTopPct = k.Mean, k.MeanErr, k.SameTop
		run.Quality.BaseSHA256 = k.Base.ModelSHA256
	}
	return run, nil
}

// Save stores a result and returns the stored run.
func Save(ctx context.Context, db *store.DB, r *quality.Result, appVersion string) (store.Run, error) {
	run, err := ToRun(r, appVersion)
	if err != nil {
		return store.Run{}, err
	}
	return db.InsertRun(ctx, run, nil)
}

// FromRun is a stored quality run's result (its per-token agreement is not
// stored).
func FromRun(run store.Run) (*quality.Result, error) {
	if run.Kind != store.RunQuality {
		return nil, fmt.Errorf("run %d is a %s run, not a quality run", run.ID, run.Kind)
	}
	var r quality.Result
	if err := json.Unmarshal(run.Config, &r); err != nil {
		return nil, fmt.Errorf("run %d: %w", run.ID, err)
	}
	return &r, nil
}

// List is the stored quality runs, newest first: of one model (its sha256)
// or, with "", of every model.
func List(ctx context.Context, db *store.DB, modelSHA string, limit int) ([]store.Run, error) {
	return db.ListRuns(ctx, store.RunFilter{Kind: store.RunQuality, ModelSHA: modelSHA, Limit: limit})
}
