package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// storedTexts is the text of every message of conversation id, in id order.
func storedTexts(t *testing.T, db *DB, id int64) []string {
	t.Helper()
	rows, err := db.sql.Query("SELECT text FROM messages WHERE conversation_id = ? ORDER BY id", id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// TestBackupWhileWriting: backups taken while another connection appends
// a conversation turn by turn each hold a whole prefix of it: every
// message complete, the current leaf the last message it holds, the file
// intact; the last backup after the writer stopped holds everything.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, filepath.Join(dir, "etchat.db"))
	// The writer is another connection, as another window would be.
	writer := openTest(t, filepath.Join(dir, "etchat.db"))
	c, err := writer.CreateConversation(ctx, Conversation{Title: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 120
	var wg sync.WaitGroup
	wg.Add(1)
	werr := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wg.Done()
		parent := int64(0)
		for i := range turns {
			m, err := writer.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: parent, Role: []string{"user", "assistant"}[i%2],
				Text: fmt.Sprintf("message %d %s", i, string(make([]byte, 2000)))})
			if err != nil {
				werr <- err
				return
			}
			parent = m.ID
		}
	}()
	// Back up until the writer is done (each backup a few milliseconds,
	// each message a committed, fsynced transaction).
	var backups []string
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		if err := db.Backup(ctx, p); err != nil {
			t.Fatal(err)
		}
		backups = append(backups, p)
		select {
		case <-done:
		default:
			continue
		}
		break
	}
	wg.Wait()
	close(werr)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(dir, "backup-last.db")
	if err := db.Backup(ctx, last); err != nil {
		t.Fatal(err)
	}
	backups = append(backups, last)
	all := storedTexts(t, db, c.ID)
	if len(all) != turns {
		t.Fatalf("the writer wrote %d messages, want %d", len(all), turns)
	}
	partial := 0
	for _, p := range backups {
		b := openTest(t, p)
		if err := b.IntegrityCheck(ctx); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		got := storedTexts(t, b, c.ID)
		if !slices.Equal(got, all[:len(got)]) {
			t.Errorf("%s holds messages that are not a prefix of what was written", p)
		}
		bc, err := b.GetConversation(ctx, c.ID)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(got) > 0 {
			path, err := b.Path(ctx, bc.CurrentLeaf)
			if err != nil || len(path) != len(got) {
				t.Errorf("%s: the current leaf's path holds %d messages of %d (%v): leaf and messages disagree", p, len(path), len(got), err)
			}
		} else if bc.CurrentLeaf != 0 {
			t.Errorf("%s: no messages but current leaf %d", p, bc.CurrentLeaf)
		}
		if len(got) > 0 && len(got) < turns {
			partial++
		}
		if p == last && len(got) != turns {
			t.Errorf("the backup after the writer stopped holds %d messages, want %d", len(got), turns)
		}
	}
	t.Logf("%d of %d backups were taken mid-write", partial, len(backups))
	if partial == 0 {
		t.Error("no backup was taken while the conversation was being written: the test proved nothing")
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.partial-*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
	if err := db.Backup(ctx, filepath.Join(dir, "etchat.db")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a backup over the database itself: %v", err)
	}
}

// TestRestore: restoring a backup brings back exactly what it held, in
// the open database, seen by another connection too; an older backup is
// migrated; files that are not intact etchat databases of this or an older
// schema are refused with a BackupError and change nothing.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "etchat.db")
	db := openTest(t, path)
	other := openTest(t, path)
	a, _ := db.CreateConversation(ctx, Conversation{Title: "kept in the backup"})
	if _, err := db.AddMessage(ctx, Message{ConversationID: a.ID, Role: "user", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetPinned(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	bk := filepath.Join(dir, "backup.db")
	if err := db.Backup(ctx, bk); err != nil {
		t.Fatal(err)
	}
	b, _ := db.CreateConversation(ctx, Conversation{Title: "after the backup"})
	if err := db.DeleteConversation(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Restore(ctx, bk); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*DB{"restoring connection": db, "other connection": other} {
		list, err := d.ListConversations(ctx, 0)
		if err != nil || len(list) != 1 || list[0].ID != a.ID || list[0].Title != a.Title || !list[0].Pinned || list[0].Messages != 1 {
			t.Errorf("%s after restore: %+v %v", name, list, err)
		}
		if _, err := d.GetConversation(ctx, b.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: the conversation made after the backup is still there: %v", name, err)
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	if _, err := other.AddMessage(ctx, Message{ConversationID: a.ID, ParentID: 0, Role: "user", Text: "after restore"}); err != nil {
		t.Errorf("writing after the restore: %v", err)
	}

	// A backup of schema 7 (before pins) is restored and migrated.
	old, raw := openFrozen(t, 7)
	raw.Close()
	if err := db.Restore(ctx, old); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Version(ctx); v != SchemaVersion() {
		t.Errorf("restored v7 backup is at version %d, want %d", v, SchemaVersion())
	}
	if c, err := db.GetConversation(ctx, 1); err != nil || c.Title != "seeded" || c.Pinned {
		t.Errorf("restored v7 backup: %+v %v", c, err)
	}
	before := storedTexts(t, db, 1)

	// Refusals, each leaving the database as it was.
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("not a database at all, just some text"), 0o644)
	foreign := filepath.Join(dir, "foreign.db")
	newer := filepath.Join(dir, "newer.db")
	for p, setup := range map[string]string{
		foreign: "CREATE TABLE t(x); INSERT INTO t VALUES (1)",
		newer:   "CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, name TEXT, applied_ms INTEGER); INSERT INTO schema_migrations VALUES (999, 'future', 0)",
	} {
		r, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Exec(setup); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	for _, tc := range []struct {
		path string
		kind error
	}{
		{notDB, ErrCorrupt}, {foreign, ErrCorrupt}, {newer, ErrTooNew},
		{filepath.Join(dir, "missing.db"), ErrCorrupt}, {dir, ErrCorrupt},
	} {
		err := db.Restore(ctx, tc.path)
		var be *BackupError
		if !errors.As(err, &be) || !errors.Is(err, tc.kind) {
			t.Errorf("restore %s: %v, want a BackupError of %v", tc.path, err, tc.kind)
		}
		if got := storedTexts(t, db, 1); !reflect.DeepEqual(got, before) {
			t.Errorf("refused restore of %s changed the database", tc.path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused restore created the missing backup file")
	}
	if err := db.Restore(ctx, path); !errors.Is(err, ErrInvalid) {
		t.Errorf("restoring the database onto itself: %v", err)
	}
}
