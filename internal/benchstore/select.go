package benchstore

import (
	"context"
	"errors"

	"etchat/inference/bench"
	"etchat/inference/engine"
	"etchat/store"
)

// Select reads the stored bench results a selector picks, in test order.
// It is an error when nothing matches.
func Select(ctx context.Context, db *store.DB, sel bench.Selector) ([]*bench.Result, error) {
	var results []*bench.Result
	if len(sel.IDs) > 0 {
		for _, id := range sel.IDs {
			run, samples, err := db.GetRun(ctx, id)
			if err != nil {
				return nil, err
			}
			r, err := FromRun(run, samples)
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		}
	} else {
		runs, err := db.ListRuns(ctx, store.RunFilter{Kind: store.RunBench, Model: sel.Model, Since: sel.Since})
		if err != nil {
			return nil, err
		}
		var keep []store.Run
		for _, r := range runs {
			if sel.Engine == "" || engine.Same(r.Engine, sel.Engine) {
				keep = append(keep, r)
			}
		}
		if results, err = Load(ctx, db, keep); err != nil {
			return nil, err
		}
	}
	var out []*bench.Result
	for _, r := range results {
		if len(sel.IDs) > 0 && !sel.Matches(r) {
			continue
		}
		if !inBatchAndMode(sel, r) {
			continue
		}
		out = append(out, r)
	}
	if sel.Latest && len(out) > 0 {
		newest := out[0]
		for _, r := range out {
			if r.TestTime.After(newest.TestTime) {
				newest = r
			}
		}
		var same []*bench.Result
		for _, r := range out {
			if r.Batch == newest.Batch {
				same = append(same, r)
			}
		}
		out = same
	}
	if len(sel.IDs) == 0 {
		out = bench.NewestPerTest(out)
	}
	if len(out) == 0 {
		return nil, errors.New("no stored benchmark runs match")
	}
	return out, nil
}

// inBatchAndMode applies the selector's batch and numerics filters.
func inBatchAndMode(sel bench.Selector, r *bench.Result) bool {
	return (sel.Batch == "" || r.Batch == sel.Batch) && (sel.Numerics == "" || r.Test.NumericsName() == sel.Numerics)
}
