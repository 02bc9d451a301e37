// Package store keeps etchat's models, conversations and runs in one SQLite
// file (modernc.org/sqlite, no cgo).
//
// Durability is the point of the package: users must never lose a
// conversation or a benchmark result, and a reopened chat continues exactly
// where it stopped. Every write is one transaction (begin, deferred
// rollback, commit); a streamed reply is saved with AddMessage when it starts
// and UpdateMessage as tokens arrive, so a crash loses at most the part of
// the reply that had not yet been saved, never an earlier message.
//
// The file runs in WAL mode (set once its schema is known to be ours) with
// foreign keys on, a busy timeout, BEGIN IMMEDIATE for every write transaction (_txlock=immediate: without it
// a read-then-write transaction on one connection deadlocks against another
// writer and fails with "database is locked" regardless of the busy
// timeout), and synchronous=FULL: each commit is fsynced, so a committed turn
// survives power loss and OS crashes as well as a killed process. etchat
// writes at human speed (a turn, a few streaming updates a second) and a
// committed message costs about a millisecond (BenchmarkAppendMessage), so
// FULL is the right trade; a streaming reply should be saved every few
// hundred milliseconds rather than every token; bulk
// writes (import, a run with its samples) go in one transaction. Close
// checkpoints the WAL into the main file.
//
// The schema lives in embedded migrations (migrations/NNNN_name.sql), each
// applied in its own transaction and recorded in schema_migrations. A file
// written by a newer etchat (a migration this build does not know) is
// refused with ErrTooNew, never migrated down; a file that is not an SQLite
// database is refused with ErrCorrupt and left untouched.
//
// The record types (Model, Conversation, Message, Run, Sample) are the
// store's own; the package knows nothing of engines or tokenizers.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// EnvVar names the environment variable that overrides the default database
// location.
const EnvVar = "ETCHAT_DB"

// DefaultPath returns where the database lives when no --db flag is given:
// $ETCHAT_DB if set, else os.UserConfigDir()/etchat/etchat.db. getenv is
// os.Getenv in production; tests pass their own. The caller lets a --db flag
// beat this.
func DefaultPath(getenv func(string) string) (string, error) {
	if getenv != nil {
		if p := getenv(EnvVar); p != "" {
			return p, nil
		}
	}
	dir, err := userConfigDir(getenv)
	if err != nil {
		return "", fmt.Errorf("no place for the database: %w; set %s or pass --db", err, EnvVar)
	}
	return filepath.Join(dir, "etchat", "etchat.db"), nil
}

// ResolvePath picks the database file: the --db flag's value if set, else
// DefaultPath(getenv).
func ResolvePath(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	return DefaultPath(getenv)
}

// userConfigDir is os.UserConfigDir, but reading the environment through
// getenv so that the answer is a pure function of it.
func userConfigDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		return os.UserConfigDir()
	}
	switch goos {
	case "windows":
		if d := getenv("AppData"); d != "" {
			return d, nil
		}
		return "", errors.New("%AppData% is not defined")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, "Library", "Application Support"), nil
		}
		return "", errors.New("$HOME is not defined")
	case "plan9":
		if h := getenv("home"); h != "" {
			return filepath.Join(h, "lib"), nil
		}
		return "", errors.New("$home is not defined")
	default:
		if d := getenv("XDG_CONFIG_HOME"); d != "" {
			if !filepath.IsAbs(d) {
				return "", errors.New("path in $XDG_CONFIG_HOME is relative")
			}
			return d, nil
		}
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, ".config"), nil
		}
		return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME are defined")
	}
}

// Options tune Open. The zero value is what etchat uses.
type Options struct {
	// Now is the clock for created/updated times; nil means time.Now.
	Now func() time.Time
	// BusyTimeout is how long a write waits for another writer before
	// failing with ErrBusy; zero means 5 s.
	BusyTimeout time.Duration

	// driver is the database/sql driver's name; "" is modernc's "sqlite".
	// Tests wrap it to fail statements on purpose.
	driver string
}

// DB is an open etchat database. It is safe for concurrent use.
type DB struct {
	sql  *sql.DB
	path string
	now  func() time.Time
}

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A file that is not an SQLite database, or is damaged,
// gives ErrCorrupt and is not modified; one from a newer etchat gives
// ErrTooNew.
func Open(ctx context.Context, path string, opt Options) (*DB, error) {
	if path == "" {
		return nil, errf("empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errf("database path %q: %w", path, err)
	}
	if err := prepareFile(abs); err != nil {
		return nil, err
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if goos == "windows" {
		u.Path = "/" + u.Path
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	drv := opt.driver
	if drv == "" {
		drv = "sqlite"
	}
	sdb, err := sql.Open(drv, u.String()+"?"+q.Encode())
	if err != nil {
		return nil, errf("open %s: %w", abs, err)
	}
	db := &DB{sql: sdb, path: abs, now: opt.Now}
	if db.now == nil {
		db.now = time.Now
	}
	if err := db.check(ctx); err != nil {
		sdb.Close()
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// prepareFile refuses a path that holds something other than an SQLite
// database, and creates a missing file (and its folder) private to the user.
func prepareFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return errf("cannot create the folder for the database: %w", err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return errf("cannot create the database: %w", err)
		}
		if f != nil {
			return f.Close()
		}
		return nil
	case err != nil:
		return errf("database %s: %w", path, err)
	case fi.IsDir():
		return errf("database path %s is a folder; pass --db with a file name: %w", path, ErrCorrupt)
	case fi.Size() == 0:
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return errf("database %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != sqliteMagic {
		return corruptError(path, errors.New("not an SQLite database"))
	}
	return nil
}

// corruptError names the file and says how to move it aside.
func corruptError(path string, cause error) error {
	return &fileError{path: path, kind: ErrCorrupt, cause: cause}
}

// check verifies the file reads as a database: the first query on a
// damaged or foreign file fails here, before anything is written.
func (db *DB) check(ctx context.Context) error {
	var n int
	err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n)
	if err != nil {
		return db.wrap("open", err)
	}
	return nil
}

// File is the database file's absolute path.
func (db *DB) File() string { return db.path }

// Close checkpoints the write-ahead log into the database file and closes
// it. A checkpoint that cannot finish (another process is reading) is not an
// error: the log stays and the next open replays it.
func (db *DB) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = db.sql.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return db.sql.Close()
}

// IntegrityCheck runs SQLite's integrity_check and returns ErrCorrupt with
// its findings unless it reports "ok".
func (db *DB) IntegrityCheck(ctx context.Context) error {
	rows, err := db.sql.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return db.wrap("integrity check", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return db.wrap("integrity check", err)
		}
		msgs = append(msgs, s)
	}
	if err := rows.Err(); err != nil {
		return db.wrap("integrity check", err)
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return corruptError(db.path, fmt.Errorf("integrity check: %v", msgs))
}

// write runs fn in one write transaction: begin (immediate), deferred
// rollback, commit. Errors come back as the store's typed errors.
func (db *DB) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return db.wrap(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return db.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return db.wrap(op, err)
	}
	return nil
}

// read runs fn in one read-only (deferred) transaction, so that its queries
// see one snapshot and never block writers.
func (db *DB) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return db.wrap(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return db.wrap(op, err)
	}
	return db.wrap(op, tx.Commit())
}

// ms is a time as stored: milliseconds since the epoch.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS is the inverse of ms; 0 is the zero time.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// nowMS is the injected clock's reading, in milliseconds.
func (db *DB) nowMS() int64 { return db.now().UnixMilli() }
