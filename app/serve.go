package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"etchat/inference"
	"etchat/serve"
	"etchat/store"
)

// The Serve switch's server shares the chat's loaded program: it opens
// its own session on the engine the chat's session runs on (the CPU
// engine loads a file's program once for all its sessions), so each has
// its own cache and the server's prefix reuse never touches the chat's.
// Generation on one program is serialized: the chat's session and the
// server's take the program's turn, so a request waits behind a streaming
// chat reply, and a chat send waits (saying so) behind a request.

// programTurn is a loaded program's one generation slot.
type programTurn chan struct{}

// take waits for the slot, calling waiting first when it is not free at
// once; a ctx that ends while waiting returns its error.
func (t programTurn) take(ctx context.Context, waiting func()) (release func(), err error) {
	select {
	case t <- struct{}{}:
		return func() { <-t }, nil
	default:
	}
	if waiting != nil {
		waiting()
	}
	select {
	case t <- struct{}{}:
		return func() { <-t }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// chatPrograms are the programs the chat's sessions run on, by model
// path (the latest session of each), lent to the Serve switch's server
// (serve.Host). The opener registers each session it opens.
type chatPrograms struct {
	mu   sync.Mutex
	open map[string]*sharedSession
	// changed, when set, is told (on its own goroutine) that path's
	// program was closed or replaced, so the server closes its session on
	// the old one.
	changed func(path string)
	// Tests watch the server's side of a turn: waiting when it finds the
	// chat generating, held once it has the turn, before it generates
	// (a test pauses it there).
	hooks struct{ waiting, held func() }
}

// share wraps cs, opened on the model at path, so that its generations
// take the program's turn, and registers it as path's program. Without a
// registry cs is returned as it is.
func (p *chatPrograms) share(path string, cs *convSession) Session {
	if p == nil {
		return cs
	}
	s := &sharedSession{convSession: cs, path: path, turn: make(programTurn, 1), programs: p}
	s.prog = &serve.Program{Engine: cs.engine, Turn: s.serverTurn}
	p.mu.Lock()
	if p.open == nil {
		p.open = map[string]*sharedSession{}
	}
	replaced := p.open[path] != nil
	p.open[path] = s
	p.mu.Unlock()
	if replaced {
		p.tell(path)
	}
	return s
}

// closed unregisters s when it is still path's program.
func (p *chatPrograms) closed(s *sharedSession) {
	p.mu.Lock()
	current := p.open[s.path] == s
	if current {
		delete(p.open, s.path)
	}
	p.mu.Unlock()
	if current {
		p.tell(s.path)
	}
}

func (p *chatPrograms) tell(path string) {
	p.mu.Lock()
	f := p.changed
	p.mu.Unlock()
	if f != nil {
		go f(path)
	}
}

// Program is serve.Host's: the program the chat has open on path.
func (p *chatPrograms) Program(path string) (*serve.Program, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.open[path]; s != nil {
		return s.prog, nil
	}
	return nil, fmt.Errorf("%s is not open in the app's chat: the app's server runs on the chat's loaded model; open a conversation with it in the Chat tab", ModelName(path))
}

// watch makes f the one told of changes (nil: none).
func (p *chatPrograms) watch(f func(path string)) {
	p.mu.Lock()
	p.changed = f
	p.mu.Unlock()
}

// programsOf is the registry of the window's opener (nil for another
// Opener).
func programsOf(o Opener) *chatPrograms {
	if eo, ok := o.(*engineOpener); ok {
		return eo.programs
	}
	return nil
}

// sharedSession is a chat session whose program the server may share:
// the conversation's calls that run the program take its turn first.
type sharedSession struct {
	*convSession
	path     string
	turn     programTurn
	prog     *serve.Program
	programs *chatPrograms
}

// serverTurn is the server's side of the turn.
func (s *sharedSession) serverTurn(ctx context.Context) (func(), error) {
	s.programs.mu.Lock()
	hooks := s.programs.hooks
	s.programs.mu.Unlock()
	release, err := s.turn.take(ctx, hooks.waiting)
	if err != nil {
		return nil, err
	}
	if hooks.held != nil {
		hooks.held()
	}
	return release, nil
}

// chatTurn is the chat's side: while the server generates, the chat's
// activity says the chat waits for it.
func (s *sharedSession) chatTurn(ctx context.Context) (func(), error) {
	return s.turn.take(ctx, func() {
		if s.progress != nil {
			s.progress(Progress{Stage: "waiting"})
		}
	})
}

func (s *sharedSession) Send(ctx context.Context, text string, f func(string)) (*Reply, error) {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.convSession.Send(ctx, text, f)
}

func (s *sharedSession) Regenerate(ctx context.Context, f func(string)) (*Reply, error) {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.convSession.Regenerate(ctx, f)
}

func (s *sharedSession) EditLast(ctx context.Context, text string, f func(string)) (*Reply, error) {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.convSession.EditLast(ctx, text, f)
}

// UndoTurn, UndoTokens and Switch may prefill again.

func (s *sharedSession) UndoTurn(ctx context.Context) error {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.convSession.UndoTurn(ctx)
}

func (s *sharedSession) UndoTokens(ctx context.Context, n int) error {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.convSession.UndoTokens(ctx, n)
}

func (s *sharedSession) Switch(ctx context.Context, msgs []Message) error {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.convSession.Switch(ctx, msgs)
}

// Close unregisters the program (the server closes its session on it)
// and closes the chat's session.
func (s *sharedSession) Close() error {
	s.programs.closed(s)
	return s.convSession.Close()
}

// ServeSwitch is the app's Serve switch: the same server as etchat serve,
// in the app's process, on loopback, over the program the chat has open
// (see chatPrograms). Safe for concurrent use.
type ServeSwitch struct {
	mu sync.Mutex
	// storeConvs: the next Start saves chat requests as conversations
	// (serve.Options.StoreConversations), which the app lists with its own.
	storeConvs bool
	srv        *serve.Server
	url        string
	done       chan error
	programs   *chatPrograms
	cfg        ServeConfig // what it was started with (its key is never shown or logged)
	path       string      // the model it serves
}

// Start serves the model at path, which the chat must have open
// (programs: the window opener's registry), with the conversation's cache
// settings on addr ("127.0.0.1:8917"; port 0 picks one), storing each
// request as a run in db (may be nil), without an API key. It returns the
// API's base URL.
func (s *ServeSwitch) Start(programs *chatPrograms, path string, st Settings, db *store.DB, addr string) (string, error) {
	return s.start(programs, path, st, db, addr, ServeConfig{})
}

// StartWith is Start on the port, key and reach of cfg (the Serve
// dialog's, checked first).
func (s *ServeSwitch) StartWith(programs *chatPrograms, path string, st Settings, db *store.DB, cfg ServeConfig) (string, error) {
	cfg.APIKey = strings.TrimSpace(cfg.APIKey) // the server compares the request's key trimmed
	if err := cfg.Check(); err != nil {
		return "", err
	}
	return s.start(programs, path, st, db, cfg.addr(), cfg)
}

func (s *ServeSwitch) start(programs *chatPrograms, path string, st Settings, db *store.DB, addr string, cfg ServeConfig) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return s.url, errors.New("the server is already running")
	}
	if programs == nil {
		return "", errors.New("the app's server needs the window's engine opener")
	}
	if _, err := programs.Program(path); err != nil {
		return "", err
	}
	host, _, _ := net.SplitHostPort(addr)
	srv, err := serve.New(serve.Options{Models: []string{path}, Store: db, Version: Version, Host: programs,
		APIKey: cfg.APIKey, ListenHost: host,
		StoreConversations: s.storeConvs && db != nil, Load: inference.LoadOptions{Engine: st.Engine, Policy: st.Policy()}})
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listening on %s: %w", addr, err) // in use: advice says choose another port
	}
	programs.watch(srv.Unload)
	s.srv, s.url, s.done, s.programs = srv, "http://"+l.Addr().String()+"/v1", make(chan error, 1), programs
	s.cfg, s.path = cfg, path
	go func(done chan error) { done <- srv.Serve(l) }(s.done)
	return s.url, nil
}

// SetStoreConversations chooses whether the next Start saves chat
// requests as conversations.
func (s *ServeSwitch) SetStoreConversations(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeConvs = on
}

// Stop lets requests in flight finish for a few seconds, cancels the rest
// (their runs are stored) and closes the server's session.
func (s *ServeSwitch) Stop() error {
	s.mu.Lock()
	srv, done, programs := s.srv, s.done, s.programs
	s.srv, s.url, s.programs = nil, "", nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	programs.watch(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	<-done
	return err
}

// Status is whether it runs, its URL, the models it serves and the
// requests answered.
func (s *ServeSwitch) Status() (running bool, url string, models []string, served int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return false, "", nil, 0
	}
	return true, s.url, s.srv.Models(), s.srv.Served()
}
