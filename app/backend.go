package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"etchat/app/advice"
	"etchat/store"
)

// Options are the window's command-line options.
type Options struct {
	DB string // --db PATH
	// Tour, when set, is a folder: the window walks through its views and
	// waits for a screenshot of each (scripts/screenshots).
	Tour string
	// Models are .pte files or folders to add to the library at start.
	Models []string
}

// ParseArgs reads the window's command line: --db PATH and, for
// scripts/screenshots, --tour DIR and --add PATH (repeatable).
func ParseArgs(args []string) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("etchat", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.DB, "db", "", "database file")
	fs.StringVar(&o.Tour, "tour", "", "walk through the views for screenshots, synchronising through files in this folder")
	fs.Func("add", "add a .pte file or folder to the library", func(s string) error {
		o.Models = append(o.Models, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%v (the window takes --db PATH; run 'etchat help' for the commands)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (the window takes --db PATH; run 'etchat help' for the commands)", fs.Arg(0))
	}
	return o, nil
}

// DBPath picks the database: --db, then the preference, then the store's
// default ($ETCHAT_DB or the user config folder).
func DBPath(flagPath string, prefs *Prefs, getenv func(string) string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if prefs != nil && getenv(store.EnvVar) == "" {
		if p := prefs.DBPath(); p != "" {
			return p, nil
		}
	}
	return store.DefaultPath(getenv)
}

// explainStoreErr turns a failure to open the database into what to do.
func explainStoreErr(path string, err error) error {
	next := advice.For(err, "Preferences")
	if next == "" {
		next = "choose another file in Preferences or pass --db, then restart"
	}
	if errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrTooNew) { // the store's message names the file and the way out
		return fmt.Errorf("%v — the app runs but saves nothing until then", err)
	}
	if errors.Is(err, store.ErrBusy) {
		return fmt.Errorf("the database %s is locked by another etchat (%v): %s; until then the app runs but saves nothing", path, err, next)
	}
	return fmt.Errorf("the database %s could not be opened (%v): %s — until then the app runs but saves nothing", path, err, next)
}

// OpenBackend opens the database and wires the real packages. A database
// that cannot be opened is not fatal: Backend.StoreErr says why, and the
// window runs without saving. The returned func closes what was opened.
func OpenBackend(ctx context.Context, o Options, prefs *Prefs, getenv func(string) string) (Backend, func()) {
	b := Backend{Inspector: NewInspector(), Opener: NewOpener(prefs)}
	path, err := DBPath(o.DB, prefs, getenv)
	if err != nil {
		b.StoreErr = fmt.Errorf("no database: %v", err)
		return b, func() {}
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		b.StoreErr = explainStoreErr(path, err)
		return b, func() {}
	}
	sa := NewStoreAdapter(db)
	b.Library, b.Chats, b.DBPath, b.DB = sa, sa, db.File(), db
	return b, func() { _ = db.Close() }
}
