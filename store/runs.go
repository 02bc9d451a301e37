package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"etchat/inference/stats"
)

// Stats are ExecuTorch's runner stats (extension/llm/runner/stats.h), in
// its units: milliseconds on one clock, and token counts. The type is
// package stats' (one declaration for every layer), with its rates.
type Stats = stats.Stats

// Memory is what the engine reported, in bytes; 0 means unknown.
type Memory struct {
	AfterLoad    int64 `json:"after_load,omitempty"`
	AfterPrefill int64 `json:"after_prefill,omitempty"`
	AfterDecode  int64 `json:"after_decode,omitempty"`
	Peak         int64 `json:"peak,omitempty"`
}

// BenchTest identifies a benchmark test (llama-bench style) and holds its
// summary over the repetitions.
type BenchTest struct {
	NPrompt     int     `json:"n_prompt"`
	NGen        int     `json:"n_gen"`
	NDepth      int     `json:"n_depth"`
	Repetitions int     `json:"repetitions"`
	AvgTokS     float64 `json:"avg_tok_s"`
	StddevTokS  float64 `json:"stddev_tok_s"`
}

// Run kinds: what produced a run.
const (
	RunChat  = "chat"  // one reply: a chat in the app or etchat run
	RunBench = "bench" // one benchmark test (its repetitions are samples)
	RunAPI   = "api"   // one request to etchat serve (migration 0004 admits it)
	// RunQuality is one perplexity run, against a base or not (etchat
	// perplexity, the app's Quality view; migration 0006 admits it).
	RunQuality = "quality"
)

// RunKinds are the kinds the schema admits.
var RunKinds = []string{RunChat, RunBench, RunAPI, RunQuality}

// KnownRunKind reports whether kind is one of RunKinds.
func KnownRunKind(kind string) bool { return slices.Contains(RunKinds, kind) }

// badKind is the error for a kind outside RunKinds.
func badKind(kind string) error {
	return invalid("run kind %q is not %s", kind, strings.Join(RunKinds, " or "))
}

// Run is one generation (Kind RunChat), one benchmark test (RunBench), one
// request to the server (RunAPI) or one perplexity run (RunQuality).
type Run struct {
	ID             int64           `json:"id"`
	Kind           string          `json:"kind"`
	Engine         string          `json:"engine"`
	ModelSHA256    string          `json:"model_sha256"`
	ModelPath      string          `json:"model_path"`
	ModelName      string          `json:"model_name"`
	ConversationID int64           `json:"conversation_id,omitempty"`
	Config         json.RawMessage `json:"config"`
	Machine        json.RawMessage `json:"machine"`
	AppVersion     string          `json:"app_version"`
	Started        time.Time       `json:"started"`
	Ended          time.Time       `json:"ended"`
	Error          string          `json:"error,omitempty"`
	Stats          Stats           `json:"stats"`
	// The rates: the caller's when set (the generation loop's, from its
	// precise clocks, so a reply has one rate wherever it is shown), else
	// derived by the store from Stats on insert.
	PrefillTokS float64   `json:"prefill_tok_s"`
	DecodeTokS  float64   `json:"decode_tok_s"`
	TTFTMs      float64   `json:"ttft_ms"`
	Memory      Memory    `json:"memory"`
	Bench       BenchTest `json:"bench"`
	Quality     Quality   `json:"quality"`
	// Numerics is the CPU engine's numerics mode: "exact" or "fast" (""
	// is stored as exact; runs from before the column read as exact).
	Numerics string `json:"numerics"`
}

// Quality is a quality run's figures (zero for other kinds): perplexity ±
// its error over Scored tokens and, when BaseSHA256 is set, the mean KL
// divergence from that base model ± its error and how often both put the
// same token first. The rest of the run is its Config.
type Quality struct {
	PPL        float64 `json:"ppl,omitempty"`
	PPLErr     float64 `json:"ppl_err,omitempty"`
	Scored     int     `json:"n_scored,omitempty"`
	KLDMean    float64 `json:"kld_mean,omitempty"`
	KLDMeanErr float64 `json:"kld_mean_err,omitempty"`
	SameTopPct float64 `json:"same_top_pct,omitempty"`
	BaseSHA256 string  `json:"base_sha256,omitempty"`
}

// Sample is one repetition of a benchmark test.
type Sample struct {
	Rep   int   `json:"rep"` // 1-based
	Stats Stats `json:"stats"`
	// Derived by the store from Stats on insert, except TokS, which the
	// caller may set (0: Stats.TokPerSec()).
	PrefillTokS float64 `json:"prefill_tok_s"`
	DecodeTokS  float64 `json:"decode_tok_s"`
	TTFTMs      float64 `json:"ttft_ms"`
	TokS        float64 `json:"tok_s"`
	MemPeak     int64   `json:"mem_peak,omitempty"` // bytes, 0 unknown
}

const statCols = `model_load_start_ms, model_load_end_ms, inference_start_ms, prompt_eval_end_ms, first_token_ms,
	inference_end_ms, aggregate_sampling_time_ms, aggregate_model_execution_time_ms, num_prompt_tokens, num_generated_tokens`

// nStatCols is how many columns statCols names.
const nStatCols = 10

func statArgs(s Stats) []any {
	return []any{s.ModelLoadStartMs, s.ModelLoadEndMs, s.InferenceStartMs, s.PromptEvalEndMs, s.FirstTokenMs,
		s.InferenceEndMs, s.AggregateSamplingTimeMs, s.AggregateModelExecutionTimeMs, s.NumPromptTokens, s.NumGeneratedTokens}
}

func statDest(s *Stats) []any {
	return []any{&s.ModelLoadStartMs, &s.ModelLoadEndMs, &s.InferenceStartMs, &s.PromptEvalEndMs, &s.FirstTokenMs,
		&s.InferenceEndMs, &s.AggregateSamplingTimeMs, &s.AggregateModelExecutionTimeMs, &s.NumPromptTokens, &s.NumGeneratedTokens}
}

const runCols = `id, kind, engine, model_sha256, model_path, model_name, coalesce(conversation_id, 0), config, machine, app_version,
	started_ms, ended_ms, error, ` + statCols + `, prefill_tok_s, decode_tok_s, ttft_ms,
	coalesce(mem_after_load, 0), coalesce(mem_after_prefill, 0), coalesce(mem_after_decode, 0), coalesce(mem_peak, 0),
	n_prompt, n_gen, n_depth, repetitions, avg_tok_s, stddev_tok_s,
	ppl, ppl_err, n_scored, kld_mean, kld_mean_err, same_top_pct, base_sha256, numerics`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var config, machine string
	var started, ended int64
	dest := []any{&r.ID, &r.Kind, &r.Engine, &r.ModelSHA256, &r.ModelPath, &r.ModelName, &r.ConversationID, &config, &machine, &r.AppVersion,
		&started, &ended, &r.Error}
	dest = append(dest, statDest(&r.Stats)...)
	dest = append(dest, &r.PrefillTokS, &r.DecodeTokS, &r.TTFTMs,
		&r.Memory.AfterLoad, &r.Memory.AfterPrefill, &r.Memory.AfterDecode, &r.Memory.Peak,
		&r.Bench.NPrompt, &r.Bench.NGen, &r.Bench.NDepth, &r.Bench.Repetitions, &r.Bench.AvgTokS, &r.Bench.StddevTokS,
		&r.Quality.PPL, &r.Quality.PPLErr, &r.Quality.Scored, &r.Quality.KLDMean, &r.Quality.KLDMeanErr, &r.Quality.SameTopPct,
		&r.Quality.BaseSHA256, &r.Numerics)
	err := sc.Scan(dest...)
	r.Config, r.Machine = json.RawMessage(config), json.RawMessage(machine)
	r.Started, r.Ended = fromMS(started), fromMS(ended)
	return r, err
}

// numericsOr is the numerics column's value: "" (a writer that does not
// say) is exact, the only mode before there were two.
func numericsOr(n string) string {
	if n == "" {
		return "exact"
	}
	return n
}

// nullBytes stores 0 ("unknown") as NULL.
func nullBytes(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// InsertRun stores a run and its benchmark samples in one transaction and
// returns the stored run. The store fills the derived rates from the stats;
// for a bench run with samples, Repetitions defaults to len(samples) and
// Avg/StddevTokS to the mean and sample standard deviation of the samples'
// TokS. Samples numbered 0 are numbered 1, 2, … in order.
func (db *DB) InsertRun(ctx context.Context, r Run, samples []Sample) (Run, error) {
	if !KnownRunKind(r.Kind) {
		return Run{}, badKind(r.Kind)
	}
	config, err := jsonText("run config", r.Config, "{}")
	if err != nil {
		return Run{}, err
	}
	machine, err := jsonText("run machine", r.Machine, "{}")
	if err != nil {
		return Run{}, err
	}
	if r.PrefillTokS == 0 && r.DecodeTokS == 0 && r.TTFTMs == 0 {
		r.PrefillTokS, r.DecodeTokS, r.TTFTMs = r.Stats.PrefillTokPerSec(), r.Stats.DecodeTokPerSec(), r.Stats.TTFTMs()
	}
	seen := map[int]bool{}
	for i := range samples {
		s := &samples[i]
		if s.Rep == 0 {
			s.Rep = i + 1
		}
		if s.Rep < 0 || seen[s.Rep] {
			return Run{}, invalid("sample %d: repetition number %d is negative or repeated", i, s.Rep)
		}
		seen[s.Rep] = true
		s.PrefillTokS, s.DecodeTokS, s.TTFTMs = s.Stats.PrefillTokPerSec(), s.Stats.DecodeTokPerSec(), s.Stats.TTFTMs()
		if s.TokS == 0 {
			s.TokS = s.Stats.TokPerSec()
		}
		s.TokS = finite(s.TokS)
	}
	if len(samples) > 0 {
		if r.Bench.Repetitions == 0 {
			r.Bench.Repetitions = len(samples)
		}
		if r.Bench.AvgTokS == 0 && r.Bench.StddevTokS == 0 {
			r.Bench.AvgTokS, r.Bench.StddevTokS = meanStddev(samples)
		}
	}
	r.Bench.AvgTokS, r.Bench.StddevTokS = finite(r.Bench.AvgTokS), finite(r.Bench.StddevTokS)
	if r.Started.IsZero() {
		r.Started = db.now()
	}
	var out Run
	err = db.write(ctx, "save run", func(tx *sql.Tx) error {
		id, err := insertRun(ctx, tx, r, config, machine, samples)
		if err != nil {
			return err
		}
		out, err = scanRun(tx.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?", id))
		return err
	})
	return out, err
}

func insertRun(ctx context.Context, tx *sql.Tx, r Run, config, machine string, samples []Sample) (int64, error) {
	var conv any
	if r.ConversationID != 0 {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM conversations WHERE id = ?", r.ConversationID).Scan(&n); err != nil {
			return 0, err
		}
		if n > 0 {
			conv = r.ConversationID // a run outlives a deleted conversation
		}
	}
	args := []any{r.Kind, r.Engine, r.ModelSHA256, r.ModelPath, r.ModelName, conv, config, machine, r.AppVersion,
		ms(r.Started), ms(r.Ended), r.Error}
	args = append(args, statArgs(r.Stats)...)
	args = append(args, finite(r.PrefillTokS), finite(r.DecodeTokS), finite(r.TTFTMs),
		nullBytes(r.Memory.AfterLoad), nullBytes(r.Memory.AfterPrefill), nullBytes(r.Memory.AfterDecode), nullBytes(r.Memory.Peak),
		r.Bench.NPrompt, r.Bench.NGen, r.Bench.NDepth, r.Bench.Repetitions, r.Bench.AvgTokS, r.Bench.StddevTokS)
	q := r.Quality
	args = append(args, finite(q.PPL), finite(q.PPLErr), q.Scored, finite(q.KLDMean), finite(q.KLDMeanErr), finite(q.SameTopPct), q.BaseSHA256, numericsOr(r.Numerics))
	res, err := tx.ExecContext(ctx, `INSERT INTO runs(kind, engine, model_sha256, model_path, model_name, conversation_id, config, machine, app_version,
		started_ms, ended_ms, error, `+statCols+`, prefill_tok_s, decode_tok_s, ttft_ms,
		mem_after_load, mem_after_prefill, mem_after_decode, mem_peak, n_prompt, n_gen, n_depth, repetitions, avg_tok_s, stddev_tok_s,
		ppl, ppl_err, n_scored, kld_mean, kld_mean_err, same_top_pct, base_sha256, numerics)
		VALUES (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return 0, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if len(samples) == 0 {
		return id, nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO bench_samples(run_id, rep, `+statCols+`, prefill_tok_s, decode_tok_s, ttft_ms, tok_s, mem_peak)
		VALUES (`+placeholders(nStatCols+7)+`)`)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	for _, s := range samples {
		a := append([]any{id, s.Rep}, statArgs(s.Stats)...)
		a = append(a, finite(s.PrefillTokS), finite(s.DecodeTokS), finite(s.TTFTMs), s.TokS, nullBytes(s.MemPeak))
		if _, err := stmt.ExecContext(ctx, a...); err != nil {
			return 0, err
		}
	}
	return id, nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// meanStddev is the mean and the sample standard deviation (n-1) of TokS.
func meanStddev(ss []Sample) (mean, sd float64) {
	for _, s := range ss {
		mean += s.TokS
	}
	mean /= float64(len(ss))
	if len(ss) < 2 {
		return mean, 0
	}
	var v float64
	for _, s := range ss {
		v += (s.TokS - mean) * (s.TokS - mean)
	}
	return mean, math.Sqrt(v / float64(len(ss)-1))
}

// RunFilter selects runs; zero fields select everything.
type RunFilter struct {
	ModelSHA string    // exact sha256
	Model    string    // a sha256 prefix or a model name (case-insensitive)
	Kind     string    // one of RunKinds
	Since    time.Time // started at or after
	Limit    int       // at most this many, newest first; 0: no limit
}

// ListRuns returns runs (without samples), newest first.
func (db *DB) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	var where []string
	var args []any
	if f.ModelSHA != "" {
		where = append(where, "model_sha256 = ?")
		args = append(args, f.ModelSHA)
	}
	if f.Model != "" {
		where = append(where, "(substr(model_sha256, 1, ?) = lower(?) OR model_name = ? COLLATE NOCASE)")
		args = append(args, len(f.Model), f.Model, f.Model)
	}
	if f.Kind != "" {
		if !KnownRunKind(f.Kind) {
			return nil, badKind(f.Kind)
		}
		where = append(where, "kind = ?")
		args = append(args, f.Kind)
	}
	if !f.Since.IsZero() {
		where = append(where, "started_ms >= ?")
		args = append(args, ms(f.Since))
	}
	if f.Limit < 0 {
		return nil, invalid("run limit %d is negative", f.Limit)
	}
	q := "SELECT " + runCols + " FROM runs"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY started_ms DESC, id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.wrap("list runs", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, db.wrap("list runs", err)
		}
		out = append(out, r)
	}
	return out, db.wrap("list runs", rows.Err())
}

// GetRun returns a run and its samples, in repetition order.
func (db *DB) GetRun(ctx context.Context, id int64) (Run, []Sample, error) {
	var r Run
	var samples []Sample
	err := db.read(ctx, "get run", func(tx *sql.Tx) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", id)
		}
		if err != nil {
			return err
		}
		samples, err = querySamples(ctx, tx, id)
		return err
	})
	return r, samples, err
}

func querySamples(ctx context.Context, q querier, runID int64) ([]Sample, error) {
	rows, err := q.QueryContext(ctx, `SELECT rep, `+statCols+`, prefill_tok_s, decode_tok_s, ttft_ms, tok_s, coalesce(mem_peak, 0)
		FROM bench_samples WHERE run_id = ? ORDER BY rep`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Sample
	for rows.Next() {
		var s Sample
		dest := append([]any{&s.Rep}, statDest(&s.Stats)...)
		dest = append(dest, &s.PrefillTokS, &s.DecodeTokS, &s.TTFTMs, &s.TokS, &s.MemPeak)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteRun removes a run and its samples.
func (db *DB) DeleteRun(ctx context.Context, id int64) error {
	return db.write(ctx, "delete run", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "DELETE FROM runs WHERE id = ?", id))(notFound("run", id))
	})
}
