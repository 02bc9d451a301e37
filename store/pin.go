package store

import (
	"context"
	"database/sql"
)

// listOrder is the order every conversation list uses: the pinned ones
// first, then by last use. Last use is updated_ms, which every message
// written, every move of the current leaf, a rename and a settings change
// bump; pinning does not (it is not a use), so a pinned conversation goes
// back to its place by use when unpinned.
const listOrder = "c.pinned DESC, c.updated_ms DESC, c.id DESC"

// SetPinned pins (or unpins) conversation id. It changes neither the
// conversation's last use nor its revision: the tree is untouched.
func (db *DB) SetPinned(ctx context.Context, id int64, pinned bool) error {
	return db.write(ctx, "pin conversation", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "UPDATE conversations SET pinned = ? WHERE id = ?", pinned, id))(notFound("conversation", id))
	})
}
