package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"etchat/inference/bench"
	"etchat/inference/bench/plot"
	"etchat/inference/engine"
	"etchat/internal/benchstore"
	"etchat/store"
)

var compareSynopsis = `[--db PATH] [--min-change PCT] [--alpha P] [--json] [--plot FILE.png] [--fail-on-slower] BASELINE CANDIDATE

BASELINE and CANDIDATE each select stored benchmark results (see 'etchat history --runs'):
a run id or a comma list of ids, or filters: model=NAME|SHA, engine=` + strings.Join(engine.Choices()[1:], "|") + `, batch=B,
since=2006-01-02, numerics=exact|fast, and latest (only the newest 'etchat bench' invocation among the matches),
e.g. 'model=llama-bench-bf16,engine=cpu,latest'. Tests are matched by n_prompt, n_gen,
n_depth, cache configuration and numerics mode. A change is flagged (**) when the means differ by at least
--min-change percent and Welch's t-test or the Mann-Whitney U test on the repetitions'
t/s gives p < --alpha.`

// runCompare compares two sets of stored benchmark results.
func runCompare(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "compare", compareSynopsis)
	dbPath := fs.String("db", "", "database file (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	minPct := fs.Float64("min-change", 5, "smallest change in percent worth flagging")
	alpha := fs.Float64("alpha", 0.05, "significance level of the tests on the repetitions")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	plotFile := fs.String("plot", "", "also draw baseline and candidate bars to this PNG file")
	failSlower := fs.Bool("fail-on-slower", false, "exit with status 1 when a test is flagged slower")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return Usagef("want BASELINE and CANDIDATE (run ids or filters), got %d arguments", fs.NArg())
	}
	if *minPct < 0 || math.IsNaN(*minPct) {
		return Usagef("invalid value %v for flag -min-change: must be 0 or more", *minPct)
	}
	if !(*alpha > 0 && *alpha < 1) {
		return Usagef("invalid value %v for flag -alpha: must be between 0 and 1", *alpha)
	}
	if *plotFile != "" && !strings.HasSuffix(strings.ToLower(*plotFile), ".png") {
		return Usagef("invalid value %q for flag -plot: want a .png file name", *plotFile)
	}
	var sels [2]bench.Selector
	for i, name := range []string{"BASELINE", "CANDIDATE"} {
		s, err := bench.ParseSelector(fs.Arg(i))
		if err != nil {
			return Usagef("%s %q: %v", name, fs.Arg(i), err)
		}
		sels[i] = s
	}
	path, err := store.ResolvePath(*dbPath, env.Getenv)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no database at %s: run 'etchat bench' first", path)
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return storeError(err)
	}
	defer db.Close()
	var sides [2][]*bench.Result
	for i, name := range []string{"baseline", "candidate"} {
		if sides[i], err = benchstore.Select(ctx, db, sels[i]); err != nil {
			return fmt.Errorf("%s %q: %w", name, fs.Arg(i), err)
		}
	}
	changes := bench.Compare(sides[0], sides[1], bench.CompareOptions{Alpha: *alpha, MinPct: *minPct})
	slower := 0
	for _, ch := range changes {
		if ch.Flagged && ch.DeltaPct < 0 {
			slower++
		}
	}
	if *asJSON {
		if err := writeCompareJSON(env, changes); err != nil {
			return err
		}
	} else if _, err := bench.WriteComparison(env.Stdout, sides[0], sides[1], changes); err != nil {
		return err
	}
	if *plotFile != "" {
		png, err := plot.BarsPNG(sides[1], sides[0], plot.Size{})
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		if err := os.WriteFile(*plotFile, png, 0o644); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	if *failSlower && slower > 0 {
		fmt.Fprintf(env.Stderr, "etchat compare: %d tests flagged slower\n", slower)
		return errSilentFailure
	}
	return nil
}

type compareJSON struct {
	Test          string   `json:"test"`
	Cache         string   `json:"cache"`
	NPrompt       int      `json:"n_prompt"`
	NGen          int      `json:"n_gen"`
	NDepth        int      `json:"n_depth"`
	BaseRunID     int64    `json:"baseline_run_id,omitempty"`
	CandRunID     int64    `json:"candidate_run_id,omitempty"`
	BaseAvgTS     *float64 `json:"baseline_avg_ts"`
	BaseStddevTS  *float64 `json:"baseline_stddev_ts"`
	CandAvgTS     *float64 `json:"candidate_avg_ts"`
	CandStddevTS  *float64 `json:"candidate_stddev_ts"`
	ChangePct     *float64 `json:"change_pct"`
	PWelch        *float64 `json:"p_welch"`
	PMannWhitneyU *float64 `json:"p_mann_whitney_u"`
	Flagged       bool     `json:"flagged"`
	Note          string   `json:"note,omitempty"`
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeCompareJSON(env *Env, changes []bench.Change) error {
	out := make([]compareJSON, len(changes))
	for i, ch := range changes {
		c := compareJSON{Test: ch.Test.Name(), Cache: ch.Test.Cache.String(), NPrompt: ch.Test.NPrompt, NGen: ch.Test.NGen,
			NDepth: ch.Test.NDepth, Flagged: ch.Flagged, Note: ch.Note}
		if ch.Base != nil {
			c.BaseRunID, c.BaseAvgTS, c.BaseStddevTS = ch.Base.RunID, num(ch.Base.AvgTS()), num(ch.Base.StddevTS())
		}
		if ch.Cand != nil {
			c.CandRunID, c.CandAvgTS, c.CandStddevTS = ch.Cand.RunID, num(ch.Cand.AvgTS()), num(ch.Cand.StddevTS())
		}
		if ch.Base != nil && ch.Cand != nil {
			c.ChangePct, c.PWelch, c.PMannWhitneyU = num(ch.DeltaPct), num(ch.PWelch), num(ch.PRank)
		}
		out[i] = c
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
