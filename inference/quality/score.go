// Package quality measures what an export loses: perplexity over a text
// and the KL divergence of its next-token distributions against a base
// export's saved ones, the way llama.cpp's llama-perplexity does (its
// windowing, its statistics and their ± estimates), on either engine.
//
// The text is cut into windows of the model's context; each window starts
// from an empty cache, and only the second half of each window is scored
// (every scored token then has at least half a window of context), as
// llama-perplexity scores it. Rows come from Session.ForwardAll; a program
// that returns only the last position's row is scored one token per step
// instead, and the result says so.
package quality

import (
	"context"
	"errors"
	"fmt"
	"math"

	"etchat/inference"
	"etchat/inference/engine"
)

// Scheme names the windowing, for output and the stored run.
const Scheme = "llama-perplexity: non-overlapping windows of the context, each from an empty cache, the second half of each scored"

// Plan is how a token sequence is cut into windows.
type Plan struct {
	Ctx     int   // tokens per window
	First   int   // the first scored row of a window: Ctx/2
	Windows int   // whole windows in the text (a partial tail is not scored)
	Prefix  []int // the tokenizer's BOS prefix, written over each window's first tokens (none: nothing)
	Chunk   int   // the most tokens one forward takes
}

// NewPlan cuts n tokens into windows of ctx tokens fed chunk at a time.
func NewPlan(n, ctx, chunk int, prefix []int) (Plan, error) {
	switch {
	case ctx < 4:
		return Plan{}, fmt.Errorf("a window of %d tokens is too small to score (at least 4)", ctx)
	case len(prefix) >= ctx/2:
		return Plan{}, fmt.Errorf("the tokenizer's prefix of %d tokens does not fit before the second half of a %d-token window", len(prefix), ctx)
	case chunk < 1:
		return Plan{}, fmt.Errorf("a forward step of %d tokens", chunk)
	case n < ctx:
		return Plan{}, &TooShortError{Tokens: n, Ctx: ctx}
	}
	return Plan{Ctx: ctx, First: ctx / 2, Windows: n / ctx, Prefix: prefix, Chunk: chunk}, nil
}

// PerWindow is how many tokens each window scores.
func (p Plan) PerWindow() int { return p.Ctx - 1 - p.First }

// Scored is how many tokens the plan scores.
func (p Plan) Scored() int { return p.Windows * p.PerWindow() }

// window is the ids of window w: the text's, the prefix written over the
// first ones (llama-perplexity puts the BOS there).
func (p Plan) window(tokens []int, w int) []int64 {
	ids := make([]int64, p.Ctx)
	for i := range ids {
		ids[i] = int64(tokens[w*p.Ctx+i])
	}
	for i, id := range p.Prefix {
		ids[i] = int64(id)
	}
	return ids
}

// TooShortError: the text has fewer tokens than one window.
type TooShortError struct{ Tokens, Ctx int }

func (e *TooShortError) Error() string {
	return fmt.Sprintf("the text has %d tokens, fewer than one window of %d", e.Tokens, e.Ctx)
}

// rowFunc is told each scored row: the window, the row's position in the
// window, its logits (valid during the call only) and the token it
// predicts. An error stops the scoring.
type rowFunc func(w, pos int, logits []float32, target int) error

// feeder runs a plan's windows on a session.
type feeder struct {
	sess   engine.Session
	plan   Plan
	tokens []int
	vocab  int
	// stepwise: the program returns only the last row, so scored tokens
	// go one per forward; why says what showed it.
	stepwise bool
	why      string
	refuse   bool // NoStepwise: refuse instead
}

// ErrRowsUnavailable: the program returns only the last row and the
// caller refused step-by-step scoring.
var ErrRowsUnavailable = errors.New("the program returns only the last position's logits")

// run scores window w, calling row for every scored position.
func (f *feeder) run(ctx context.Context, w int, row rowFunc) error {
	ids := f.window(w)
	if err := f.sess.Clear(); err != nil {
		return err
	}
	// The context half needs no rows: Forward (the CPU engine then
	// computes only the last row of the head).
	if err := f.feed(ctx, ids, 0, f.plan.First, false, nil); err != nil {
		return err
	}
	emit := func(pos int, logits []float32) error { return row(w, pos, logits, int(ids[pos+1])) }
	if f.stepwise {
		return f.steps(ctx, ids, f.plan.First, emit)
	}
	err := f.feed(ctx, ids, f.plan.First, f.plan.Ctx-1, true, emit)
	if !errors.Is(err, errLastRowOnly) {
		return err
	}
	if f.refuse {
		return fmt.Errorf("%w: %s", ErrRowsUnavailable, f.why)
	}
	// Rewind to the scored half (or start over where the cache cannot)
	// and go a token at a time.
	if rerr := f.sess.Rewind(f.plan.First); rerr != nil {
		if err := f.sess.Clear(); err != nil {
			return err
		}
		if err := f.feed(ctx, ids, 0, f.plan.First, false, nil); err != nil {
			return err
		}
	}
	return f.steps(ctx, ids, f.plan.First, emit)
}

func (f *feeder) window(w int) []int64 { return f.plan.window(f.tokens, w) }

// errLastRowOnly is feed's signal that the program gave one row for many.
var errLastRowOnly = errors.New("last row only")

// feed runs ids[from:to] in chunks; with all, it asks every row and hands
// each to emit (position, logits).
func (f *feeder) feed(ctx context.Context, ids []int64, from, to int, all bool, emit func(int, []float32) error) error {
	pos := make([]int64, 0, f.plan.Chunk)
	for s := from; s < to; s += f.plan.Chunk {
		e := min(s+f.plan.Chunk, to)
		pos = pos[:0]
		for p := s; p < e; p++ {
			pos = append(pos, int64(p))
		}
		if !all {
			if _, err := f.sess.Forward(ctx, ids[s:e], pos); err != nil {
				return err
			}
			continue
		}
		out, err := f.sess.ForwardAll(ctx, ids[s:e], pos)
		n := e - s
		switch {
		case errors.Is(err, engine.ErrUnsupported) && n > 1:
			f.stepwise, f.why = true, "the engine cannot return every row of this program ("+err.Error()+")"
			return errLastRowOnly
		case err != nil:
			return err
		case len(out) == f.vocab && n > 1:
			f.stepwise, f.why = true, fmt.Sprintf("the program returned 1 row of logits for %d tokens", n)
			return errLastRowOnly
		case len(out) != n*f.vocab:
			return fmt.Errorf("the program returned %d logits for %d tokens of a %d-token vocabulary", len(out), n, f.vocab)
		}
		for i := range n {
			if err := emit(s+i, out[i*f.vocab:(i+1)*f.vocab]); err != nil {
				return err
			}
		}
	}
	return nil
}

// steps scores ids[from:Ctx-1] one token per forward, from the last row.
func (f *feeder) steps(ctx context.Context, ids []int64, from int, emit func(int, []float32) error) error {
	for p := from; p < f.plan.Ctx-1; p++ {
		out, err := f.sess.Forward(ctx, ids[p:p+1], []int64{int64(p)})
		if err != nil {
			return err
		}
		if len(out) != f.vocab {
			return fmt.Errorf("the program returned %d logits for one token of a %d-token vocabulary", len(out), f.vocab)
		}
		if err := emit(p, out); err != nil {
			return err
		}
	}
	return nil
}

// logSoftmax writes row's log-probabilities, in float64, into dst and
// returns dst and the row's argmax (the lowest id on a tie).
func logSoftmax(dst []float64, row []float32) ([]float64, int) {
	dst = dst[:len(row)]
	mx, arg := math.Inf(-1), 0
	for i, x := range row {
		if v := float64(x); v > mx {
			mx, arg = v, i
		}
	}
	lz := inference.LogSumExp(row)
	for i, x := range row {
		dst[i] = float64(x) - lz
	}
	return dst, arg
}
