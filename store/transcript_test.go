package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// turn is a transcript message as a chat saves it.
func turn(role, text string, ids ...int32) Message {
	return Message{Role: role, Text: text, TokenIDs: ids}
}

func texts(path []Message) []string {
	var out []string
	for _, m := range path {
		out = append(out, m.Role+":"+m.Text)
	}
	return out
}

func currentTexts(t *testing.T, db *DB, id int64) []string {
	t.Helper()
	_, path, err := db.CurrentPath(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return texts(path)
}

func TestSaveTranscriptGrowsTheTree(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{Title: DefaultTitle})
	first := []Message{turn("system", "Be terse.", 1, 2), turn("user", "2+2?", 3, 4), turn("assistant", "4", 5, 6)}
	if err := db.SaveTranscript(ctx, c.ID, first, "2+2?"); err != nil {
		t.Fatal(err)
	}
	got, path, err := db.CurrentPath(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "2+2?" || got.Messages != 3 || !reflect.DeepEqual(texts(path), []string{"system:Be terse.", "user:2+2?", "assistant:4"}) {
		t.Fatalf("after the first save: %q, %d messages, path %q", got.Title, got.Messages, texts(path))
	}
	for i, want := range [][2]int{{0, 2}, {2, 4}, {4, 6}} {
		if path[i].PosStart != want[0] || path[i].PosEnd != want[1] {
			t.Errorf("message %d at [%d, %d), want %v", i, path[i].PosStart, path[i].PosEnd, want)
		}
	}

	// The same transcript again writes nothing: the conversation keeps its
	// place in the list.
	if err := db.SaveTranscript(ctx, c.ID, first, "other title"); err != nil {
		t.Fatal(err)
	}
	again, _ := db.GetConversation(ctx, c.ID)
	if again.Updated != got.Updated || again.Title != "2+2?" {
		t.Errorf("an unchanged transcript moved the conversation: updated %v → %v, title %q", got.Updated, again.Updated, again.Title)
	}

	// A regeneration is a sibling; the old reply stays.
	regen := append(first[:2:2], turn("assistant", "Four.", 7))
	if err := db.SaveTranscript(ctx, c.ID, regen, ""); err != nil {
		t.Fatal(err)
	}
	bs, err := db.Branches(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Branch{{1, 1}, {1, 1}, {2, 2}}; !reflect.DeepEqual(bs, want) {
		t.Errorf("branches %v, want %v", bs, want)
	}

	// Undo moves the leaf back; nothing is deleted.
	if err := db.SaveTranscript(ctx, c.ID, first[:1], ""); err != nil {
		t.Fatal(err)
	}
	if got := currentTexts(t, db, c.ID); !reflect.DeepEqual(got, []string{"system:Be terse."}) {
		t.Errorf("after undo: %q", got)
	}
	all, _ := db.Messages(ctx, c.ID)
	if len(all) != 4 {
		t.Errorf("undo deleted messages: %d left, want 4", len(all))
	}

	// An edit of the user turn is a sibling of it, with its own reply.
	edit := []Message{first[0], turn("user", "3+3?", 8), turn("assistant", "6", 9)}
	if err := db.SaveTranscript(ctx, c.ID, edit, ""); err != nil {
		t.Fatal(err)
	}
	bs, _ = db.Branches(ctx, c.ID)
	if want := []Branch{{1, 1}, {2, 2}, {1, 1}}; !reflect.DeepEqual(bs, want) {
		t.Errorf("branches after the edit %v, want %v", bs, want)
	}

	// Back to the first user turn: its latest reply (the regeneration).
	path, err = db.SwitchBranch(ctx, c.ID, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"system:Be terse.", "user:2+2?", "assistant:Four."}; !reflect.DeepEqual(texts(path), want) || !reflect.DeepEqual(currentTexts(t, db, c.ID), want) {
		t.Errorf("switched to %q (stored %q), want %q", texts(path), currentTexts(t, db, c.ID), want)
	}
	for _, bad := range [][2]int{{1, -1}, {0, 1}, {3, 1}, {-1, 1}} {
		if _, err := db.SwitchBranch(ctx, c.ID, bad[0], bad[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("SwitchBranch(%d, %+d): %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// A reply saved while it streamed grows in place and completes there.
func TestSaveTranscriptContinuesAPartialReply(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{})
	u := turn("user", "count", 1, 2)
	streaming := Message{Role: "assistant", Text: "1 2", TokenIDs: []int32{3, 4}, Partial: true}
	if err := db.SaveTranscript(ctx, c.ID, []Message{u, streaming}, "count"); err != nil {
		t.Fatal(err)
	}
	done := Message{Role: "assistant", Text: "1 2 3", TokenIDs: []int32{3, 4, 5, 99}, Stats: json.RawMessage(`{"decode_tok_s":3}`)}
	if err := db.SaveTranscript(ctx, c.ID, []Message{u, done}, "count"); err != nil {
		t.Fatal(err)
	}
	all, _ := db.Messages(ctx, c.ID)
	if len(all) != 2 {
		t.Fatalf("%d messages, want the reply updated in place (2)", len(all))
	}
	r := all[1]
	if r.Partial || r.Text != "1 2 3" || r.PosStart != 2 || r.PosEnd != 6 || string(r.Stats) != `{"decode_tok_s":3}` {
		t.Errorf("completed reply %+v", r)
	}
}

func TestSaveTranscriptBadInput(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{})
	good := []Message{turn("user", "hi", 1)}
	if err := db.SaveTranscript(ctx, c.ID, good, ""); err != nil {
		t.Fatal(err)
	}
	for name, msgs := range map[string][]Message{
		"role":  {turn("user", "hi", 1), turn("robot", "beep")},
		"stats": {turn("user", "hi", 1), {Role: "assistant", Text: "x", Stats: json.RawMessage("{")}},
	} {
		if err := db.SaveTranscript(ctx, c.ID, msgs, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if got := currentTexts(t, db, c.ID); !reflect.DeepEqual(got, []string{"user:hi"}) {
		t.Errorf("a refused transcript changed the tree: %q", got)
	}
	if err := db.SaveTranscript(ctx, 999, good, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown conversation: %v, want ErrNotFound", err)
	}
	if _, err := db.Branches(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("Branches of an unknown conversation: %v, want ErrNotFound", err)
	}
}

// errInjected is the fault faultDriver injects.
var errInjected = errors.New("injected fault")

// faultDriver is modernc's driver with one statement made to fail: while
// armed, the left-th statement (begin, query, exec, prepare or commit)
// from now fails, as a crash there would stop it. A failed commit rolls
// back, as SQLite does for a transaction a crash interrupts.
type faultDriver struct {
	base driver.Driver

	mu    sync.Mutex
	left  int // 0: disarmed
	fired bool
}

var faults = func() *faultDriver {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	d := &faultDriver{base: db.Driver()}
	sql.Register("sqlite-faults", d)
	return d
}()

func (d *faultDriver) arm(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.left, d.fired = n, false
}

// step counts a statement and fails the one armed for.
func (d *faultDriver) step() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left == 0 {
		return nil
	}
	d.left--
	if d.left == 0 {
		d.fired = true
		return errInjected
	}
	return nil
}

func (d *faultDriver) Open(name string) (driver.Conn, error) {
	c, err := d.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: c, d: d}, nil
}

type faultConn struct {
	driver.Conn
	d *faultDriver
}

func (c *faultConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

func (c *faultConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if err := c.d.step(); err != nil {
		return nil, err
	}
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *faultConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	if err := c.d.step(); err != nil {
		return nil, err
	}
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	return &faultTx{Tx: tx, d: c.d}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.d.step(); err != nil {
		return nil, err
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *faultConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.d.step(); err != nil {
		return nil, err
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *faultConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *faultConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

type faultTx struct {
	driver.Tx
	d *faultDriver
}

func (t *faultTx) Commit() error {
	if err := t.d.step(); err != nil {
		_ = t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}

// treeRows is everything stored of a conversation: its row and every
// message, each column.
func treeRows(t *testing.T, db *DB, id int64) string {
	t.Helper()
	c, err := db.GetConversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	all, err := db.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v\n%+v", c, all)
}

// Every conversation-tree write is one transaction: killed at any of its
// statements it leaves the old tree, exactly; let through, the new one.
func TestTreeWritesAreAtomic(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "etchat.db"), Options{Now: newClock().Now, driver: "sqlite-faults"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := seedBranchy(t, db) // current path: system, 2+2?, Four., and 5+5?, a partial "1"
	var base []Message
	path := func() []Message {
		_, p, err := db.CurrentPath(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	kept := func(n int) []Message {
		out := make([]Message, n)
		for i, m := range base[:n] {
			out[i] = Message{Role: m.Role, Text: m.Text, TokenIDs: m.TokenIDs, Stats: m.Stats, Partial: m.Partial}
		}
		return out
	}
	steps := []struct {
		name  string
		write func() error
		want  []string
	}{
		{"switch branch", func() error {
			_, err := db.SwitchBranch(ctx, c.ID, 2, -1)
			return err
		}, []string{"system:You are terse.", "user:2+2?", "assistant:4"}},
		{"switch back, down the latest replies", func() error {
			_, err := db.SwitchBranch(ctx, c.ID, 2, +1)
			return err
		}, []string{"system:You are terse.", "user:2+2?", "assistant:Four.\n", "user:and 5+5?", "assistant:1"}},
		{"complete the partial reply and go on", func() error {
			msgs := append(kept(4), Message{Role: "assistant", Text: "10", TokenIDs: []int32{8, 9}},
				turn("user", "thanks", 10), turn("assistant", "ok", 11))
			return db.SaveTranscript(ctx, c.ID, msgs, "2+2?")
		}, []string{"system:You are terse.", "user:2+2?", "assistant:Four.\n", "user:and 5+5?", "assistant:10", "user:thanks", "assistant:ok"}},
		{"edit with retokenized history", func() error {
			msgs := kept(2)
			msgs[1].TokenIDs = []int32{3, 33} // the kept user turn holds other tokens now
			msgs = append(msgs, turn("assistant", "four", 12), turn("user", "sure?", 13))
			return db.SaveTranscript(ctx, c.ID, msgs, "")
		}, []string{"system:You are terse.", "user:2+2?", "assistant:four", "user:sure?"}},
		{"undo to the system prompt", func() error {
			return db.SaveTranscript(ctx, c.ID, kept(1), "")
		}, []string{"system:You are terse."}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			old := treeRows(t, db, c.ID)
			for n := 1; ; n++ {
				faults.arm(n)
				err := s.write()
				fired := faults.fired
				faults.arm(0)
				if !fired {
					if err != nil {
						t.Fatalf("no fault injected, yet: %v", err)
					}
					if n < 4 {
						t.Fatalf("the write took %d statements; the test injects nothing", n-1)
					}
					break
				}
				if !errors.Is(err, errInjected) {
					t.Fatalf("fault at statement %d: got %v, want the injected error", n, err)
				}
				if now := treeRows(t, db, c.ID); now != old {
					t.Fatalf("fault at statement %d left a changed tree:\nold %s\nnow %s", n, old, now)
				}
			}
			if got := currentTexts(t, db, c.ID); !reflect.DeepEqual(got, s.want) {
				t.Errorf("after the write: %q, want %q", got, s.want)
			}
			base = path()
		})
	}
}

// The store's errors are typed: an operation error naming the step, which
// Explain reads by type, never by its text.
func TestErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "etchat.db"), Options{driver: "sqlite-faults"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var oe *OpError
	_, err = db.GetConversation(ctx, 42)
	if !errors.As(err, &oe) || !errors.Is(err, ErrNotFound) || err.Error() != "store: conversation 42: not found" ||
		Explain(err) != "conversation 42: not found (it may have been deleted; list what exists with 'etchat history')" {
		t.Errorf("not found: %v / %q", err, Explain(err))
	}
	_, err = db.AddMessage(ctx, Message{ConversationID: 1, Role: "robot"})
	if !errors.As(err, &oe) || !errors.Is(err, ErrInvalid) || Explain(err) != `invalid: message role "robot" is not one of system, user, assistant, tool (nothing was changed)` {
		t.Errorf("invalid: %v / %q", err, Explain(err))
	}
	faults.arm(1)
	_, err = db.ListRuns(ctx, RunFilter{})
	faults.arm(0)
	if !errors.As(err, &oe) || oe.Op != "list runs" || !errors.Is(err, errInjected) || err.Error() != "store: list runs: injected fault" {
		t.Errorf("a failed step: %v (%+v)", err, oe)
	}
	// Wrapped by a caller, it keeps its type and its message.
	outer := fmt.Errorf("saving: %w", err)
	if !errors.As(outer, &oe) || Explain(outer) != "saving: store: list runs: injected fault" {
		t.Errorf("wrapped: %q", Explain(outer))
	}
}
