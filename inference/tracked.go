// The cache mirror: a session wrapper that shadows cache control in a kvcache.Sequence to predict rewinds.

package inference

import (
	"context"
	"fmt"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// trackedSession mirrors the session's cache control in a kvcache.Sequence
// so a conversation can ask whether a rewind would be served, for sessions
// that cannot say themselves.
type trackedSession struct {
	engine.Session
	seq *kvcache.Sequence
}

type rewindChecker interface{ CanRewind(newLen int) bool }

func newTracked(s engine.Session, cfg *kvcache.Config) *trackedSession {
	t := &trackedSession{Session: s}
	if cfg != nil {
		if seq, err := kvcache.NewSequence(cfg); err == nil {
			t.seq = seq
		}
	}
	return t
}

func (t *trackedSession) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, err := t.Session.Forward(ctx, ids, positions)
	t.mirror(err)
	return out, err
}

func (t *trackedSession) ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, err := t.Session.ForwardAll(ctx, ids, positions)
	t.mirror(err)
	return out, err
}

// LogitsMode passes the wrapped session's logits-to-keep mode through
// (scoring asks it of the session it is given).
func (t *trackedSession) LogitsMode() engine.LogitsMode { return engine.SessionLogitsMode(t.Session) }

// mirror brings the shadow sequence to the session's length after a
// forward.
func (t *trackedSession) mirror(err error) {
	if t.seq == nil {
		return
	}
	for n := t.Session.Len(); t.seq.Len() < n; {
		T := n - t.seq.Len()
		if mw := t.seq.Config().MaxWrite; mw > 0 {
			T = min(T, mw)
		}
		p, perr := t.seq.Plan(0, t.seq.Len(), T)
		if perr != nil {
			t.seq = nil // out of step with the engine: stop predicting
			return
		}
		t.seq.Commit(p)
	}
	if t.seq.Len() > t.Session.Len() {
		t.seq = nil
	}
}

// Rewind refuses, without asking the engine, a rewind the shadow sequence
// knows would need overwritten cells: an engine that follows ExecuTorch's
// SequenceCache (length - window) would accept some of those and attend
// to stale rows.
func (t *trackedSession) Rewind(n int) error {
	if t.seq != nil && n != t.seq.Len() && !t.seq.CanRewind(n) && n <= t.Session.Len() {
		return fmt.Errorf("%w: a sliding-window cache has overwritten cells that length %d needs", engine.ErrRewindRefused, n)
	}
	err := t.Session.Rewind(n)
	if err == nil && t.seq != nil && t.seq.Rewind(n) != nil {
		t.seq = nil
	}
	return err
}

func (t *trackedSession) Clear() error {
	err := t.Session.Clear()
	if err == nil && t.seq != nil {
		t.seq.Clear()
	}
	return err
}

// CanRewind asks the session when it can say, else the shadow sequence.
func (t *trackedSession) CanRewind(n int) bool {
	if n == t.Session.Len() {
		return true
	}
	if rc, ok := t.Session.(rewindChecker); ok {
		return rc.CanRewind(n)
	}
	return t.seq != nil && t.seq.CanRewind(n)
}

// BeginGeneration passes the generation's scope on to a session that holds
// something for it (engine.GenerationScoper); a no-op for others.
func (t *trackedSession) BeginGeneration() func() {
	if g, ok := t.Session.(engine.GenerationScoper); ok {
		return g.BeginGeneration()
	}
	return func() {}
}
