package serve

import (
	"context"
	"fmt"

	"etchat/inference"
)

// Host lends the server programs another front end has loaded (the app's
// chat): the server opens its own session on the host's engine, so the
// program is loaded once and each side keeps its own cache, and it takes
// the program's turn around each generation, so generations on one
// program run one at a time whoever asks. A server with a Host loads no
// program of its own.
type Host interface {
	// Program is the program path is loaded as now; the error says why
	// there is none (the server answers 503 with it).
	Program(path string) (*Program, error)
}

// Program is a loaded program the host shares. The host gives out a new
// *Program whenever it loads the file anew; the server then reopens its
// session on it.
type Program struct {
	// Engine holds the program: the engine instance the host's session
	// runs on (the CPU engine shares one loaded program among its
	// sessions of a file).
	Engine inference.Selection
	// Turn blocks until the program's generation slot is free (or ctx is
	// done, returning its error) and takes it; release gives it back.
	Turn func(ctx context.Context) (release func(), err error)
}

// take is the program's turn for a generation; a nil Program (the server
// loaded the model itself) has no one to share with.
func (p *Program) take(ctx context.Context) (func(), error) {
	if p == nil || p.Turn == nil {
		return func() {}, nil
	}
	release, err := p.Turn(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for the model's other user: %w", err)
	}
	return release, nil
}

// Loaded is a model the server has a session open on.
type Loaded struct {
	ID     string
	Engine inference.Selection
	// Shared: the session is on a Host's program.
	Shared bool
}

// Loaded lists the models with an open session, in the order served.
func (s *Server) Loaded() []Loaded {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	var out []Loaded
	for _, e := range s.models {
		if e.loaded != nil {
			out = append(out, Loaded{ID: e.id, Engine: e.loaded.Engine, Shared: e.prog != nil})
		}
	}
	return out
}

// Unload closes the server's session on the model at path once no request
// is using it, unless it is on the host's current program already (a
// request came first and moved it). A Host calls it when its program of
// path is closed or replaced, so the server does not keep the old program
// alive. It blocks until then; the next request reopens on the host's
// program.
func (s *Server) Unload(path string) {
	for _, e := range s.models {
		if e.path != path {
			continue
		}
		select {
		case e.turn <- struct{}{}:
		case <-s.ctx.Done():
			return // Shutdown closes it
		}
		s.loadMu.Lock()
		if !s.current(e) {
			e.unload()
		}
		s.loadMu.Unlock()
		<-e.turn
	}
}

// current reports whether e's session is on its host's program now; the
// caller holds loadMu.
func (s *Server) current(e *entry) bool {
	if e.loaded == nil || s.opts.Host == nil {
		return false
	}
	p, err := s.opts.Host.Program(e.path)
	return err == nil && p == e.prog
}
