package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// other's (the last token sampled may not have reached the cache). A reply
// whose text or tokens b's extend is one too (the app's Continue of a
// reply cut at max tokens appends to it; its text, cut inside a
// character, may not be a prefix, its tokens are unless a turn end
// followed): b holds all of a, so no branch is worth keeping.
func continues(a, b Message) bool {
	if a.Role == "assistant" && b.Role == a.Role && a.Text != "" && len(b.Text) > len(a.Text) && strings.HasPrefix(b.Text, a.Text) {
		return true
	}
	if n := len(a.TokenIDs); a.Role == "assistant" && b.Role == a.Role && n > 0 && len(b.TokenIDs) > n && slices.Equal(b.TokenIDs[:n], a.TokenIDs) {
		return true
	}
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
// off there: an edit or a regeneration adds a sibling, undo moves the
// current leaf back, and the earlier branch stays in the tree. A reply
// saved while streaming (Partial) is updated in place as it grows and when
// it completes.
//
// title, when not empty, becomes the conversation's title while it has none
// or DefaultTitle. A transcript that changes nothing writes nothing. It is
// SaveTranscriptAs with no revision to check and nothing discarded.
func (db *DB) SaveTranscript(ctx context.Context, convID int64, msgs []Message, title string) error {
	_, err := db.SaveTranscriptAs(ctx, convID, SaveOptions{}, msgs, title)
	return err
}

// Revision is where a writer last saw a conversation: its revision and its
// current leaf (0: before the first message).
type Revision struct{ N, Leaf int64 }

// SaveOptions say how SaveTranscriptAs meets what others wrote.
type SaveOptions struct {
	// Seen, when set, is the revision the writer's transcript continues:
	// msgs are compared with the path to Seen.Leaf, not with whatever is
	// current now. When another writer has moved the revision since, a
	// save that would insert a message or move the current leaf is refused
	// with a *StaleError (nothing is written): two windows sending at once
	// never both extend the conversation, and neither duplicates its turn.
	// A save that only updates the writer's own messages in place (a
	// streaming reply growing, a finished reply's stats) is applied, and
	// the writer stays at the revision it saw.
	Seen *Revision
	// Discard deletes what the transcript took back (undo, reset): the
	// messages of the compared path after the prefix it keeps, from the
	// end up to the first one another branch still hangs from, instead of
	// keeping them as a branch.
	Discard bool
}

// SaveTranscriptAs is SaveTranscript with opts; it returns the
// conversation's revision and current leaf after the write, which the
// writer carries to its next one.
func (db *DB) SaveTranscriptAs(ctx context.Context, convID int64, opts SaveOptions, msgs []Message, title string) (Revision, error) {
	stats := make([]any, len(msgs))
	for i, m := range msgs {
		var err error
		if stats[i], err = checkMessage(m); err != nil {
			return Revision{}, err
		}
	}
	var out Revision
	err := db.write(ctx, "save transcript", func(tx *sql.Tx) error {
		c, err := convTx(ctx, tx, convID)
		if err != nil {
			return err
		}
		base, stale, err := db.saveBase(ctx, tx, c, opts.Seen)
		if err != nil {
			return err
		}
		path, err := db.pathTo(ctx, tx, base)
		if err != nil {
			return err
		}
		w := &transcriptWrite{ctx: ctx, tx: tx, convID: convID, now: db.nowMS(), stats: stats}
		common, err := w.keepAndGrow(path, msgs)
		if err != nil {
			return err
		}
		if stale && (common < len(msgs) || w.parent != base) {
			return &StaleError{Conversation: convID, Seen: opts.Seen.N, Stored: c.Revision}
		}
		if opts.Discard {
			if err := w.discard(path, common); err != nil {
				return err
			}
		}
		if err := w.add(msgs, common); err != nil {
			return err
		}
		if stale {
			// Only the writer's own messages changed, in place: the leaf
			// stays where the other writer put it, and the writer keeps the
			// revision it saw (it has not seen the other's change).
			out = *opts.Seen
			return w.touch()
		}
		out, err = w.finish(c, title)
		return err
	})
	return out, err
}

// saveBase is the leaf a save compares its transcript with: the one the
// writer saw (stale when the revision moved since), else the current one.
func (db *DB) saveBase(ctx context.Context, tx *sql.Tx, c Conversation, seen *Revision) (leaf int64, stale bool, err error) {
	if seen == nil {
		return c.CurrentLeaf, false, nil
	}
	if seen.N == c.Revision {
		return c.CurrentLeaf, false, nil
	}
	if seen.Leaf != 0 {
		var conv int64
		err := tx.QueryRowContext(ctx, "SELECT conversation_id FROM messages WHERE id = ?", seen.Leaf).Scan(&conv)
		if errors.Is(err, sql.ErrNoRows) || err == nil && conv != c.ID {
			// The writer's branch is gone: nothing of it can be updated.
			return 0, false, &StaleError{Conversation: c.ID, Seen: seen.N, Stored: c.Revision}
		}
		if err != nil {
			return 0, false, err
		}
	}
	return seen.Leaf, true, nil
}

// StaleError: a write carried a conversation revision that another writer
// (another etchat window, the CLI) has moved past — it sent, undid or
// switched branch meanwhile. Nothing was written; re-read the conversation
// and do it again. It is an ErrConflict.
type StaleError struct{ Conversation, Seen, Stored int64 }

func (e *StaleError) Error() string {
	return fmt.Sprintf("store: conversation %d was changed elsewhere meanwhile (revision %d, this change was made at %d); nothing was written: read it again",
		e.Conversation, e.Stored, e.Seen)
}

func (e *StaleError) Is(target error) bool { return target == ErrConflict }

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
	// reshaped: a message was inserted, deleted or changed (the revision
	// moves).
	reshaped bool
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

// keepAndGrow keeps the stored prefix of path that matches msgs and grows
// a reply saved while it streamed in place; it returns how many messages
// of msgs are stored now.
func (w *transcriptWrite) keepAndGrow(path, msgs []Message) (int, error) {
	common, err := w.keep(path, msgs)
	if err != nil {
		return 0, err
	}
	if common == len(path)-1 && common < len(msgs) && continues(path[common], msgs[common]) {
		if err := w.grow(path[common], msgs[common], common); err != nil {
			return 0, err
		}
		common++
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
		w.changed, w.reshaped = true, true
		w.parent, w.pos = id, sm.PosEnd
	}
	return nil
}

func (w *transcriptWrite) update(sm Message, stats any) error {
	w.changed, w.reshaped = true, true
	_, err := w.tx.ExecContext(w.ctx, `UPDATE messages SET text = ?, token_ids = ?, pos_start = ?, pos_end = ?, stats = ?, partial = ?, updated_ms = ?
		WHERE id = ?`, sm.Text, encodeTokens(sm.TokenIDs), sm.PosStart, sm.PosEnd, stats, sm.Partial, w.now, sm.ID)
	return err
}

// finish makes the last message written the current leaf and names the
// conversation title while it has no name of its own, when any of that, or
// a message, changed. A message inserted or deleted, or the leaf moved,
// bumps the revision. It returns the revision and leaf after the write.
func (w *transcriptWrite) finish(c Conversation, title string) (Revision, error) {
	if w.parent != c.CurrentLeaf {
		w.changed, w.reshaped = true, true
	}
	if title != "" && (c.Title == "" || c.Title == DefaultTitle) && c.Title != title {
		c.Title, w.changed = title, true
	}
	out := Revision{N: c.Revision, Leaf: w.parent}
	if !w.changed {
		return out, nil
	}
	var leaf any
	if w.parent != 0 {
		leaf = w.parent
	}
	if w.reshaped {
		out.N++
	}
	_, err := w.tx.ExecContext(w.ctx, "UPDATE conversations SET current_leaf_id = ?, title = ?, updated_ms = ?, revision = ? WHERE id = ?", leaf, c.Title, w.now, out.N, w.convID)
	return out, err
}

// touch records that messages changed in place.
func (w *transcriptWrite) touch() error {
	if !w.changed {
		return nil
	}
	_, err := w.tx.ExecContext(w.ctx, "UPDATE conversations SET updated_ms = ?, revision = revision + 1 WHERE id = ?", w.now, w.convID)
	return err
}

// discard deletes the messages of path from index from on that the
// transcript no longer holds: from the end up, each while no other branch
// hangs from it (deleting the topmost one takes those below with it).
func (w *transcriptWrite) discard(path []Message, from int) error {
	top := len(path)
	for i := len(path) - 1; i >= from; i-- {
		var kids int
		if err := w.tx.QueryRowContext(w.ctx, "SELECT count(*) FROM messages WHERE parent_id = ?", path[i].ID).Scan(&kids); err != nil {
			return err
		}
		mine := 0 // the path's next message, deleted with it
		if i+1 < len(path) {
			mine = 1
		}
		if kids != mine || i+1 < len(path) && top != i+1 {
			break
		}
		top = i
	}
	if top == len(path) {
		return nil
	}
	w.changed, w.reshaped = true, true
	_, err := w.tx.ExecContext(w.ctx, "DELETE FROM messages WHERE id = ?", path[top].ID)
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
	out, _, err := db.SwitchBranchAt(ctx, convID, nil, index, step)
	return out, err
}

// SwitchBranchAt is SwitchBranch refused with a *StaleError when seen is
// set and another writer has moved the conversation's revision since (the
// index would name a message of a path the writer never saw); it returns
// the revision after the switch too.
func (db *DB) SwitchBranchAt(ctx context.Context, convID int64, seen *Revision, index, step int) ([]Message, Revision, error) {
	var out []Message
	var rev Revision
	err := db.write(ctx, "switch branch", func(tx *sql.Tx) error {
		if err := checkSeen(ctx, tx, convID, seen); err != nil {
			return err
		}
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
		out, rev, err = db.switchUnderTx(ctx, tx, convID, sib[k].ID)
		return err
	})
	return out, rev, err
}

// switchUnderTx makes the latest path through message id (down to its
// newest leaf) the conversation's current one, bumping its revision, and
// returns that path and the revision after it: what every branch switch
// (to a neighbour or to any message of the tree) ends with.
func (db *DB) switchUnderTx(ctx context.Context, tx *sql.Tx, convID, id int64) ([]Message, Revision, error) {
	leaf, err := latestLeaf(ctx, tx, id)
	if err != nil {
		return nil, Revision{}, err
	}
	rev := Revision{Leaf: leaf}
	if err := tx.QueryRowContext(ctx, "UPDATE conversations SET current_leaf_id = ?, updated_ms = ?, revision = revision + 1 WHERE id = ? RETURNING revision",
		leaf, db.nowMS(), convID).Scan(&rev.N); err != nil {
		return nil, Revision{}, err
	}
	out, err := db.pathTo(ctx, tx, leaf)
	return out, rev, err
}

// checkSeen refuses, with a *StaleError, a write made at revision seen
// when the conversation has moved past it; nil seen checks nothing.
func checkSeen(ctx context.Context, tx *sql.Tx, convID int64, seen *Revision) error {
	if seen == nil {
		return nil
	}
	c, err := convTx(ctx, tx, convID)
	if err != nil {
		return err
	}
	if c.Revision != seen.N {
		return &StaleError{Conversation: convID, Seen: seen.N, Stored: c.Revision}
	}
	return nil
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
