package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// SwitchToAt switches to any message of the tree: a reply of another
// branch (its path ends there), an earlier message (the path continues
// down the latest replies); a message of another conversation and a stale
// revision are refused, changing nothing. A reply whose text the new one
// extends (Continue) grows in place: no branch.
func TestSwitchToAnyMessageOfTheTree(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, filepath.Join(t.TempDir(), "tree.db"))
	c := mustConv(t, db, Conversation{Title: DefaultTitle})
	first := []Message{turn("user", "hi", 1, 2), turn("assistant", "hello", 3)}
	second := []Message{turn("user", "hi", 1, 2), turn("assistant", "hey", 4)}
	longer := append(append([]Message(nil), second...), turn("user", "more", 5), turn("assistant", "sure", 6))
	grown := append(append([]Message(nil), second...), turn("user", "more", 5), turn("assistant", "sure thing", 6, 7))
	for _, msgs := range [][]Message{first, second, longer, grown} {
		if err := db.SaveTranscript(ctx, c.ID, msgs, ""); err != nil {
			t.Fatal(err)
		}
	}
	all, err := db.Messages(ctx, c.ID)
	if err != nil || len(all) != 5 {
		t.Fatalf("%d messages stored (%v), want 5: the grown reply in place", len(all), err)
	}
	byText := map[string]Message{}
	for _, m := range all {
		byText[m.Text] = m
	}
	_, cur, _ := db.CurrentPath(ctx, c.ID)
	conv, _ := db.GetConversation(ctx, c.ID)
	seen := Revision{N: conv.Revision, Leaf: conv.CurrentLeaf}
	path, rev, err := db.SwitchToAt(ctx, c.ID, &seen, byText["hello"].ID)
	if err != nil || len(path) != 2 || path[1].Text != "hello" || rev.Leaf != byText["hello"].ID || rev.N != seen.N+1 {
		t.Fatalf("to hello: %d messages, %+v (%v)", len(path), rev, err)
	}
	path, rev, err = db.SwitchToAt(ctx, c.ID, &rev, byText["hey"].ID)
	if err != nil || len(path) != len(cur) || path[3].Text != "sure thing" {
		t.Fatalf("to hey: %d messages (%v), want it continued to the latest leaf", len(path), err)
	}
	other := mustConv(t, db, Conversation{Title: "other"})
	if _, _, err := db.SwitchToAt(ctx, other.ID, nil, byText["hello"].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a message of another conversation: %v", err)
	}
	var stale *StaleError
	if _, _, err := db.SwitchToAt(ctx, c.ID, &seen, byText["hello"].ID); !errors.As(err, &stale) {
		t.Errorf("stale revision: %v", err)
	}
	if _, now, _ := db.CurrentPath(ctx, c.ID); now[len(now)-1].ID != rev.Leaf {
		t.Error("a refused switch moved the current leaf")
	}
}
