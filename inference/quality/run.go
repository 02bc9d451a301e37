package quality

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/modelinfo"
)

// Options say what Run scores and how.
type Options struct {
	PTE  string
	Load inference.LoadOptions // engine, library, tokenizer; Hash is always on
	// Text is scored with the model's tokenizer; IDs instead are scored as
	// given (a model without a tokenizer). TextSource says where either
	// came from, for the output.
	Text       string
	IDs        []int
	TextSource string
	// RandomIDs > 0 scores that many synthetic ids instead (bench's seeded
	// stream of ordinary ids, Seed): for models without a tokenizer.
	RandomIDs int
	Seed      uint64
	// Ctx is the window: 0 = the base's, else the model's context (its
	// cache capacity).
	Ctx int
	// SaveLogits writes every scored row's distribution there (TopK > 0:
	// only the k most likely tokens of each row).
	SaveLogits string
	TopK       int
	// KLBase is a file SaveLogits wrote from another export (or engine)
	// over the same tokens: the run then reports the KL divergence.
	KLBase string
	// NoStepwise refuses a program that returns only the last row
	// (ErrRowsUnavailable) instead of scoring it one token per step.
	NoStepwise bool
	Mode       string // the engine's numerics mode, recorded ("" until the CPU engine has modes)
	Selected   func(inference.Selection)
	Progress   func(Progress)
}

// Progress is told after each window.
type Progress struct {
	Window, Windows int
	Scored, Total   int     // tokens scored so far, of all
	PPL             float64 // so far
	Elapsed         time.Duration
}

// Result is one quality run.
type Result struct {
	Model           string    `json:"model"`
	ModelSHA256     string    `json:"model_sha256"`
	ModelPath       string    `json:"model_path"`
	Engine          string    `json:"engine"`
	Device          string    `json:"device"`
	Mode            string    `json:"mode,omitempty"`
	Tokenizer       string    `json:"tokenizer,omitempty"`
	TokenizerSHA256 string    `json:"tokenizer_sha256,omitempty"`
	Text            string    `json:"text"`
	Scheme          string    `json:"scheme"`
	Vocab           int       `json:"vocab"`
	Ctx             int       `json:"ctx"`
	First           int       `json:"first"`
	Windows         int       `json:"windows"`
	Tokens          int       `json:"tokens"` // in the text (a partial last window is not scored)
	Scored          int       `json:"scored"`
	Stepwise        bool      `json:"stepwise"`
	StepwiseWhy     string    `json:"stepwise_why,omitempty"`
	PPL             float64   `json:"ppl"`
	PPLErr          float64   `json:"ppl_err"`
	NLL             float64   `json:"nll"` // mean negative log-likelihood, nats
	Seconds         float64   `json:"seconds"`
	TokS            float64   `json:"tok_s"` // tokens run through the model per second (Windows·(Ctx-1))
	Started         time.Time `json:"started"`
	Stopped         bool      `json:"stopped,omitempty"` // cancelled: the figures cover the windows done
	SavedLogits     string    `json:"saved_logits,omitempty"`
	KLD             *KLD      `json:"kld,omitempty"`
}

// WindowError: the window does not fit the model's cache.
type WindowError struct{ Ctx, Capacity int }

func (e *WindowError) Error() string {
	return fmt.Sprintf("a window of %d tokens does not fit the model's cache of %d", e.Ctx, e.Capacity)
}

// Run loads the model and scores the text (see the package comment). On
// cancellation it returns the windows done with Stopped set, and the
// context's error; a half-written --save-logits file is removed.
func Run(ctx context.Context, o Options) (*Result, error) {
	lo := o.Load
	lo.Hash = true
	m, err := inference.Prepare(o.PTE, lo)
	if err != nil {
		return nil, err
	}
	tokens, err := textTokens(m, o)
	if err != nil {
		return nil, err
	}
	var base *logitsReader
	if o.KLBase != "" {
		f, err := os.Open(o.KLBase)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if base, err = newLogitsReader(f, o.KLBase); err != nil {
			return nil, err
		}
		if o.Ctx == 0 {
			o.Ctx = base.h.Ctx
		}
	}
	if err := m.Open(ctx); err != nil {
		return nil, err
	}
	defer m.Close()
	if o.Selected != nil {
		o.Selected(m.Engine)
	}
	return runOpen(ctx, m, tokens, base, o)
}

// runOpen scores tokens on the opened model m.
func runOpen(ctx context.Context, m *inference.Model, tokens []int, base *logitsReader, o Options) (*Result, error) {
	r := newResult(m, o)
	if o.Ctx == 0 {
		o.Ctx = m.Capacity()
	}
	if o.Ctx > m.Capacity() {
		return nil, &WindowError{Ctx: o.Ctx, Capacity: m.Capacity()}
	}
	var prefix []int
	if m.Chat != nil && o.IDs == nil && o.RandomIDs == 0 {
		prefix = m.Chat.HF.SpecialPrefix()
	}
	plan, err := NewPlan(len(tokens), o.Ctx, min(m.PrefillChunk(), o.Ctx), prefix)
	if err != nil {
		return nil, err
	}
	r.Ctx, r.First, r.Windows, r.Tokens, r.Vocab = plan.Ctx, plan.First, plan.Windows, len(tokens), m.Session.Vocab()
	used := tokens[:plan.Windows*plan.Ctx]
	if base != nil {
		if err := checkBase(base.h, r, plan, used); err != nil {
			return nil, err
		}
	}
	a := &accum{lp: make([]float64, r.Vocab), base: base}
	save, finish, err := openSave(o, r, plan, used)
	if err != nil {
		return nil, err
	}
	a.save = save
	f := &feeder{sess: m.Session, plan: plan, tokens: used, vocab: r.Vocab, refuse: o.NoStepwise}
	runErr := scoreAll(ctx, f, a, r, o, finish)
	fill(r, a, f, base)
	if errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) {
		r.Stopped = true
		return r, runErr
	}
	if runErr != nil {
		return nil, runErr
	}
	return r, nil
}

// textTokens is what Run scores: the ids given, or the text with the
// tokenizer's BOS prefix (not its suffix).
func textTokens(m *inference.Model, o Options) ([]int, error) {
	if o.RandomIDs > 0 {
		t, err := bench.NewTokens(m.Info, o.Load.Tokenizer, o.Seed)
		if err != nil {
			return nil, err
		}
		return t.IDs(o.RandomIDs), nil
	}
	if o.IDs != nil {
		for i, id := range o.IDs {
			if id < 0 || (m.Info.VocabSize > 0 && id >= m.Info.VocabSize) {
				return nil, fmt.Errorf("id %d (number %d of the ids) is outside the model's vocabulary of %d", id, i+1, m.Info.VocabSize)
			}
		}
		return o.IDs, nil
	}
	if m.Chat == nil {
		return nil, &inference.TokenizerError{Path: filepath.Join(filepath.Dir(o.PTE), modelinfo.TokenizerFile), Err: os.ErrNotExist}
	}
	return append(m.Chat.HF.SpecialPrefix(), m.Chat.HF.Encode(o.Text, false)...), nil
}

func newResult(m *inference.Model, o Options) *Result {
	r := &Result{Model: modelinfo.DisplayName(m.Path), ModelSHA256: m.Info.SHA256, ModelPath: m.Path,
		Engine: m.Engine.Name, Device: m.Engine.Device, Mode: o.Mode, Text: o.TextSource, Scheme: Scheme, Started: time.Now()}
	if m.Chat != nil {
		r.Tokenizer = m.Chat.Path
		r.TokenizerSHA256, _ = modelinfo.HashFile(m.Chat.Path)
	}
	return r
}

// checkBase refuses a base made over other tokens than this run's.
func checkBase(h Header, r *Result, plan Plan, tokens []int) error {
	switch {
	case h.Vocab != r.Vocab:
		return &BaseMismatchError{What: "vocabulary", Base: fmt.Sprint(h.Vocab), Here: fmt.Sprint(r.Vocab)}
	case h.Ctx != plan.Ctx || h.First != plan.First:
		return &BaseMismatchError{What: "window", Base: fmt.Sprintf("%d tokens", h.Ctx), Here: fmt.Sprintf("%d tokens", plan.Ctx)}
	case !slices.Equal(h.Tokens, tokens) || !slices.Equal(h.Prefix, plan.Prefix):
		if h.TokenizerSHA256 != r.TokenizerSHA256 {
			return &BaseMismatchError{What: "tokenizer", Base: short(h.TokenizerSHA256), Here: short(r.TokenizerSHA256)}
		}
		return &BaseMismatchError{What: "tokens", Base: fmt.Sprintf("%d tokens", len(h.Tokens)), Here: fmt.Sprintf("%d tokens", len(tokens))}
	case h.Rows != plan.Scored():
		return &BaseMismatchError{What: "number of scored tokens", Base: fmt.Sprint(h.Rows), Here: fmt.Sprint(plan.Scored())}
	}
	return nil
}

// short is a sha256 as shown: its first 12 digits, or "none".
func short(sha string) string {
	if sha == "" {
		return "none"
	}
	return sha[:min(12, len(sha))]
}

// openSave starts the --save-logits file (in a temporary name beside it);
// finish(true) puts it in place, finish(false) removes it.
func openSave(o Options, r *Result, plan Plan, tokens []int) (*logitsWriter, func(bool) error, error) {
	if o.SaveLogits == "" {
		return nil, func(bool) error { return nil }, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.SaveLogits), "."+filepath.Base(o.SaveLogits)+".*")
	if err != nil {
		return nil, nil, err
	}
	tmp.Chmod(0o644) // CreateTemp's 0600 is for secrets; this is a data file
	h := Header{Model: r.Model, ModelSHA256: r.ModelSHA256, Engine: r.Engine, Mode: r.Mode, Tokenizer: filepath.Base(r.Tokenizer),
		TokenizerSHA256: r.TokenizerSHA256, Vocab: r.Vocab, Ctx: plan.Ctx, First: plan.First, Prefix: plan.Prefix, TopK: o.TopK,
		Rows: plan.Scored(), Tokens: tokens}
	if h.Tokenizer == "." {
		h.Tokenizer = ""
	}
	w, err := newLogitsWriter(tmp, h)
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, err
	}
	finish := func(ok bool) error {
		err := w.close()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if ok && err == nil {
			if err = os.Rename(tmp.Name(), o.SaveLogits); err == nil {
				r.SavedLogits = o.SaveLogits
				return nil
			}
		}
		os.Remove(tmp.Name())
		return err
	}
	return w, finish, nil
}

// scoreAll scores every window, then completes (or removes) the saved
// logits and checks the base was used to its end.
func scoreAll(ctx context.Context, f *feeder, a *accum, r *Result, o Options, finish func(bool) error) error {
	err := score(ctx, f, a, r, o)
	if ferr := finish(err == nil); ferr != nil && err == nil {
		err = ferr
	}
	if err == nil && a.base != nil {
		err = a.base.end()
	}
	return err
}

// score runs every window, telling Progress after each.
func score(ctx context.Context, f *feeder, a *accum, r *Result, o Options) error {
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	for w := range f.plan.Windows {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := f.run(ctx, w, a.add); err != nil {
			return err
		}
		if o.Progress != nil {
			p, _ := ppl(&a.nll)
			o.Progress(Progress{Window: w + 1, Windows: f.plan.Windows, Scored: int(a.nll.n), Total: f.plan.Scored(),
				PPL: p, Elapsed: time.Since(start)})
		}
	}
	return nil
}

// fill puts the gathered statistics into r.
func fill(r *Result, a *accum, f *feeder, base *logitsReader) {
	r.Stepwise, r.StepwiseWhy = f.stepwise, f.why
	r.Scored = int(a.nll.n)
	if r.Scored > 0 {
		r.PPL, r.PPLErr = ppl(&a.nll)
		r.NLL = a.nll.mean()
	}
	if r.Seconds > 0 {
		r.TokS = float64(r.Scored/max(f.plan.PerWindow(), 1)*(f.plan.Ctx-1)) / r.Seconds
	}
	if base != nil {
		h := base.h
		r.KLD = a.kldResult(BaseInfo{Path: base.path, Model: h.Model, ModelSHA256: h.ModelSHA256, Engine: h.Engine, Mode: h.Mode,
			TopK: h.TopK, SameTokenizer: h.TokenizerSHA256 != "" && h.TokenizerSHA256 == r.TokenizerSHA256})
	}
}

// String is the result in one line.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PPL = %.4f ± %.4f over %d tokens", r.PPL, r.PPLErr, r.Scored)
	if r.KLD != nil {
		fmt.Fprintf(&b, ", KLD = %.6f ± %.6f, same top %.2f%%", r.KLD.Mean, r.KLD.MeanErr, r.KLD.SameTop)
	}
	return b.String()
}
