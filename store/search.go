package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"unicode"
)

// ConversationHit is one conversation a search found: the conversation,
// the path of its model (empty when the model left the library), and,
// when the text of one of its messages matched, a short excerpt around
// the first match.
type ConversationHit struct {
	Conversation
	ModelPath string
	Snippet   string
}

// likeEscape makes q a LIKE pattern that matches q anywhere, its own %, _
// and \ taken literally.
func likeEscape(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(q) + "%"
}

// SearchConversations lists the conversations of the model modelID (all
// models when 0) whose title, or the text of a user or assistant message
// on any branch, contains query; pinned first, then most recently used. An empty
// query lists them all. Matching ignores case for ASCII letters (SQLite's
// LIKE); the system prompt is not searched, it is the same in most
// conversations.
func (db *DB) SearchConversations(ctx context.Context, query string, modelID int64) ([]ConversationHit, error) {
	query = strings.TrimSpace(query)
	pat := likeEscape(query)
	q := "SELECT " + convCols + `, coalesce((SELECT path FROM models WHERE id = c.model_id), ''),
		coalesce((SELECT m.text FROM messages m WHERE m.conversation_id = c.id AND m.role IN ('user', 'assistant')
			AND m.text LIKE ?1 ESCAPE '\' ORDER BY m.id LIMIT 1), '')
		FROM conversations c WHERE (?2 = 0 OR c.model_id = ?2)
		AND (?3 = '' OR c.title LIKE ?1 ESCAPE '\' OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id
			AND m.role IN ('user', 'assistant') AND m.text LIKE ?1 ESCAPE '\'))
		ORDER BY ` + listOrder
	var out []ConversationHit
	err := db.read(ctx, "search conversations", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, pat, modelID, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h ConversationHit
			var text string
			var settings string
			var created, updated int64
			c := &h.Conversation
			if err := rows.Scan(&c.ID, &c.UID, &c.ModelID, &c.ModelSHA256, &c.ModelName, &c.Title, &settings, &c.CurrentLeaf,
				&created, &updated, &c.Messages, &c.Revision, &c.Pinned, &h.ModelPath, &text); err != nil {
				return err
			}
			c.Settings = []byte(settings)
			c.Created, c.Updated = fromMS(created), fromMS(updated)
			if query != "" && text != "" {
				h.Snippet = Snippet(text, query, 32)
			}
			out = append(out, h)
		}
		return rows.Err()
	})
	return out, err
}

// Snippet is the part of text around the first case-insensitive match of
// query: up to around runes of context either side, on one line, with "…"
// where it was cut. It is "" when query does not occur.
func Snippet(text, query string, around int) string {
	t, q := []rune(text), []rune(query)
	fold := func(rs []rune) []rune {
		out := make([]rune, len(rs))
		for i, r := range rs {
			out[i] = unicode.ToLower(r)
		}
		return out
	}
	ft, fq := fold(t), fold(q)
	at := -1
	for i := 0; len(fq) > 0 && i+len(fq) <= len(ft); i++ {
		if slices.Equal(ft[i:i+len(fq)], fq) {
			at = i
			break
		}
	}
	if at < 0 {
		return ""
	}
	from, to := max(0, at-around), min(len(t), at+len(q)+around)
	s := strings.Join(strings.Fields(string(t[from:to])), " ")
	if from > 0 {
		s = "…" + s
	}
	if to < len(t) {
		s += "…"
	}
	return s
}

// DeleteBranch removes message index of the conversation's current path
// with everything below it, in one transaction, and continues from the
// alternative before it (else the one after), down that branch's latest
// messages; it returns the new current path. A message without
// alternatives is refused: deleting it would leave nothing to show in its
// place (Undo and Reset do that).
func (db *DB) DeleteBranch(ctx context.Context, convID int64, index int) ([]Message, error) {
	out, _, err := db.DeleteBranchAt(ctx, convID, nil, index)
	return out, err
}

// DeleteBranchAt is DeleteBranch refused with a *StaleError when seen is
// set and another writer has moved the revision since; it returns the
// revision after the delete too.
func (db *DB) DeleteBranchAt(ctx context.Context, convID int64, seen *Revision, index int) ([]Message, Revision, error) {
	var out []Message
	var rev Revision
	err := db.write(ctx, "delete branch", func(tx *sql.Tx) error {
		if err := checkSeen(ctx, tx, convID, seen); err != nil {
			return err
		}
		doomed, leaf, err := db.branchAfterDelete(ctx, tx, convID, index)
		if err != nil {
			return err
		}
		// The leaf moves first: current_leaf_id would be set to NULL by the
		// cascade otherwise.
		if err := tx.QueryRowContext(ctx, "UPDATE conversations SET current_leaf_id = ?, updated_ms = ?, revision = revision + 1 WHERE id = ? RETURNING revision",
			leaf, db.nowMS(), convID).Scan(&rev.N); err != nil {
			return err
		}
		rev.Leaf = leaf
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE id = ?", doomed); err != nil {
			return err
		}
		out, err = db.pathTo(ctx, tx, leaf)
		return err
	})
	return out, rev, err
}

// PathAfterDeleteBranch is the current path DeleteBranch(convID, index)
// would leave, changing nothing: a caller can check it can show that
// before anything is deleted.
func (db *DB) PathAfterDeleteBranch(ctx context.Context, convID int64, index int) ([]Message, error) {
	var out []Message
	err := db.read(ctx, "delete branch", func(tx *sql.Tx) error {
		_, leaf, err := db.branchAfterDelete(ctx, tx, convID, index)
		if err != nil {
			return err
		}
		out, err = db.pathTo(ctx, tx, leaf)
		return err
	})
	return out, err
}

// branchAfterDelete is the message DeleteBranch removes (message index of
// the current path) and the leaf the conversation continues from then.
func (db *DB) branchAfterDelete(ctx context.Context, tx *sql.Tx, convID int64, index int) (doomed, leaf int64, err error) {
	path, err := db.currentPathTx(ctx, tx, convID)
	if err != nil {
		return 0, 0, err
	}
	if index < 0 || index >= len(path) {
		return 0, 0, invalid("message %d is not on the conversation's path (it has %d)", index, len(path))
	}
	sib, err := db.siblings(ctx, tx, path[index])
	if err != nil {
		return 0, 0, err
	}
	if len(sib) < 2 {
		return 0, 0, invalid("message %d has no other branch to continue with", index)
	}
	k := slices.IndexFunc(sib, func(x Message) bool { return x.ID == path[index].ID })
	next := sib[max(0, k-1)]
	if k == 0 {
		next = sib[1]
	}
	leaf, err = latestLeaf(ctx, tx, next.ID)
	return path[index].ID, leaf, err
}

// latestLeaf follows the latest reply at each level below message id down
// to a leaf.
func latestLeaf(ctx context.Context, tx *sql.Tx, id int64) (int64, error) {
	for {
		var kid int64
		err := tx.QueryRowContext(ctx, "SELECT id FROM messages WHERE parent_id = ? ORDER BY id DESC LIMIT 1", id).Scan(&kid)
		if errors.Is(err, sql.ErrNoRows) {
			return id, nil
		}
		if err != nil {
			return 0, err
		}
		id = kid
	}
}
