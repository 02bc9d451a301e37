package store

import (
	"context"
	"database/sql"
	"errors"
)

// The conversation tree as a whole (the app's branch tree view): switching
// to any message of it, not only to a neighbour of the current path.

// SwitchToAt makes the branch through message msgID the conversation's
// current path (continuing down its latest messages to a leaf), in one
// transaction, and returns the path and the revision after it. A message
// of another conversation is refused (ErrNotFound); a stale seen is
// refused with a *StaleError, as SwitchBranchAt.
func (db *DB) SwitchToAt(ctx context.Context, convID int64, seen *Revision, msgID int64) ([]Message, Revision, error) {
	var out []Message
	var rev Revision
	err := db.write(ctx, "switch branch", func(tx *sql.Tx) error {
		if err := checkSeen(ctx, tx, convID, seen); err != nil {
			return err
		}
		var conv int64
		if err := tx.QueryRowContext(ctx, "SELECT conversation_id FROM messages WHERE id = ?", msgID).Scan(&conv); errors.Is(err, sql.ErrNoRows) || err == nil && conv != convID {
			return errf("message %d is not in conversation %d: %w", msgID, convID, ErrNotFound)
		} else if err != nil {
			return err
		}
		var err error
		out, rev, err = db.switchUnderTx(ctx, tx, convID, msgID)
		return err
	})
	return out, rev, err
}
