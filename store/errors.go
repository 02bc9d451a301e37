package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"modernc.org/sqlite"
)

var goos = runtime.GOOS

// The store's typed errors; test with errors.Is. Every error the store
// returns that falls in one of these classes wraps the class, and its
// message says what to do.
var (
	// ErrNotFound: the model, conversation, message or run does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the change contradicts what is stored (a parent in
	// another conversation, a conversation imported twice, a duplicate).
	ErrConflict = errors.New("conflict")
	// ErrBusy: another process held the database for longer than the busy
	// timeout. Retrying later is safe; nothing was written.
	ErrBusy = errors.New("database busy")
	// ErrCorrupt: the file is not an SQLite database or is damaged. The
	// store never writes to such a file.
	ErrCorrupt = errors.New("database corrupt")
	// ErrTooNew: the file was written by a newer etchat.
	ErrTooNew = errors.New("database from a newer etchat")
	// ErrInvalid: the caller passed a malformed record.
	ErrInvalid = errors.New("invalid")
)

// fileError is a fault of the database file as a whole; its message names
// the file and says how to get going again.
type fileError struct {
	path  string
	kind  error
	cause error
	// for ErrTooNew
	have, know int
}

func (e *fileError) Error() string {
	switch e.kind {
	case ErrCorrupt:
		return fmt.Sprintf("database %s is damaged or is not an etchat database (%v); it was not changed. "+
			"Move it aside (for example: mv %q %q) and start etchat again for a new empty database, "+
			"or point --db or %s at another file", e.path, e.cause, e.path, e.path+".broken", EnvVar)
	case ErrTooNew:
		return fmt.Sprintf("database %s was written by a newer etchat (schema version %d; this etchat knows up to %d); "+
			"it was not changed. Upgrade etchat, or point --db or %s at another file", e.path, e.have, e.know, EnvVar)
	case ErrBusy:
		return fmt.Sprintf("database %s is busy: another etchat process is writing to it (%v); nothing was saved by this attempt, try again in a moment",
			e.path, e.cause)
	}
	return fmt.Sprintf("database %s: %v", e.path, e.cause)
}

func (e *fileError) Unwrap() []error { return []error{e.kind, e.cause} }

// OpError is a failed store operation: Op names it ("add message"; "" when
// the fault is the record's, named in Err), Err says why and wraps the
// class (ErrNotFound, ErrConflict, ErrInvalid, …). Its message starts
// "store: ". Faults of the database file as a whole are a *fileError.
type OpError struct {
	Op  string
	Err error
}

func (e *OpError) Error() string { return "store: " + e.detail() }

// detail is the message without the "store: " prefix.
func (e *OpError) detail() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return e.Op + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// errf is an OpError whose message says it all.
func errf(format string, a ...any) error { return &OpError{Err: fmt.Errorf(format, a...)} }

// invalidError: the caller passed a malformed record; reason says how.
type invalidError struct{ reason string }

func (e *invalidError) Error() string        { return ErrInvalid.Error() + ": " + e.reason }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// SQLite primary result codes the store distinguishes.
const (
	sqliteBusy       = 5
	sqliteLocked     = 6
	sqliteReadOnly   = 8
	sqliteFull       = 13
	sqliteCantOpen   = 14
	sqliteCorrupt    = 11
	sqliteConstraint = 19
	sqliteNotADB     = 26
)

// wrap turns a driver error into the store's typed errors, prefixed with the
// operation. Errors already typed pass through with the prefix.
func (db *DB) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var fe *fileError
	var oe *OpError
	if errors.As(err, &fe) || errors.As(err, &oe) {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return &fileError{path: db.path, kind: ErrBusy, cause: err}
		case sqliteCorrupt, sqliteNotADB:
			return corruptError(db.path, err)
		case sqliteConstraint:
			return &OpError{Op: op, Err: fmt.Errorf("%w: %v", ErrConflict, err)}
		case sqliteReadOnly:
			return &OpError{Op: op, Err: fmt.Errorf("database %s is read-only (%v); nothing was saved: check the file's and its folder's permissions, or point --db or %s at another file", db.path, err, EnvVar)}
		case sqliteFull:
			return &OpError{Op: op, Err: fmt.Errorf("the disk holding %s is full (%v); nothing was saved by this step: free some space and try again", db.path, err)}
		case sqliteCantOpen:
			return &OpError{Op: op, Err: fmt.Errorf("cannot open database %s (%v): check that its folder exists and is writable, or point --db or %s at another file", db.path, err, EnvVar)}
		}
	}
	return &OpError{Op: op, Err: err}
}

// Explain turns an error from the store into one sentence for a user: what
// happened and what to do. Errors of other origins are returned as written.
func Explain(err error) string {
	if err == nil {
		return ""
	}
	var fe *fileError
	if errors.As(err, &fe) {
		return fe.Error()
	}
	msg := err.Error()
	if oe, ok := err.(*OpError); ok {
		msg = oe.detail()
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return msg + " (it may have been deleted; list what exists with 'etchat history')"
	case errors.Is(err, ErrConflict):
		return msg + " (nothing was changed)"
	case errors.Is(err, ErrInvalid):
		return msg + " (nothing was changed)"
	case errors.Is(err, context.Canceled):
		return "cancelled; nothing was saved by the cancelled step"
	}
	return msg
}

func notFound(what string, id int64) error { return errf("%s %d: %w", what, id, ErrNotFound) }

func invalid(format string, a ...any) error {
	return &OpError{Err: &invalidError{reason: fmt.Sprintf(format, a...)}}
}
