package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func titles(cs []Conversation) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Title)
	}
	return strings.Join(s, ",")
}

// TestPinAndLastUse: the lists put pinned conversations first, then the
// most recently used; a message makes a conversation the last used;
// pinning moves it up without counting as a use or a change of its tree,
// and unpinning puts it back by its last use.
func TestPinAndLastUse(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	var ids []int64
	for _, title := range []string{"a", "b", "c"} {
		c, err := db.CreateConversation(ctx, Conversation{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	check := func(want string) {
		t.Helper()
		list, err := db.ListConversations(ctx, 0)
		if err != nil || titles(list) != want {
			t.Errorf("list %q (%v), want %q", titles(list), err, want)
		}
		hits, err := db.SearchConversations(ctx, "", 0)
		if err != nil || strings.Join(hitTitles(hits), ",") != want {
			t.Errorf("search %q (%v), want %q", hitTitles(hits), err, want)
		}
	}
	check("c,b,a")
	if _, err := db.AddMessage(ctx, Message{ConversationID: ids[0], Role: "user", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	check("a,c,b")
	before, _ := db.GetConversation(ctx, ids[1])
	if err := db.SetPinned(ctx, ids[1], true); err != nil {
		t.Fatal(err)
	}
	after, _ := db.GetConversation(ctx, ids[1])
	if !after.Pinned || after.Updated != before.Updated || after.Revision != before.Revision {
		t.Errorf("pinning: %+v, before %+v (pinned, same last use and revision wanted)", after, before)
	}
	check("b,a,c")
	if _, err := db.AddMessage(ctx, Message{ConversationID: ids[2], Role: "user", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	check("b,c,a")
	if err := db.SetPinned(ctx, ids[1], false); err != nil {
		t.Fatal(err)
	}
	check("c,a,b")
	if err := db.SetPinned(ctx, 999, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("pinning a missing conversation: %v", err)
	}
}

// TestMigrationPin: a file from before pins (schema 7) keeps every
// conversation as it was, unpinned, and listed in the order it was.
func TestMigrationPin(t *testing.T) {
	ctx := context.Background()
	path, raw := openFrozen(t, 7)
	if _, err := raw.Exec(`INSERT INTO conversations(id, uid, model_sha256, model_name, title, settings, created_ms, updated_ms)
		VALUES (2, 'second', '', '', 'newer', '{}', 5000, 9000)`); err != nil {
		t.Fatal(err)
	}
	cols := colsOf(t, raw, "conversations")
	before := rowsOf(t, raw, "conversations", "id", cols...)
	raw.Close()
	db := openTest(t, path)
	if after := withoutColumn(rowsOf(t, db.sql, "conversations", "id", append(cols, "pinned")...), "pinned", "0"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("conversations changed:\n got %q\nwant %q", after, before)
	}
	list, err := db.ListConversations(ctx, 0)
	if err != nil || titles(list) != "newer,seeded" || list[0].Pinned || list[1].Pinned {
		t.Fatalf("migrated list %q %v", titles(list), err)
	}
	if err := db.SetPinned(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	if list, _ := db.ListConversations(ctx, 0); titles(list) != "seeded,newer" {
		t.Errorf("after pinning the older one: %q", titles(list))
	}
	if _, err := db.sql.Exec("UPDATE conversations SET pinned = 2 WHERE id = 1"); err == nil {
		t.Error("a pinned value other than 0 or 1 was stored")
	}
}
