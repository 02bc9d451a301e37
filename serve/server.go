// Package serve is etchat's local OpenAI-compatible server: /v1/models,
// /v1/chat/completions (with server-sent events) and /v1/completions over
// the models given, with llama-server's /tokenize, /detokenize and /slots,
// and /metrics. Each loaded model keeps a few sessions (slots), each with
// a cache holding the longest token prefix a request shares with its last
// one (a chat client resends the whole history each turn). Requests for
// one model run one at a time, in order, behind a bounded queue. Web pages
// cannot drive it (guard.go). The CLI (etchat serve) and the app's Serve
// switch both run it; the app's lends it the chat's loaded program
// (Host), whose generations take turns with the chat's.
package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"etchat/inference"
	"etchat/store"
)

// Options configure a server.
type Options struct {
	// Models are the .pte files served; their ids are ModelID(path).
	Models []string
	// Load is how each model is prepared and opened (engine, cache policy,
	// chat template).
	Load inference.LoadOptions
	// APIKey, when set, is required as "Authorization: Bearer KEY".
	APIKey string
	// ListenHost is the address the server is bound to ("" is loopback):
	// on loopback a request's Host must name this machine.
	ListenHost string
	// AllowHosts are more Host names accepted on loopback (path.Match
	// patterns; "*" is any).
	AllowHosts []string
	// AllowOrigins are browser origins allowed besides
	// DefaultAllowOrigins (path.Match patterns, e.g.
	// "https://*.example.com"; "null" and "*" as written).
	AllowOrigins []string
	// MaxBodyBytes limits a request body; 0 is DefaultMaxBody.
	MaxBodyBytes int64
	// QueueLimit is how many requests may wait for a model behind the one
	// it is answering; beyond it a request gets 429. 0 is DefaultQueue; a
	// negative value lets none wait.
	QueueLimit int
	// MaxModels bounds the models loaded at once (an idle one is closed to
	// load another); 0 is 1. With a Host the host bounds them.
	MaxModels int
	// Host, when set, lends the programs the server runs on (the app's
	// chat's); the server then loads none itself.
	Host Host
	// Store, when set, records each request as a run of kind "api".
	Store *store.DB
	// LogRequests stores each request's body and reply text with its run.
	LogRequests bool
	// StoreConversations saves chat requests as conversations in Store
	// (a request extending one the server stored appends to it).
	StoreConversations bool
	// Log receives one line per request (nil: none).
	Log io.Writer
	// Slots is how many sessions, each with its own cache, a loaded model
	// keeps (a request goes to the one sharing its prompt's longest
	// prefix); 0: DefaultSlots on the CPU engine, 1 on others.
	Slots int
	// NoPrefixReuse clears each model's cache before every request (to
	// measure what the reuse saves, or to rule it out).
	NoPrefixReuse bool
	// Version is the app version stored with runs.
	Version string
}

// Defaults.
const (
	DefaultPort    = 8917
	DefaultMaxBody = 8 << 20
	DefaultQueue   = 16
)

// Server serves the models. Create it with New; its Handler can be
// mounted anywhere, and Serve runs it on a listener.
type Server struct {
	opts    Options
	guard   guard
	models  []*entry
	byID    map[string]*entry
	mux     *http.ServeMux
	loadMu  sync.Mutex // loading and evicting models
	ctx     context.Context
	cancel  context.CancelFunc // cancels every generation (forced shutdown)
	flight  sync.WaitGroup     // generation handlers running
	closing atomic.Bool
	metrics *metrics
	convs   conversations
	// tokenizing bounds the prompts tokenized at once (GOMAXPROCS).
	tokenizing chan struct{}
	// stopping is closed when Shutdown begins: queued requests leave with 503.
	stopping chan struct{}
	served   atomic.Int64
	logMu    sync.Mutex
	httpSrv  *http.Server
}

// New prepares every model (files, tokenizer, template, cache config: what
// can be wrong is found now) without loading any engine.
func New(o Options) (*Server, error) {
	if len(o.Models) == 0 {
		return nil, errors.New("no models to serve")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBody
	}
	if o.QueueLimit == 0 {
		o.QueueLimit = DefaultQueue
	}
	if o.MaxModels <= 0 {
		o.MaxModels = 1
	}
	s := &Server{opts: o, guard: newGuard(o), byID: map[string]*entry{}, stopping: make(chan struct{}),
		tokenizing: make(chan struct{}, runtime.GOMAXPROCS(0)), metrics: newMetrics()}
	for _, path := range o.Models {
		e, err := prepare(path, o.Load)
		if err != nil {
			return nil, err
		}
		if prev, dup := s.byID[e.id]; dup {
			return nil, fmt.Errorf("%s and %s would both be served as %q; give one of them another folder name", prev.path, path, e.id)
		}
		s.byID[e.id] = e
		s.models = append(s.models, e)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/models", s.handleModels)
	s.mux.HandleFunc("/v1/models/{id...}", s.handleModel)
	s.mux.HandleFunc("/v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("/v1/completions", s.handleCompletions)
	s.mux.HandleFunc("/metrics", s.handleMetrics)
	s.mux.HandleFunc("/slots", s.handleSlots)
	s.mux.HandleFunc("/tokenize", s.handleTokenize)
	s.mux.HandleFunc("/detokenize", s.handleDetokenize)
	s.mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "unknown_url",
			Message: fmt.Sprintf("no endpoint %s %s; etchat serves /v1/models, /v1/chat/completions, /v1/completions, /tokenize, /detokenize, /slots, /metrics and /health", r.Method, clip(r.URL.Path))})
	})
	return s, nil
}

// Models are the ids served, in the order given.
func (s *Server) Models() []string {
	ids := make([]string, len(s.models))
	for i, e := range s.models {
		ids[i] = e.id
	}
	return ids
}

// Served is the number of completion requests answered (any outcome after
// they were admitted).
func (s *Server) Served() int64 { return s.served.Load() }

// Handler is the server's HTTP handler: the Host and Origin rules (and
// CORS preflights), the API key check, then the routes.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r) {
			return
		}
		if r.URL.Path != "/health" && !s.authorized(w, r) {
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.APIKey == "" {
		return true
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, key, ok := strings.Cut(auth, " ")
	ok = ok && strings.EqualFold(scheme, "Bearer") // RFC 9110: the scheme is case-insensitive
	switch {
	case auth == "":
		writeError(w, unauthorized("missing API key: send it as \"Authorization: Bearer KEY\""))
		return false
	case !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.opts.APIKey)) != 1:
		writeError(w, unauthorized("incorrect API key"))
		return false
	}
	return true
}

// CheckHost refuses a non-loopback bind address without an API key; with
// one it returns a warning to print.
func CheckHost(host, apiKey string) (warning string, err error) {
	if IsLoopback(host) {
		return "", nil
	}
	if apiKey == "" {
		return "", fmt.Errorf("--host %s is reachable from other machines; refusing to serve it without --api-key", host)
	}
	return fmt.Sprintf("warning: serving on %s, reachable from other machines (requests need the API key)", host), nil
}

// IsLoopback reports whether host names only this machine.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Serve answers on l until Shutdown; it returns http.ErrServerClosed then.
func (s *Server) Serve(l net.Listener) error {
	s.loadMu.Lock()
	s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return s.ctx }}
	srv := s.httpSrv
	s.loadMu.Unlock()
	return srv.Serve(l)
}

// Shutdown stops accepting requests, lets the ones in flight finish until
// ctx is done, then cancels them (each stores its run first), and closes
// the models.
func (s *Server) Shutdown(ctx context.Context) error {
	s.loadMu.Lock() // enter counts requests under it, so none is added while we wait
	if !s.closing.Swap(true) {
		close(s.stopping)
	}
	srv := s.httpSrv
	s.loadMu.Unlock()
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() { s.flight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		<-done
	}
	s.cancel()
	if srv != nil && err != nil {
		srv.Close() // streams that outlived the grace period
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	for _, e := range s.models {
		e.unload()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = nil // the in-flight requests were canceled, as asked
	}
	return err
}

// logf writes one log line.
func (s *Server) logf(format string, a ...any) {
	if s.opts.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.opts.Log, format+"\n", a...)
}
