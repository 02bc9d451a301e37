package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
)

// The conversation tree as a chat edits it: a transcript saved over the
// stored path, where each message stands among its alternatives, and moving
// to another branch. Each is one transaction, so a crash leaves the old tree
// or the new one, never a mix.

// DefaultTitle is a conversation's title until SaveTranscript names it
// after its first user message.
const DefaultTitle = "New conversation"

// Branch is a message's place among its alternatives (its siblings: edits,
// regenerations): the K-th of N, 1-based; N is 1 when it has none.
type Branch struct{ K, N int }

// sameMessage: b is the stored a, perhaps holding other tokens now (a reply
// re-rendered as text by a later turn); branches differ in text.
func sameMessage(a, b Message) bool {
	return a.Role == b.Role && a.Text == b.Text && a.Partial == b.Partial
}

// continues reports whether b is a later version of the reply a, which was
// saved while it streamed: the same role, and one's tokens start the
// other's (the last token sampled may not have reached the cache).
func continues(a, b Message) bool {
	if !a.Partial || a.Role != b.Role {
		return false
	}
	n := min(len(a.TokenIDs), len(b.TokenIDs))
	return slices.Equal(a.TokenIDs[:n], b.TokenIDs[:n])
}

// SaveTranscript makes msgs the conversation's current path, in one
// transaction. Of each message it reads Role, Text, TokenIDs, Stats and
// Partial; its cache positions follow from the tokens before it, and its
// id and parent from the tree. The longest stored prefix that matches msgs
// is kept (its messages take the tokens they hold now) and the rest branches
// off there: undo moves the current leaf back, an edit or a regeneration adds
// a sibling, and the earlier branch stays in the tree. A reply saved while
// streaming (Partial) is updated in place as it grows and when it completes.
//
// title, when not empty, becomes the conversation's title while it has none
// or DefaultTitle. A transcript that changes nothing writes nothing.
func (db *DB) SaveTranscript(ctx context.Context, convID int64, msgs []Message, title string) error {
	stats := make([]any, len(msgs))
	for i, m := range msgs {
		var err error
		if stats[i], err = checkMessage(m); err != nil {
			return err
		}
	}
	return db.write(ctx, "save transcript", func(tx *sql.Tx) error {
		c, err := convTx(ctx, tx, convID)
		if err != nil {
			return err
		}
		path, err := db.pathTo(ctx, tx, c.CurrentLeaf)
		if err != nil {
			return err
		}
		w := &transcriptWrite{ctx: ctx, tx: tx, convID: convID, now: db.nowMS(), stats: stats}
		common, err := w.keep(path, msgs)
		if err != nil {
			return err
		}
		if common == len(path)-1 && common < len(msgs) && continues(path[common], msgs[common]) {
			if err := w.grow(path[common], msgs[common], common); err != nil {
				return err
			}
			common++
		}
		if err := w.add(msgs, common); err != nil {
			return err
		}
		return w.finish(c, title)
	})
}

// transcriptWrite is one SaveTranscript inside its transaction: where the
// next message goes and whether anything changed (a transcript that changes
// nothing writes nothing).
type transcriptWrite struct {
	ctx    context.Context
	tx     *sql.Tx
	convID int64
	now    int64
	stats  []any // each message's stats as checkMessage encoded them
	// parent is the id the next message hangs from (0: a root), pos its
	// first cache position.
	parent  int64
	pos     int
	changed bool
}

// keep finds the longest stored prefix of path that matches msgs and gives
// its messages the tokens they hold now; it returns the prefix's length.
func (w *transcriptWrite) keep(path, msgs []Message) (int, error) {
	common := 0
	for common < len(path) && common < len(msgs) && sameMessage(path[common], msgs[common]) {
		common++
	}
	for i := range common {
		sm, m := path[i], msgs[i]
		if !slices.Equal(sm.TokenIDs, m.TokenIDs) || sm.PosStart != w.pos {
			sm.TokenIDs, sm.PosStart, sm.PosEnd, sm.Stats = m.TokenIDs, w.pos, w.pos+len(m.TokenIDs), m.Stats
			if err := w.update(sm, w.stats[i]); err != nil {
				return 0, err
			}
		}
		w.pos += len(m.TokenIDs)
	}
	if common > 0 {
		w.parent = path[common-1].ID
	}
	return common, nil
}

// grow updates the stored reply sm, saved while it streamed, in place to m
// (message i of the transcript).
func (w *transcriptWrite) grow(sm, m Message, i int) error {
	sm.Text, sm.TokenIDs, sm.PosStart, sm.PosEnd, sm.Partial, sm.Stats = m.Text, m.TokenIDs, w.pos, w.pos+len(m.TokenIDs), m.Partial, m.Stats
	if err := w.update(sm, w.stats[i]); err != nil {
		return err
	}
	w.parent, w.pos = sm.ID, sm.PosEnd
	return nil
}

// add inserts msgs[from:] as a new branch, each under the one before.
func (w *transcriptWrite) add(msgs []Message, from int) error {
	for i := from; i < len(msgs); i++ {
		m := msgs[i]
		sm := Message{ConversationID: w.convID, ParentID: w.parent, Role: m.Role, Text: m.Text,
			TokenIDs: m.TokenIDs, PosStart: w.pos, PosEnd: w.pos + len(m.TokenIDs), Partial: m.Partial}
		id, err := insertMessage(w.ctx, w.tx, sm, w.stats[i], w.now)
		if err != nil {
			return err
		}
		w.changed = true
		w.parent, w.pos = id, sm.PosEnd
	}
	return nil
}

func (w *transcriptWrite) update(sm Message, stats any) error {
	w.changed = true
	_, err := w.tx.ExecContext(w.ctx, `UPDATE messages SET text = ?, token_ids = ?, pos_start = ?, pos_end = ?, stats = ?, partial = ?, updated_ms = ?
		WHERE id = ?`, sm.Text, encodeTokens(sm.TokenIDs), sm.PosStart, sm.PosEnd, stats, sm.Partial, w.now, sm.ID)
	return err
}

// finish makes the last message written the current leaf and names the
// conversation title while it has no name of its own, when any of that, or
// a message, changed.
func (w *transcriptWrite) finish(c Conversation, title string) error {
	if w.parent != c.CurrentLeaf {
		w.changed = true
	}
	if title != "" && (c.Title == "" || c.Title == DefaultTitle) && c.Title != title {
		c.Title, w.changed = title, true
	}
	if !w.changed {
		return nil
	}
	var leaf any
	if w.parent != 0 {
		leaf = w.parent
	}
	_, err := w.tx.ExecContext(w.ctx, "UPDATE conversations SET current_leaf_id = ?, title = ?, updated_ms = ? WHERE id = ?", leaf, c.Title, w.now, w.convID)
	return err
}

// convTx is conversation convID inside tx.
func convTx(ctx context.Context, tx *sql.Tx, convID int64) (Conversation, error) {
	c, err := scanConv(tx.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations c WHERE c.id = ?", convID))
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, notFound("conversation", convID)
	}
	return c, err
}

// siblings are the alternatives of a stored message: its parent's
// children, or the conversation's roots, oldest first.
func (db *DB) siblings(ctx context.Context, tx *sql.Tx, m Message) ([]Message, error) {
	if m.ParentID != 0 {
		return db.queryMsgs(ctx, tx, "list replies", "SELECT "+msgCols+" FROM messages WHERE parent_id = ? ORDER BY id", m.ParentID)
	}
	return db.queryMsgs(ctx, tx, "list messages", "SELECT "+msgCols+" FROM messages WHERE conversation_id = ? AND parent_id IS NULL ORDER BY id", m.ConversationID)
}

// Branches says, for each message of the conversation's current path,
// where it stands among its alternatives.
func (db *DB) Branches(ctx context.Context, convID int64) ([]Branch, error) {
	var out []Branch
	err := db.read(ctx, "list branches", func(tx *sql.Tx) error {
		path, err := db.currentPathTx(ctx, tx, convID)
		if err != nil {
			return err
		}
		out = make([]Branch, len(path))
		for i, m := range path {
			sib, err := db.siblings(ctx, tx, m)
			if err != nil {
				return err
			}
			out[i] = Branch{K: slices.IndexFunc(sib, func(x Message) bool { return x.ID == m.ID }) + 1, N: len(sib)}
		}
		return nil
	})
	return out, err
}

// SwitchBranch moves message index of the current path to its sibling step
// places away (−1: the previous one), continues down that branch's latest
// messages to a leaf, makes it the current leaf and returns the new current
// path, in one transaction.
func (db *DB) SwitchBranch(ctx context.Context, convID int64, index, step int) ([]Message, error) {
	var out []Message
	err := db.write(ctx, "switch branch", func(tx *sql.Tx) error {
		path, err := db.currentPathTx(ctx, tx, convID)
		if err != nil {
			return err
		}
		if index < 0 || index >= len(path) {
			return invalid("message %d is not on the conversation's path (it has %d)", index, len(path))
		}
		sib, err := db.siblings(ctx, tx, path[index])
		if err != nil {
			return err
		}
		k := slices.IndexFunc(sib, func(x Message) bool { return x.ID == path[index].ID }) + step
		if k < 0 || k >= len(sib) {
			return invalid("there is no other branch that way (%d of %d)", k+1-step, len(sib))
		}
		leaf := sib[k].ID
		// The latest reply at each level, down to a leaf.
		for {
			var kid int64
			err := tx.QueryRowContext(ctx, "SELECT id FROM messages WHERE parent_id = ? ORDER BY id DESC LIMIT 1", leaf).Scan(&kid)
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return err
			}
			leaf = kid
		}
		if _, err := tx.ExecContext(ctx, "UPDATE conversations SET current_leaf_id = ?, updated_ms = ? WHERE id = ?", leaf, db.nowMS(), convID); err != nil {
			return err
		}
		out, err = db.pathTo(ctx, tx, leaf)
		return err
	})
	return out, err
}

// currentPathTx is the conversation's current path inside tx.
func (db *DB) currentPathTx(ctx context.Context, tx *sql.Tx, convID int64) ([]Message, error) {
	var leaf sql.NullInt64
	err := tx.QueryRowContext(ctx, "SELECT current_leaf_id FROM conversations WHERE id = ?", convID).Scan(&leaf)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("conversation", convID)
	}
	if err != nil {
		return nil, err
	}
	return db.pathTo(ctx, tx, leaf.Int64)
}
