package app

import (
	"context"
	"strings"
	"sync"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/engines"
	"etchat/internal/fixtures"
)

// stopEngine is the CPU engine whose caches refuse every rewind but to 0
// (as a sliding-window cache that has evicted does), so taking a turn back
// means prefilling the history again; onForward sees every step.
type stopEngine struct {
	engine.Engine
	mu        sync.Mutex
	onForward func(n int)
}

func (e *stopEngine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := e.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return &stopSession{Session: s, e: e}, nil
}

type stopSession struct {
	engine.Session
	e *stopEngine
}

func (s *stopSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	s.e.mu.Lock()
	f := s.e.onForward
	s.e.mu.Unlock()
	if f != nil {
		f(len(ids))
	}
	return s.Session.Forward(ctx, ids, pos)
}

func (s *stopSession) Rewind(n int) error {
	if n == 0 {
		return s.Session.Rewind(0)
	}
	return engine.ErrRewindRefused
}

// Stop (and so closing the window, which stops and waits) waits for at most
// the prefill chunk in flight: a message stopped while its prompt is read
// (two chunks here) runs no further step, not even to rebuild a cache that
// cannot rewind; the next message prefills what is missing.
func TestStopWaitsForOneChunkAtMost(t *testing.T) {
	eng := &stopEngine{Engine: cpu.New(cpu.Options{})}
	engine.Register(engine.CPU, func(engine.Config) (engine.Engine, error) { return eng, nil })
	t.Cleanup(engines.Register)
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	c, errs := newTestChat(t, b, inspect(t, path))
	if err := c.ApplySettings(greedy(4)); err != nil { // a short first reply
		t.Fatal(err)
	}
	run(t, c, errs, c.Send("Tell me a story"))
	if st := c.State(); len(st.Messages) < 2 || st.Position == 0 {
		t.Fatalf("first turn: %+v", st)
	}

	var mu sync.Mutex
	stopped, after := false, 0
	eng.mu.Lock()
	eng.onForward = func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			after++
			return
		}
		stopped = true
		c.Stop()
	}
	eng.mu.Unlock()
	if err := c.Send(strings.Repeat("and then? ", 16)); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !stopped {
		t.Fatalf("the second message never prefilled: %q, %v", c.State().Err, *errs)
	}
	if after != 0 {
		t.Errorf("%d forward steps ran after Stop, want none (the chunk in flight only)", after)
	}
	st := c.State()
	if st.Busy || len(st.Messages) != 2 {
		t.Errorf("after Stop: busy %v, %d messages, want the first turn only", st.Busy, len(st.Messages))
	}
	// The chat goes on: the history is prefilled again with the next message.
	eng.mu.Lock()
	eng.onForward = nil
	eng.mu.Unlock()
	run(t, c, errs, c.Send("Go on"))
	if st := c.State(); len(st.Messages) != 4 {
		t.Errorf("after the next message: %d messages, want 4", len(st.Messages))
	}
}
