package mlx

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// MaxStep is the most tokens one native call runs. Every native call is
// one blocking call into the library that nothing can interrupt, and an
// in-graph program with no prefill chunk is fed whole (inference's
// Prefill), so Forward and ForwardAll cut a longer step into calls of at
// most MaxStep tokens (the cache's max_write, smaller, is the caller's
// chunk already) and check the context between them: a cancel waits for
// at most one call of MaxStep tokens. 256 keeps a call well under a second
// on every device measured (docs/native-engine.md) while the per-call cost
// (~0.1 ms) stays below 1 % of a 256-token prefill on a CPU.
const MaxStep = 256

// stepState is the hand-over between a caller and the goroutine running
// its native calls: the first to move it off pending wins.
const (
	stepPending int32 = iota
	stepAbandoned
	stepDelivered
)

type stepResult struct {
	out []float32
	err error
}

// runSteps runs a step under s.mu, which it releases. With a context that
// can be cancelled the calls run on their own goroutine and the caller
// stops waiting at the cancel: the session stays busy (s.mu held) until
// the call in flight returns, and is then rewound to its length before
// the step (an off-graph cache; an in-graph one keeps what it wrote, its
// positions are the caller's), so the next call finds it as if the step
// had not run.
func (s *Session) runSteps(ctx context.Context, ids, positions []int64, buf []float32, all bool, t0 time.Time) ([]float32, error) {
	if ctx.Done() == nil {
		defer s.mu.Unlock()
		return s.stepsKept(ctx, ids, positions, buf, all, t0)
	}
	var state atomic.Int32
	done := make(chan stepResult, 1)
	go func() {
		defer s.mu.Unlock()
		out, err := s.stepsKept(ctx, ids, positions, buf, all, t0)
		if !state.CompareAndSwap(stepPending, stepDelivered) {
			if err == nil {
				s.undoStep(positions[0])
			}
			return
		}
		done <- stepResult{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(stepPending, stepAbandoned) {
			return nil, fmt.Errorf("mlx: forward: %w (the native call in flight finishes, then the step is undone)", ctx.Err())
		}
		r := <-done
		return r.out, r.err
	}
}

// stepsKept is steps under s.mu; with Options.PoisonViews it returns the
// logits in one of two Go buffers in turn, and the next forward fills the
// one it returned before with NaN: the library's memory and the session's
// buffer are reused by every step, so a caller keeping logits too long
// would otherwise read the next step's values without a sign.
func (s *Session) stepsKept(ctx context.Context, ids, positions []int64, buf []float32, all bool, t0 time.Time) ([]float32, error) {
	out, err := s.steps(ctx, ids, positions, buf, all, t0)
	if !s.poison || err != nil {
		return out, err
	}
	s.flip = !s.flip
	k := 0
	if s.flip {
		k = 1
	}
	s.shadow[k] = append(s.shadow[k][:0], out...)
	s.view = s.shadow[k]
	return s.view, nil
}

// steps runs ids in calls of at most MaxStep tokens, checking ctx between
// them; a cancel between calls undoes what the earlier ones ran. Forward's
// logits are the last call's (read in place where the library allows);
// ForwardAll's rows are gathered into buf.
func (s *Session) steps(ctx context.Context, ids, positions []int64, buf []float32, all bool, t0 time.Time) ([]float32, error) {
	if len(ids) <= MaxStep {
		return s.runOne(ids, positions, buf, all, t0)
	}
	var out []float32
	for off := 0; off < len(ids); off += MaxStep {
		if off > 0 {
			if err := ctx.Err(); err != nil {
				s.undoStep(positions[0])
				return nil, fmt.Errorf("mlx: forward: %w", err)
			}
		}
		n := min(MaxStep, len(ids)-off)
		part := buf[:s.vocab]
		if all {
			part = buf[off*s.vocab : (off+n)*s.vocab]
		}
		got, err := s.runOne(ids[off:off+n], positions[off:off+n], part, all, t0)
		if err != nil {
			var le *Error
			if all && errors.As(err, &le) && le.Status == StatusUnsupported {
				// A program that returns only the last row: the whole step
				// still goes into the cache, as one call would have put it.
				return nil, s.finishLastOnly(ids[off+n:], positions[off+n:], buf[:s.vocab], t0, err)
			}
			return nil, err
		}
		if all && &got[0] != &part[0] {
			copy(part, got) // read in place: the next call overwrites it
		}
		out = got
	}
	if all {
		return buf, nil
	}
	return out, nil
}

// undoStep rewinds an off-graph cache to start, the length before a step
// that was cancelled or abandoned (under s.mu). A refused rewind (a ring
// already evicted the cells) leaves the length to be asked of the library.
func (s *Session) undoStep(start int64) {
	if s.cfg == nil {
		return
	}
	if err := s.lib.rewind(s.h, int32(start)); err != nil {
		s.length = -1
		return
	}
	s.length = int(start)
}

// finishLastOnly runs the rest of a step whose all-rows copy the program
// refused (ErrUnsupported, after its first call ran), last row only, and
// returns that refusal: the cache then holds the whole step, as the ABI
// promises of one call.
func (s *Session) finishLastOnly(ids, positions []int64, buf []float32, t0 time.Time, refused error) error {
	for off := 0; off < len(ids); off += MaxStep {
		n := min(MaxStep, len(ids)-off)
		if _, err := s.runOne(ids[off:off+n], positions[off:off+n], buf, false, t0); err != nil {
			return err
		}
	}
	return refused
}
