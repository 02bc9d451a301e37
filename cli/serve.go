package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/serve"
	"etchat/store"
)

const serveSynopsis = "[--models A.pte,B.pte | FILE.pte…] [--host 127.0.0.1] [--port 8917] [--api-key KEY] [flags]"

// serveFlags are etchat serve's flags.
type serveFlags struct {
	host, models, apiKey, eng, chat, dbPath string
	port, maxModels, queue, slots           int
	maxBody                                 int64
	noSave, logRequests, noReuse, storeConv bool
	grace                                   time.Duration
	allowHosts, allowOrigins                listFlag
	cache                                   cacheFlags
	numerics                                numericsFlag
	paths                                   []string // --models and the arguments
}

// parse reads and checks the flags; the API key falls back to
// $ETCHAT_API_KEY.
func (f *serveFlags) parse(env *Env, args []string) error {
	fs := newFlags(env, "serve", serveSynopsis)
	fs.StringVar(&f.host, "host", "127.0.0.1", "address to listen on; anything but loopback needs --api-key")
	fs.IntVar(&f.port, "port", serve.DefaultPort, "port to listen on (0 = any free port)")
	fs.StringVar(&f.models, "models", "", "comma-separated .pte files to serve (default: the library's models in the database)")
	fs.StringVar(&f.apiKey, "api-key", "", "require \"Authorization: Bearer KEY\" (default $ETCHAT_API_KEY)")
	fs.StringVar(&f.eng, "engine", engine.Auto, "engine: "+engine.Help())
	fs.StringVar(&f.chat, "chat", "auto", "chat template: auto, llama3, gemma, gemma4, chatml, or 0 for raw text")
	fs.IntVar(&f.maxModels, "max-models", 1, "models loaded at once; an idle one is closed to load another")
	fs.IntVar(&f.queue, "queue", serve.DefaultQueue, "requests that may wait per model behind the one running; more get 429")
	fs.Int64Var(&f.maxBody, "max-body", serve.DefaultMaxBody, "largest request body in bytes")
	fs.StringVar(&f.dbPath, "db", "", "database for the library and the stored runs (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	fs.BoolVar(&f.noSave, "no-save", false, "do not store each request as a run")
	fs.BoolVar(&f.logRequests, "log-requests", false, "store each request's body and reply text with its run")
	fs.BoolVar(&f.storeConv, "store-conversations", false, "save chat requests as conversations the app can reopen (a request continuing one appends to it)")
	fs.IntVar(&f.slots, "slots", 0, "conversations cached per loaded model, each its own session (0 = 4 on the CPU engine, 1 on the native engine, whose sessions each load the weights)")
	fs.BoolVar(&f.noReuse, "no-prefix-reuse", false, "clear the cache before every request instead of keeping the shared prefix")
	fs.Var(&f.allowHosts, "allow-host", "also accept requests whose Host is this name (a pattern such as *.lan; repeat or separate by commas); on loopback only localhost names are accepted")
	fs.Var(&f.allowOrigins, "allow-origin", "also allow browser pages of this origin (e.g. https://app.example.com, https://*.example.com, null; repeat or separate by commas); default only http://localhost, 127.0.0.1 and [::1] pages, any port")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may finish before they are canceled")
	f.cache.register(fs)
	f.numerics.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f.paths = fs.Args()
	for _, p := range strings.Split(f.models, ",") {
		if p = strings.TrimSpace(p); p != "" {
			f.paths = append(f.paths, p)
		}
	}
	if f.apiKey == "" && env.Getenv != nil {
		f.apiKey = env.Getenv("ETCHAT_API_KEY")
	}
	return f.check()
}

// check refuses values out of range, naming the flag.
func (f *serveFlags) check() error {
	switch {
	case f.port < 0 || f.port > 65535:
		return Usagef("invalid value %d for flag -port: want 0 to 65535", f.port)
	case f.maxModels < 1:
		return Usagef("invalid value %d for flag -max-models: want 1 or more", f.maxModels)
	case f.queue < 0:
		return Usagef("invalid value %d for flag -queue: want 0 or more", f.queue)
	case f.maxBody < 1024:
		return Usagef("invalid value %d for flag -max-body: want at least 1024 bytes", f.maxBody)
	case f.slots < 0:
		return Usagef("invalid value %d for flag -slots: want 0 or more", f.slots)
	case f.storeConv && f.noSave:
		return Usagef("-store-conversations stores into the database; it cannot go with -no-save")
	case f.grace < 0:
		return Usagef("invalid value %v for flag -grace: want 0 or more", f.grace)
	}
	if _, err := engine.Canonical(f.eng); err != nil {
		return Usagef("invalid value %q for flag -engine: %v", f.eng, err)
	}
	if _, err := f.numerics.mode(f.eng); err != nil {
		return err
	}
	return f.cache.check()
}

// options are the server's options for these flags, storing runs in db
// (nil: none).
func (f *serveFlags) options(env *Env, db *store.DB) serve.Options {
	queueLimit := f.queue
	if queueLimit == 0 {
		queueLimit = -1 // the server reads 0 as its default; the flag's 0 means none may wait
	}
	o := serve.Options{Models: f.paths, APIKey: f.apiKey, ListenHost: f.host, AllowHosts: f.allowHosts, AllowOrigins: f.allowOrigins, MaxBodyBytes: f.maxBody, QueueLimit: queueLimit, MaxModels: f.maxModels,
		LogRequests: f.logRequests, StoreConversations: f.storeConv, Slots: f.slots, NoPrefixReuse: f.noReuse, Log: env.Stderr, Version: Version,
		Load: inference.LoadOptions{Engine: f.eng, Getenv: env.Getenv, Policy: f.cache.policy(), Chat: f.chat}}
	o.Load.Numerics, _ = f.numerics.mode(f.eng) // checked by check
	if !f.noSave {
		o.Store = db
	}
	return o
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// libraryModels are the paths of the library's models, for a serve
// without --models.
func libraryModels(ctx context.Context, db *store.DB) ([]string, error) {
	lib, err := db.ListModels(ctx)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, m := range lib {
		paths = append(paths, m.Path)
	}
	if len(paths) == 0 {
		return nil, errors.New("no models to serve: give --models FILE.pte, or add models to the library in the app")
	}
	return paths, nil
}

// runServe is etchat serve: the OpenAI-compatible server over the given
// models (or the library's), until SIGINT or SIGTERM.
func runServe(ctx context.Context, env *Env, args []string) error {
	var f serveFlags
	if err := f.parse(env, args); err != nil {
		return err
	}
	warning, err := serve.CheckHost(f.host, f.apiKey)
	if err != nil {
		return Usagef("%v", err)
	}
	if warning != "" {
		fmt.Fprintln(env.Stderr, warning)
	}
	var db *store.DB
	if !f.noSave || len(f.paths) == 0 {
		if db, err = openStore(ctx, env, f.dbPath); err != nil {
			return err
		}
		defer db.Close()
	}
	if len(f.paths) == 0 {
		if f.paths, err = libraryModels(ctx, db); err != nil {
			return err
		}
	}
	srv, err := serve.New(f.options(env, db))
	if err != nil {
		var te *inference.TemplateError
		if errors.As(err, &te) {
			return Usagef("invalid value %q for flag -chat: %v", f.chat, err)
		}
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(strings.Trim(f.host, "[]"), strconv.Itoa(f.port)))
	if err != nil {
		return fmt.Errorf("listening on %s port %d: %w", f.host, f.port, err)
	}
	// The signals are caught from before the URL is printed: a client (or
	// a test) that saw it may signal at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	fmt.Fprintf(env.Stdout, "etchat serve: %s (models: %s)\n", clientURL(l.Addr()), strings.Join(srv.Models(), ", "))
	fmt.Fprintln(env.Stdout, "one generation at a time per model, in order; press Ctrl-C to stop")
	return serveUntilSignal(ctx, env, srv, l, f.grace, sigs)
}

// clientURL is the base URL a client on this machine uses for a listener:
// an unspecified address (0.0.0.0, ::) is not one to connect to, so it
// names loopback and says the server listens on every interface.
func clientURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/v1"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Sprintf("http://127.0.0.1:%s/v1, or this machine's address on port %s from others (listening on %s)", port, port, addr)
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1"
}

// serveUntilSignal serves on l until a signal on sigs (SIGINT, SIGTERM)
// or ctx's end, then shuts down, letting requests in flight finish for
// grace; a second signal cancels them at once (each still stores its run).
func serveUntilSignal(ctx context.Context, env *Env, srv *serve.Server, l net.Listener, grace time.Duration, sigs <-chan os.Signal) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	case <-sigs:
	}
	fmt.Fprintf(env.Stderr, "stopping: letting requests in flight finish for up to %v (press Ctrl-C again to stop now)\n", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			fmt.Fprintln(env.Stderr, "stopping now: canceling the requests in flight")
			cancel()
		case <-sctx.Done():
		}
	}()
	err := srv.Shutdown(sctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	fmt.Fprintf(env.Stdout, "stopped after %d requests\n", srv.Served())
	return err
}
