package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
)

// Backup and restore of the whole database while it is open (issue 40).
//
// A backup is VACUUM INTO: one read transaction, so it holds exactly the
// commits before it started even while another connection or process
// writes (a streaming reply), never half a turn; it does not block those
// writers (WAL). It is written beside its destination and renamed over
// it, so a failed backup leaves no half-written file under the name asked
// for and an older backup there is replaced only by a whole one.
//
// A restore goes the other way through SQLite's online backup API into
// this open connection: the file keeps its name, its write-ahead log and
// every other connection, which read the restored data at their next
// transaction. What other windows show of the old data is theirs to
// re-read; the app therefore refuses a restore while another window has
// the database open (app/conversations_backup.go). A backup from an
// older etchat is migrated after it is restored; one from a newer etchat,
// or a file that is not an intact etchat database, is refused before
// anything is written.

// BackupError is a backup file that cannot be restored: not an SQLite
// database, not etchat's, damaged (Err wraps ErrCorrupt), or written by a
// newer etchat (ErrTooNew). The database was not changed.
type BackupError struct {
	Path   string
	Reason string
	Err    error // ErrCorrupt or ErrTooNew
}

func (e *BackupError) Error() string {
	return fmt.Sprintf("cannot restore %s: %s; the database was not changed", e.Path, e.Reason)
}

func (e *BackupError) Unwrap() error { return e.Err }

// Backup writes a consistent copy of the whole database to path, replacing
// a file there only once the copy is complete.
func (db *DB) Backup(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return errf("backup to %q: %w", path, err)
	}
	if abs == db.path {
		return errf("backup to %s: that is the database itself; choose another file: %w", abs, ErrInvalid)
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), filepath.Base(abs)+".partial-*")
	if err != nil {
		return errf("backup to %s: %w", abs, err)
	}
	name := tmp.Name()
	tmp.Close()
	os.Remove(name) // VACUUM INTO writes only a file that does not exist
	defer os.Remove(name)
	if _, err := db.sql.ExecContext(ctx, "VACUUM INTO ?", name); err != nil {
		return db.wrap("backup", err)
	}
	if err := os.Rename(name, abs); err != nil {
		return errf("backup to %s: %w", abs, err)
	}
	return nil
}

// Restore replaces the whole database with the backup at path (one that
// Backup wrote, or any copy of an etchat database), then migrates it to
// this etchat's schema. Every conversation, model and run not in the
// backup is gone afterwards.
func (db *DB) Restore(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return errf("restore %q: %w", path, err)
	}
	if abs == db.path {
		return errf("restore %s: that is the database itself: %w", abs, ErrInvalid)
	}
	if err := checkBackup(ctx, abs); err != nil {
		return err
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return db.wrap("restore", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		r, ok := dc.(interface {
			NewRestore(string) (*sqlite.Backup, error)
		})
		if !ok {
			return errors.New("this SQLite driver cannot restore")
		}
		b, err := r.NewRestore(fileURI(abs, "ro"))
		if err != nil {
			return err
		}
		if _, err := b.Step(-1); err != nil {
			b.Finish()
			return err
		}
		return b.Finish()
	})
	if err != nil {
		return db.wrap("restore", err)
	}
	conn.Close()
	return db.migrate(ctx)
}

// fileURI is the SQLite URI of the file at abs, opened in mode ("ro").
func fileURI(abs, mode string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if goos == "windows" {
		u.Path = "/" + u.Path
	}
	return u.String() + "?mode=" + mode
}

// checkBackup opens the file at abs read-only and refuses it unless it is
// an intact etchat database this etchat can read.
func checkBackup(ctx context.Context, abs string) error {
	bad := func(kind error, format string, a ...any) error {
		return &BackupError{Path: abs, Reason: fmt.Sprintf(format, a...), Err: kind}
	}
	if err := prepareBackupFile(abs); err != nil {
		return bad(ErrCorrupt, "%v", err)
	}
	src, err := sql.Open("sqlite", fileURI(abs, "ro"))
	if err != nil {
		return bad(ErrCorrupt, "%v", err)
	}
	defer src.Close()
	var tables int
	if err := src.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'").Scan(&tables); err != nil {
		return bad(ErrCorrupt, "it is not an SQLite database (%v)", err)
	}
	if tables == 0 {
		return bad(ErrCorrupt, "it is an SQLite database but not etchat's (no schema_migrations table)")
	}
	var v int
	if err := src.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return bad(ErrCorrupt, "its schema version cannot be read (%v)", err)
	}
	if know := SchemaVersion(); v > know {
		return bad(ErrTooNew, "it was written by a newer etchat (schema version %d; this etchat knows up to %d)", v, know)
	}
	var ok string
	if err := src.QueryRowContext(ctx, "PRAGMA integrity_check(1)").Scan(&ok); err != nil || ok != "ok" {
		return bad(ErrCorrupt, "it is damaged (integrity check: %q %v)", ok, err)
	}
	return nil
}

// prepareBackupFile refuses a missing file, a folder or a file without
// SQLite's header, without opening it as a database (which would create
// one).
func prepareBackupFile(abs string) error {
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("it is a folder")
	}
	f, err := os.Open(abs)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if n, _ := f.Read(head); n != len(head) || string(head) != sqliteMagic {
		return errors.New("it is not an SQLite database")
	}
	return nil
}
