package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversation is one chat. Its messages form a tree; CurrentLeaf is the
// message the chat continues from (0 before the first message).
type Conversation struct {
	ID          int64           `json:"id"`
	UID         string          `json:"uid"`                // stable across export and import
	ModelID     int64           `json:"model_id,omitempty"` // 0 when none, or when the model was removed
	ModelSHA256 string          `json:"model_sha256"`       // copied from the model at creation
	ModelName   string          `json:"model_name"`         // copied from the model at creation
	Title       string          `json:"title"`
	Settings    json.RawMessage `json:"settings"` // cache policy and sampling, as the app writes them
	CurrentLeaf int64           `json:"current_leaf"`
	Created     time.Time       `json:"created"`
	Updated     time.Time       `json:"updated"`
	Messages    int             `json:"messages"` // number of messages in the tree (read only)
	// Revision counts the changes of the tree: every message inserted,
	// deleted or changed (a streaming reply growing) and every move of the
	// current leaf. Writers that carry the revision they saw are refused
	// when another writer moved it (SaveTranscriptAs), so one whose view
	// is stale cannot extend the conversation. It is this database's, so
	// an export leaves it out.
	Revision int64 `json:"-"`
	// Pinned conversations list first (SetPinned). Like the revision it
	// is this database's: an export leaves it out.
	Pinned bool `json:"-"`
}

// Roles a message may have.
var roles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}

// Message is one node of a conversation's tree.
type Message struct {
	ID             int64           `json:"id"`
	ConversationID int64           `json:"conversation_id"`
	ParentID       int64           `json:"parent_id,omitempty"` // 0 for a root
	Role           string          `json:"role"`
	Text           string          `json:"text"`
	TokenIDs       []int32         `json:"token_ids,omitempty"` // the tokens the message occupies in the cache
	PosStart       int             `json:"pos_start"`           // first cache position it occupies
	PosEnd         int             `json:"pos_end"`             // one past the last
	Stats          json.RawMessage `json:"stats,omitempty"`
	Partial        bool            `json:"partial,omitempty"` // a reply still streaming, or cut off by a crash
	Created        time.Time       `json:"created"`
	Updated        time.Time       `json:"updated"`
}

const convCols = `c.id, c.uid, coalesce(c.model_id, 0), c.model_sha256, c.model_name, c.title, c.settings,
	coalesce(c.current_leaf_id, 0), c.created_ms, c.updated_ms,
	(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id), c.revision, c.pinned`

func scanConv(sc interface{ Scan(...any) error }) (Conversation, error) {
	var c Conversation
	var settings string
	var created, updated int64
	err := sc.Scan(&c.ID, &c.UID, &c.ModelID, &c.ModelSHA256, &c.ModelName, &c.Title, &settings, &c.CurrentLeaf, &created, &updated, &c.Messages, &c.Revision, &c.Pinned)
	c.Settings = json.RawMessage(settings)
	c.Created, c.Updated = fromMS(created), fromMS(updated)
	return c, err
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreateConversation stores a new, empty conversation and returns it. With
// c.ModelID set, the model must exist, and its name and hash are copied
// unless c sets them. Created/Updated default to now; UID to a fresh one.
func (db *DB) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	settings, err := jsonText("conversation settings", c.Settings, "{}")
	if err != nil {
		return Conversation{}, err
	}
	var out Conversation
	err = db.write(ctx, "create conversation", func(tx *sql.Tx) error {
		id, err := insertConversation(ctx, tx, c, settings, db.nowMS())
		if err != nil {
			return err
		}
		out, err = scanConv(tx.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations c WHERE c.id = ?", id))
		return err
	})
	return out, err
}

func insertConversation(ctx context.Context, tx *sql.Tx, c Conversation, settings string, now int64) (int64, error) {
	var modelID any
	if c.ModelID != 0 {
		var sha, name string
		err := tx.QueryRowContext(ctx, "SELECT sha256, display_name FROM models WHERE id = ?", c.ModelID).Scan(&sha, &name)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, notFound("model", c.ModelID)
		}
		if err != nil {
			return 0, err
		}
		modelID = c.ModelID
		if c.ModelSHA256 == "" {
			c.ModelSHA256 = sha
		}
		if c.ModelName == "" {
			c.ModelName = name
		}
	}
	if c.UID == "" {
		c.UID = newUID()
	} else {
		var id int64
		err := tx.QueryRowContext(ctx, "SELECT id FROM conversations WHERE uid = ?", c.UID).Scan(&id)
		if err == nil {
			return 0, errf("conversation %s is already here as conversation %d: %w", c.UID, id, ErrConflict)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
	}
	created, updated := ms(c.Created), ms(c.Updated)
	if created == 0 {
		created = now
	}
	if updated == 0 {
		updated = created
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO conversations(uid, model_id, model_sha256, model_name, title, settings, created_ms, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, c.UID, modelID, c.ModelSHA256, c.ModelName, c.Title, settings, created, updated)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// GetConversation returns one conversation.
func (db *DB) GetConversation(ctx context.Context, id int64) (Conversation, error) {
	c, err := scanConv(db.sql.QueryRowContext(ctx, "SELECT "+convCols+" FROM conversations c WHERE c.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, notFound("conversation", id)
	}
	return c, db.wrap("get conversation", err)
}

// ListConversations returns the conversations with the model (all when
// modelID is 0): the pinned ones first, then by last use (the newest
// message or change first).
func (db *DB) ListConversations(ctx context.Context, modelID int64) ([]Conversation, error) {
	q := "SELECT " + convCols + " FROM conversations c"
	var args []any
	if modelID != 0 {
		q += " WHERE c.model_id = ?"
		args = append(args, modelID)
	}
	q += " ORDER BY " + listOrder
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.wrap("list conversations", err)
	}
	defer rows.Close()
	var out []Conversation
	for rows.Next() {
		c, err := scanConv(rows)
		if err != nil {
			return nil, db.wrap("list conversations", err)
		}
		out = append(out, c)
	}
	return out, db.wrap("list conversations", rows.Err())
}

// RenameConversation sets the title.
func (db *DB) RenameConversation(ctx context.Context, id int64, title string) error {
	return db.write(ctx, "rename conversation", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "UPDATE conversations SET title = ?, updated_ms = ? WHERE id = ?", title, db.nowMS(), id))(notFound("conversation", id))
	})
}

// SetConversationSettings replaces the settings JSON (cache policy,
// sampling).
func (db *DB) SetConversationSettings(ctx context.Context, id int64, settings json.RawMessage) error {
	s, err := jsonText("conversation settings", settings, "{}")
	if err != nil {
		return err
	}
	return db.write(ctx, "save conversation settings", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "UPDATE conversations SET settings = ?, updated_ms = ? WHERE id = ?", s, db.nowMS(), id))(notFound("conversation", id))
	})
}

// DeleteConversation removes a conversation and all its messages. Runs that
// referred to it stay.
func (db *DB) DeleteConversation(ctx context.Context, id int64) error {
	return db.write(ctx, "delete conversation", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "DELETE FROM conversations WHERE id = ?", id))(notFound("conversation", id))
	})
}

// encodeTokens packs token ids as little-endian uint32, 4 bytes each; no
// tokens is NULL.
func encodeTokens(ids []int32) []byte {
	if len(ids) == 0 {
		return nil
	}
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	return b
}

// decodeTokens is the inverse of encodeTokens.
func decodeTokens(b []byte) ([]int32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("token blob of %d bytes is not a whole number of tokens", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	ids := make([]int32, len(b)/4)
	for i := range ids {
		ids[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return ids, nil
}

// msgColsOf lists a message's columns, each qualified with p.
func msgColsOf(p string) string {
	return fmt.Sprintf(`%[1]sid, %[1]sconversation_id, coalesce(%[1]sparent_id, 0), %[1]srole, %[1]stext, %[1]stoken_ids,
		%[1]spos_start, %[1]spos_end, coalesce(%[1]sstats, ''), %[1]spartial, %[1]screated_ms, %[1]supdated_ms`, p)
}

var msgCols = msgColsOf("")

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (db *DB) scanMsg(sc interface{ Scan(...any) error }) (Message, error) {
	var m Message
	var blob []byte
	var stats string
	var created, updated int64
	if err := sc.Scan(&m.ID, &m.ConversationID, &m.ParentID, &m.Role, &m.Text, &blob, &m.PosStart, &m.PosEnd, &stats, &m.Partial, &created, &updated); err != nil {
		return m, err
	}
	ids, err := decodeTokens(blob)
	if err != nil {
		return m, corruptError(db.path, fmt.Errorf("message %d: %v", m.ID, err))
	}
	m.TokenIDs = ids
	if stats != "" {
		m.Stats = json.RawMessage(stats)
	}
	m.Created, m.Updated = fromMS(created), fromMS(updated)
	return m, nil
}

func checkMessage(m Message) (stats any, err error) {
	if !roles[m.Role] {
		return nil, invalid("message role %q is not one of system, user, assistant, tool", m.Role)
	}
	if m.PosStart < 0 || m.PosEnd < m.PosStart {
		return nil, invalid("message cache positions [%d, %d) are not a range", m.PosStart, m.PosEnd)
	}
	if len(m.Stats) == 0 {
		return nil, nil
	}
	if !json.Valid(m.Stats) {
		return nil, invalid("message stats are not valid JSON")
	}
	return string(m.Stats), nil
}

// AddMessage appends m to its conversation under m.ParentID (0 for a root)
// and makes it the conversation's current leaf. A sibling of an existing
// message is an edit or a regeneration; the older branch stays. To stream a
// reply, add it with Partial set and call UpdateMessage as tokens arrive.
func (db *DB) AddMessage(ctx context.Context, m Message) (Message, error) {
	stats, err := checkMessage(m)
	if err != nil {
		return Message{}, err
	}
	var out Message
	err = db.write(ctx, "add message", func(tx *sql.Tx) error {
		now := db.nowMS()
		id, err := insertMessage(ctx, tx, m, stats, now)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE conversations SET current_leaf_id = ?, updated_ms = ?, revision = revision + 1 WHERE id = ?", id, now, m.ConversationID); err != nil {
			return err
		}
		out, err = db.scanMsg(tx.QueryRowContext(ctx, "SELECT "+msgCols+" FROM messages WHERE id = ?", id))
		return err
	})
	return out, err
}

func insertMessage(ctx context.Context, tx *sql.Tx, m Message, stats any, now int64) (int64, error) {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM conversations WHERE id = ?", m.ConversationID).Scan(&n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, notFound("conversation", m.ConversationID)
	}
	var parent any
	if m.ParentID != 0 {
		var conv int64
		err := tx.QueryRowContext(ctx, "SELECT conversation_id FROM messages WHERE id = ?", m.ParentID).Scan(&conv)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, notFound("parent message", m.ParentID)
		}
		if err != nil {
			return 0, err
		}
		if conv != m.ConversationID {
			return 0, errf("parent message %d is in conversation %d, not %d: %w", m.ParentID, conv, m.ConversationID, ErrConflict)
		}
		parent = m.ParentID
	}
	created, updated := ms(m.Created), ms(m.Updated)
	if created == 0 {
		created = now
	}
	if updated == 0 {
		updated = created
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO messages(conversation_id, parent_id, role, text, token_ids, pos_start, pos_end, stats, partial, created_ms, updated_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ConversationID, parent, m.Role, m.Text, encodeTokens(m.TokenIDs), m.PosStart, m.PosEnd, stats, m.Partial, created, updated)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// UpdateMessage replaces a message's text, tokens, cache positions, stats
// and Partial flag (its place in the tree and its role stay). Streaming
// calls it as tokens arrive and a last time with Partial false.
func (db *DB) UpdateMessage(ctx context.Context, m Message) error {
	stats, err := checkMessage(Message{Role: "user", PosStart: m.PosStart, PosEnd: m.PosEnd, Stats: m.Stats})
	if err != nil {
		return err
	}
	return db.write(ctx, "update message", func(tx *sql.Tx) error {
		now := db.nowMS()
		var conv int64
		err := tx.QueryRowContext(ctx, `UPDATE messages SET text = ?, token_ids = ?, pos_start = ?, pos_end = ?, stats = ?, partial = ?, updated_ms = ?
			WHERE id = ? RETURNING conversation_id`,
			m.Text, encodeTokens(m.TokenIDs), m.PosStart, m.PosEnd, stats, m.Partial, now, m.ID).Scan(&conv)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("message", m.ID)
		}
		if err != nil {
			return err
		}
		if m.ConversationID != 0 && m.ConversationID != conv {
			return errf("message %d is in conversation %d, not %d: %w", m.ID, conv, m.ConversationID, ErrConflict)
		}
		_, err = tx.ExecContext(ctx, "UPDATE conversations SET updated_ms = ?, revision = revision + 1 WHERE id = ?", now, conv)
		return err
	})
}

// GetMessage returns one message.
func (db *DB) GetMessage(ctx context.Context, id int64) (Message, error) {
	m, err := db.scanMsg(db.sql.QueryRowContext(ctx, "SELECT "+msgCols+" FROM messages WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, notFound("message", id)
	}
	return m, db.wrap("get message", err)
}

func (db *DB) queryMsgs(ctx context.Context, qr querier, op, q string, args ...any) ([]Message, error) {
	rows, err := qr.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.wrap(op, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := db.scanMsg(rows)
		if err != nil {
			return nil, db.wrap(op, err)
		}
		out = append(out, m)
	}
	return out, db.wrap(op, rows.Err())
}

// Path returns the messages from the root down to leaf, in order: what the
// model sees when the chat continues from leaf. Leaf 0 gives no messages.
func (db *DB) Path(ctx context.Context, leaf int64) ([]Message, error) {
	return db.pathTo(ctx, db.sql, leaf)
}

func (db *DB) pathTo(ctx context.Context, qr querier, leaf int64) ([]Message, error) {
	if leaf == 0 {
		return nil, nil
	}
	out, err := db.queryMsgs(ctx, qr, "load conversation path", `WITH RECURSIVE up(id, depth) AS (
			SELECT id, 0 FROM messages WHERE id = ?
			UNION ALL
			SELECT m.parent_id, up.depth + 1 FROM messages m JOIN up ON m.id = up.id WHERE m.parent_id IS NOT NULL AND up.depth < 10000000
		)
		SELECT `+msgColsOf("m.")+` FROM up JOIN messages m ON m.id = up.id ORDER BY up.depth DESC`, leaf)
	if err == nil && len(out) == 0 {
		return nil, notFound("message", leaf)
	}
	return out, err
}

// CurrentPath is Path from the conversation's current leaf.
func (db *DB) CurrentPath(ctx context.Context, convID int64) (Conversation, []Message, error) {
	var c Conversation
	var path []Message
	err := db.read(ctx, "load conversation", func(tx *sql.Tx) error {
		var err error
		c, err = convTx(ctx, tx, convID)
		if err != nil || c.CurrentLeaf == 0 {
			return err
		}
		path, err = db.pathTo(ctx, tx, c.CurrentLeaf)
		return err
	})
	return c, path, err
}

// Children returns the replies to a message (its alternatives are each
// other's siblings), oldest first. Children of 0 are not defined: use
// Messages for a conversation's roots.
func (db *DB) Children(ctx context.Context, msgID int64) ([]Message, error) {
	return db.queryMsgs(ctx, db.sql, "list replies", "SELECT "+msgCols+" FROM messages WHERE parent_id = ? ORDER BY id", msgID)
}

// Messages returns every message of a conversation's tree, oldest first
// (a parent always comes before its children).
func (db *DB) Messages(ctx context.Context, convID int64) ([]Message, error) {
	return db.queryMsgs(ctx, db.sql, "list messages", "SELECT "+msgCols+" FROM messages WHERE conversation_id = ? ORDER BY id", convID)
}

// SetCurrentLeaf picks the branch the conversation continues from; msgID
// must be one of its messages, or 0 for "before the first message".
func (db *DB) SetCurrentLeaf(ctx context.Context, convID, msgID int64) error {
	return db.write(ctx, "switch branch", func(tx *sql.Tx) error {
		var leaf any
		if msgID != 0 {
			var conv int64
			err := tx.QueryRowContext(ctx, "SELECT conversation_id FROM messages WHERE id = ?", msgID).Scan(&conv)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("message", msgID)
			}
			if err != nil {
				return err
			}
			if conv != convID {
				return errf("message %d is in conversation %d, not %d: %w", msgID, conv, convID, ErrConflict)
			}
			leaf = msgID
		}
		return mustAffect(tx.ExecContext(ctx, "UPDATE conversations SET current_leaf_id = ?, updated_ms = ?, revision = revision + 1 WHERE id = ?", leaf, db.nowMS(), convID))(notFound("conversation", convID))
	})
}

// DeleteMessage removes a message and everything below it. If the current
// leaf was among them, the conversation continues from the message's parent.
func (db *DB) DeleteMessage(ctx context.Context, id int64) error {
	return db.write(ctx, "delete message", func(tx *sql.Tx) error {
		var conv int64
		var parent sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT conversation_id, parent_id FROM messages WHERE id = ?", id).Scan(&conv, &parent)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("message", id)
		}
		if err != nil {
			return err
		}
		// Is the current leaf inside the subtree? Walk up from the leaf.
		var inside int
		err = tx.QueryRowContext(ctx, `WITH RECURSIVE up(id) AS (
				SELECT current_leaf_id FROM conversations WHERE id = ? AND current_leaf_id IS NOT NULL
				UNION ALL
				SELECT m.parent_id FROM messages m JOIN up ON m.id = up.id WHERE m.parent_id IS NOT NULL
			) SELECT count(*) FROM up WHERE id = ?`, conv, id).Scan(&inside)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE id = ?", id); err != nil {
			return err
		}
		now := db.nowMS()
		if inside > 0 {
			_, err = tx.ExecContext(ctx, "UPDATE conversations SET current_leaf_id = ?, updated_ms = ?, revision = revision + 1 WHERE id = ?", parent, now, conv)
		} else {
			_, err = tx.ExecContext(ctx, "UPDATE conversations SET updated_ms = ?, revision = revision + 1 WHERE id = ?", now, conv)
		}
		return err
	})
}
