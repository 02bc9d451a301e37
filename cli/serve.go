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

// runServe is etchat serve: the OpenAI-compatible server over the given
// models (or the library's), until SIGINT or SIGTERM.
func runServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "serve", serveSynopsis)
	host := fs.String("host", "127.0.0.1", "address to listen on; anything but loopback needs --api-key")
	port := fs.Int("port", serve.DefaultPort, "port to listen on (0 = any free port)")
	models := fs.String("models", "", "comma-separated .pte files to serve (default: the library's models in the database)")
	apiKey := fs.String("api-key", "", "require \"Authorization: Bearer KEY\" (default $ETCHAT_API_KEY)")
	eng := fs.String("engine", engine.Auto, "engine: "+engine.Help())
	chat := fs.String("chat", "auto", "chat template: auto, llama3, gemma, gemma4, chatml, or 0 for raw text")
	maxModels := fs.Int("max-models", 1, "models loaded at once; an idle one is closed to load another")
	queue := fs.Int("queue", serve.DefaultQueue, "requests that may wait per model behind the one running; more get 429")
	maxBody := fs.Int64("max-body", serve.DefaultMaxBody, "largest request body in bytes")
	dbPath := fs.String("db", "", "database for the library and the stored runs (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	noSave := fs.Bool("no-save", false, "do not store each request as a run")
	logRequests := fs.Bool("log-requests", false, "store each request's body with its run")
	noReuse := fs.Bool("no-prefix-reuse", false, "clear the cache before every request instead of keeping the shared prefix")
	grace := fs.Duration("grace", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may finish before they are canceled")
	var cache cacheFlags
	cache.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	paths := fs.Args()
	if *models != "" {
		for _, p := range strings.Split(*models, ",") {
			if p = strings.TrimSpace(p); p != "" {
				paths = append(paths, p)
			}
		}
	}
	switch {
	case *port < 0 || *port > 65535:
		return Usagef("invalid value %d for flag -port: want 0 to 65535", *port)
	case *maxModels < 1:
		return Usagef("invalid value %d for flag -max-models: want 1 or more", *maxModels)
	case *queue < 0:
		return Usagef("invalid value %d for flag -queue: want 0 or more", *queue)
	case *maxBody < 1024:
		return Usagef("invalid value %d for flag -max-body: want at least 1024 bytes", *maxBody)
	case *grace < 0:
		return Usagef("invalid value %v for flag -grace: want 0 or more", *grace)
	}
	if _, err := engine.Canonical(*eng); err != nil {
		return Usagef("invalid value %q for flag -engine: %v", *eng, err)
	}
	if err := cache.check(); err != nil {
		return err
	}
	if *apiKey == "" && env.Getenv != nil {
		*apiKey = env.Getenv("ETCHAT_API_KEY")
	}
	warning, err := serve.CheckHost(*host, *apiKey)
	if err != nil {
		return Usagef("%v", err)
	}
	if warning != "" {
		fmt.Fprintln(env.Stderr, warning)
	}

	var db *store.DB
	if !*noSave || len(paths) == 0 {
		var err error
		if db, err = openStore(ctx, env, *dbPath); err != nil {
			return err
		}
		defer db.Close()
	}
	if len(paths) == 0 {
		lib, err := db.ListModels(ctx)
		if err != nil {
			return err
		}
		for _, m := range lib {
			paths = append(paths, m.Path)
		}
		if len(paths) == 0 {
			return errors.New("no models to serve: give --models FILE.pte, or add models to the library in the app")
		}
	}
	queueLimit := *queue
	if queueLimit == 0 {
		queueLimit = -1 // the server reads 0 as its default; the flag's 0 means none may wait
	}
	o := serve.Options{Models: paths, APIKey: *apiKey, MaxBodyBytes: *maxBody, QueueLimit: queueLimit, MaxModels: *maxModels,
		LogRequests: *logRequests, NoPrefixReuse: *noReuse, Log: env.Stderr, Version: Version,
		Load: inference.LoadOptions{Engine: *eng, Getenv: env.Getenv, Policy: cache.policy(), Chat: *chat}}
	if !*noSave {
		o.Store = db
	}
	srv, err := serve.New(o)
	if err != nil {
		var te *inference.TemplateError
		if errors.As(err, &te) {
			return Usagef("invalid value %q for flag -chat: %v", *chat, err)
		}
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(strings.Trim(*host, "[]"), strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listening on %s port %d: %w", *host, *port, err)
	}
	fmt.Fprintf(env.Stdout, "etchat serve: http://%s/v1 (models: %s)\n", l.Addr(), strings.Join(srv.Models(), ", "))
	fmt.Fprintln(env.Stdout, "one generation at a time per model, in order; press Ctrl-C to stop")

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(env.Stderr, "stopping: letting requests in flight finish for up to %v\n", *grace)
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	fmt.Fprintf(env.Stdout, "stopped after %d requests\n", srv.Served())
	return err
}
