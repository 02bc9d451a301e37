package serve

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"etchat/inference"
	"etchat/inference/engine"
)

// testHost is a Host for the tests: it lends a CPU engine selection and a
// turn of its own, and can take the program away or replace it.
type testHost struct {
	mu   sync.Mutex
	prog *Program
	turn chan struct{}
	asks int // Turn calls
}

func newTestHost(t *testing.T) *testHost {
	t.Helper()
	h := &testHost{turn: make(chan struct{}, 1)}
	h.replace(t)
	return h
}

// replace gives out a new program (as a host that loaded the file anew).
func (h *testHost) replace(t *testing.T) {
	t.Helper()
	sel, err := inference.SelectEngine("cpu", engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.prog = &Program{Engine: sel, Turn: func(ctx context.Context) (func(), error) {
		h.mu.Lock()
		h.asks++
		h.mu.Unlock()
		select {
		case h.turn <- struct{}{}:
			return func() { <-h.turn }, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

func (h *testHost) Program(string) (*Program, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.prog == nil {
		return nil, errors.New("the test host has closed it")
	}
	return h.prog, nil
}

func (h *testHost) current() *Program {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.prog
}

// TestHostProgram: with a Host the server opens its session on the host's
// engine instance, takes the host's turn around each generation (a
// request waits while the host holds it, then answers the engine's own
// ids), moves to a program the host replaced, and answers 503 with the
// host's reason once the host has none (closing its session).
func TestHostProgram(t *testing.T) {
	h := newTestHost(t)
	s, ts := newServer(t, Options{Host: h})
	_, want := greedy(t, 6, user("Hello host"))

	h.turn <- struct{}{} // the host generates
	answered := make(chan reply, 1)
	go func() { answered <- post(t, ts.URL+"/v1/chat/completions", chatBody(6, false, user("Hello host"))) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		asked := h.asks
		h.mu.Unlock()
		if asked > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case r := <-answered:
		t.Fatalf("answered while the host held the turn: %d %s", r.status, r.raw)
	case <-time.After(50 * time.Millisecond):
	}
	<-h.turn // the host is done
	r := <-answered
	if r.status != 200 || !slices.Equal(ints(path(r.doc, "choices", 0, "token_ids")), want) {
		t.Fatalf("after the host's turn: %d %s, engine %v", r.status, r.raw, want)
	}
	loaded := s.Loaded()
	if len(loaded) != 1 || !loaded[0].Shared || loaded[0].Engine.Engine != h.current().Engine.Engine {
		t.Errorf("the session is not on the host's engine: %+v", loaded)
	}

	h.replace(t)
	if r := post(t, ts.URL+"/v1/chat/completions", chatBody(6, false, user("Hello host"))); r.status != 200 ||
		!slices.Equal(ints(path(r.doc, "choices", 0, "token_ids")), want) {
		t.Fatalf("on the replaced program: %d %s", r.status, r.raw)
	}
	if loaded := s.Loaded(); len(loaded) != 1 || loaded[0].Engine.Engine != h.current().Engine.Engine {
		t.Errorf("the session did not move to the replaced program: %+v", loaded)
	}
	s.Unload(llamaPTE(t)) // on the current program already: kept
	if len(s.Loaded()) != 1 {
		t.Error("Unload closed a session already on the host's current program")
	}

	h.mu.Lock()
	h.prog = nil
	h.mu.Unlock()
	if r := post(t, ts.URL+"/v1/chat/completions", chatBody(6, false, user("Hello host"))); r.status != 503 ||
		path(r.doc, "error", "message") != "the test host has closed it" {
		t.Errorf("with the host's program gone: %d %s", r.status, r.raw)
	}
	if loaded := s.Loaded(); len(loaded) != 0 {
		t.Errorf("the server kept %+v after the host closed the program", loaded)
	}
}
