package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/inference/quality"
	"etchat/internal/qualitystore"
	"etchat/store"
)

// This file is the Quality view's view-model: a model's perplexity over a
// text and, against a base model of the same tokenizer, the KL divergence,
// run with progress and Stop, beside the model's benchmark numbers and its
// past quality runs. ui_quality.go draws it.

// QualityRunner runs one measurement (quality.Run in the app).
type QualityRunner func(ctx context.Context, o quality.Options) (*quality.Result, error)

// QualityStore keeps quality runs and reads what the view shows beside
// them.
type QualityStore interface {
	SaveQuality(ctx context.Context, r *quality.Result) error
	// QualityHistory is the model's quality runs, newest first.
	QualityHistory(ctx context.Context, modelSHA string) ([]store.Run, error)
	// BenchFigures is the model's newest benchmark numbers, one line ("" none).
	BenchFigures(ctx context.Context, modelSHA string) (string, error)
}

// dbQuality is QualityStore over the database.
type dbQuality struct{ db *store.DB }

func (d dbQuality) SaveQuality(ctx context.Context, r *quality.Result) error {
	_, err := qualitystore.Save(ctx, d.db, r, Version)
	return err
}

func (d dbQuality) QualityHistory(ctx context.Context, sha string) ([]store.Run, error) {
	return qualitystore.List(ctx, d.db, sha, 50)
}

func (d dbQuality) BenchFigures(ctx context.Context, sha string) (string, error) {
	runs, err := d.db.ListRuns(ctx, store.RunFilter{Kind: store.RunBench, ModelSHA: sha, Limit: 50})
	if err != nil {
		return "", err
	}
	var pp, tg *store.Run
	for i := range runs {
		r := &runs[i]
		if r.Bench.NGen > 0 && tg == nil {
			tg = r
		} else if r.Bench.NGen == 0 && pp == nil {
			pp = r
		}
	}
	var parts []string
	if pp != nil {
		parts = append(parts, fmt.Sprintf("pp%d %.1f ± %.1f t/s (%s)", pp.Bench.NPrompt, pp.Bench.AvgTokS, pp.Bench.StddevTokS, pp.Engine))
	}
	if tg != nil {
		parts = append(parts, fmt.Sprintf("tg%d %.1f ± %.1f t/s (%s)", tg.Bench.NGen, tg.Bench.AvgTokS, tg.Bench.StddevTokS, tg.Engine))
	}
	return strings.Join(parts, ", "), nil
}

// QualityState is what the view draws.
type QualityState struct {
	Model      LibraryEntry
	Candidates []LibraryEntry // base models of the same tokenizer
	TextPath   string         // "" = the bundled text
	BasePath   string         // "" = no base
	Running    bool
	Stage      string // what runs now: "base" or "model"
	Progress   quality.Progress
	Status     string
	Result     *quality.Result
	Err        error
	Bench      string
	History    []store.Run
}

// Quality is the Quality view's state; its methods are safe from any
// goroutine, OnChange is called after each change.
type Quality struct {
	run    QualityRunner
	st     QualityStore
	engine string // the engine choice (the app's preference)

	mu     sync.Mutex
	s      QualityState
	cancel context.CancelFunc
	done   chan struct{}

	OnChange func()
}

// NewQuality makes the view-model; st may be nil (nothing stored).
func NewQuality(run QualityRunner, st QualityStore, engineChoice string) *Quality {
	return &Quality{run: run, st: st, engine: engineChoice, s: QualityState{Status: "Pick a text and, to compare, a base model; then Start."}}
}

func (q *Quality) changed() {
	if f := q.OnChange; f != nil {
		f()
	}
}

// State is a copy of the view's state.
func (q *Quality) State() QualityState {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.s
	s.Candidates = append([]LibraryEntry(nil), s.Candidates...)
	s.History = append([]store.Run(nil), s.History...)
	return s
}

// SetModel chooses the model to measure among the library's entries (all
// give the base candidates) and reads its history.
func (q *Quality) SetModel(ctx context.Context, m LibraryEntry, all []LibraryEntry) {
	q.mu.Lock()
	q.s.Model, q.s.Candidates, q.s.BasePath, q.s.Result, q.s.Err = m, BaseCandidates(m, all), "", nil, nil
	q.mu.Unlock()
	q.Refresh(ctx)
}

// SetText chooses the text: a file, or "" for the bundled one.
func (q *Quality) SetText(path string) {
	q.mu.Lock()
	q.s.TextPath = path
	q.mu.Unlock()
	q.changed()
}

// SetBase chooses the base model by path ("" none); it must be a candidate.
func (q *Quality) SetBase(path string) error {
	q.mu.Lock()
	defer q.changed()
	defer q.mu.Unlock()
	if path != "" && !candidate(q.s.Candidates, path) {
		return fmt.Errorf("%s does not share this model's tokenizer", ModelName(path))
	}
	q.s.BasePath = path
	return nil
}

func candidate(cs []LibraryEntry, path string) bool {
	for _, c := range cs {
		if c.Path == path {
			return true
		}
	}
	return false
}

// Refresh reads the model's past quality runs and benchmark numbers.
func (q *Quality) Refresh(ctx context.Context) {
	q.mu.Lock()
	m := q.s.Model
	q.mu.Unlock()
	var hist []store.Run
	var bench string
	var err error
	if q.st != nil && m.Info != nil {
		sha := m.Info.SHA256
		if sha == "" {
			sha, err = modelinfo.HashFile(m.Path)
		}
		if err == nil {
			hist, err = q.st.QualityHistory(ctx, sha)
		}
		if err == nil {
			bench, err = q.st.BenchFigures(ctx, sha)
		}
	}
	q.mu.Lock()
	q.s.History, q.s.Bench = hist, bench
	if err != nil {
		q.s.Err = fmt.Errorf("could not read the history: %w", err)
	}
	q.mu.Unlock()
	q.changed()
}

// BaseCandidates are the library's other runnable models that m can be
// compared with: the same tokenizer (equal tokenizer.json sha256) or, for
// models without one, the same vocabulary size (the ids are then
// synthetic and equal for both).
func BaseCandidates(m LibraryEntry, all []LibraryEntry) []LibraryEntry {
	if m.Info == nil {
		return nil
	}
	key := tokenizerKey(m.Info)
	var out []LibraryEntry
	for _, e := range all {
		if e.Path != m.Path && e.Runnable() && tokenizerKey(e.Info) == key {
			out = append(out, e)
		}
	}
	return out
}

// tokenizerKey is what "the same tokenizer" compares.
func tokenizerKey(info *ModelInfo) string {
	if t := info.Companion.Tokenizer; t != "" {
		if sha, err := modelinfo.HashFile(t); err == nil {
			return "sha256:" + sha
		}
	}
	return fmt.Sprintf("vocab:%d", info.VocabSize)
}

// randomIDs is how many synthetic ids a model without a tokenizer scores.
const randomIDs = 2048

// options are the runner's options for one model of the run.
func (q *Quality) options(path string, s QualityState) (quality.Options, error) {
	o := quality.Options{PTE: path, Load: inference.LoadOptions{Engine: q.engine}}
	info := s.Model.Info
	switch {
	case info.Companion.Tokenizer == "":
		o.RandomIDs, o.TextSource = randomIDs, fmt.Sprintf("%d synthetic ids (no tokenizer)", randomIDs)
		o.Ctx = min(info.MaxCtxLen, 512)
	case s.TextPath == "":
		o.Text, o.TextSource = quality.DefaultText, quality.DefaultTextSource
	default:
		b, err := os.ReadFile(s.TextPath)
		if err != nil {
			return o, err
		}
		o.Text, o.TextSource = string(b), s.TextPath
	}
	return o, nil
}

// Start measures the model (first the base, when one is chosen, saving its
// logits to a temporary file) in the background. Stop ends it.
func (q *Quality) Start(ctx context.Context) error {
	q.mu.Lock()
	if q.s.Running {
		q.mu.Unlock()
		return errors.New("a measurement is running")
	}
	s := q.s
	if s.Model.Info == nil {
		q.mu.Unlock()
		return errors.New("no model chosen")
	}
	ctx, cancel := context.WithCancel(ctx)
	q.cancel, q.done = cancel, make(chan struct{})
	q.s.Running, q.s.Result, q.s.Err, q.s.Progress, q.s.Status = true, nil, nil, quality.Progress{}, "Loading…"
	done := q.done
	q.mu.Unlock()
	q.changed()
	go func() {
		defer close(done)
		defer cancel()
		r, err := q.measure(ctx, s)
		q.finish(ctx, r, err)
	}()
	return nil
}

// measure runs the base (if any), then the model.
func (q *Quality) measure(ctx context.Context, s QualityState) (*quality.Result, error) {
	o, err := q.options(s.Model.Path, s)
	if err != nil {
		return nil, err
	}
	if s.BasePath != "" {
		dir, err := os.MkdirTemp("", "etchat-quality-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		bo := o
		bo.PTE, bo.SaveLogits, bo.TopK = s.BasePath, filepath.Join(dir, "base.etl"), 0
		bo.Progress = q.progress("base")
		br, err := q.run(ctx, bo)
		if err != nil {
			return nil, fmt.Errorf("the base %s: %w", ModelName(s.BasePath), err)
		}
		if q.st != nil {
			if err := q.st.SaveQuality(ctx, br); err != nil {
				return nil, err
			}
		}
		o.KLBase, o.Ctx = bo.SaveLogits, br.Ctx
	}
	o.Progress = q.progress("model")
	return q.run(ctx, o)
}

func (q *Quality) progress(stage string) func(quality.Progress) {
	return func(p quality.Progress) {
		q.mu.Lock()
		q.s.Stage, q.s.Progress = stage, p
		q.s.Status = fmt.Sprintf("%s: window %d of %d, PPL so far %.4g", stage, p.Window, p.Windows, p.PPL)
		q.mu.Unlock()
		q.changed()
	}
}

// finish records the outcome and stores a complete run.
func (q *Quality) finish(ctx context.Context, r *quality.Result, err error) {
	stopped := errors.Is(err, context.Canceled)
	if err == nil && q.st != nil {
		if serr := q.st.SaveQuality(context.WithoutCancel(ctx), r); serr != nil {
			err = fmt.Errorf("the run was not saved: %w", serr)
		}
	}
	q.mu.Lock()
	q.s.Running, q.s.Result, q.s.Stage = false, r, ""
	switch {
	case stopped:
		q.s.Status = "Stopped."
	case err != nil:
		q.s.Err, q.s.Status = err, "Failed."
	default:
		q.s.Status = "Done: " + r.String() + "."
	}
	q.cancel = nil
	q.mu.Unlock()
	q.Refresh(context.WithoutCancel(ctx))
}

// Stop cancels the measurement; it returns at once.
func (q *Quality) Stop() {
	q.mu.Lock()
	if q.cancel != nil {
		q.cancel()
	}
	q.mu.Unlock()
}

// Wait waits for a measurement to end.
func (q *Quality) Wait() {
	q.mu.Lock()
	done := q.done
	q.mu.Unlock()
	if done != nil {
		<-done
	}
}
