package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
)

// Two writers (two etchat windows, each with its own connection to one
// file) extend the same conversation from the revision they both saw: the
// first is stored, the second is refused with a *StaleError and writes
// nothing, so no turn is stored twice. The first writer's reply then grows
// in place even after the second was refused; a refused writer that
// re-reads can write again.
func TestSaveTranscriptAsRefusesAStaleWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	a, b := openTest(t, path), openTest(t, path)
	c := mustConv(t, a, Conversation{Title: DefaultTitle})
	start := []Message{turn("user", "hi", 1, 2), turn("assistant", "hello", 3)}
	rev, err := a.SaveTranscriptAs(ctx, c.ID, SaveOptions{Seen: &Revision{}}, start, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if rev.N != 1 || rev.Leaf == 0 {
		t.Fatalf("after the first save: revision %+v, want 1 and a leaf", rev)
	}
	seenA, seenB := rev, rev

	partial := turn("assistant", "x", 9)
	partial.Partial = true
	mine := append(append([]Message(nil), start...), turn("user", "from A", 4), partial)
	theirs := append(append([]Message(nil), start...), turn("user", "from B", 5), turn("assistant", "y", 8))
	if seenA, err = a.SaveTranscriptAs(ctx, c.ID, SaveOptions{Seen: &seenA}, mine, ""); err != nil {
		t.Fatal(err)
	}
	_, err = b.SaveTranscriptAs(ctx, c.ID, SaveOptions{Seen: &seenB}, theirs, "")
	var stale *StaleError
	if !errors.As(err, &stale) || !errors.Is(err, ErrConflict) || stale.Seen != seenB.N || stale.Stored != seenA.N {
		t.Fatalf("the second writer: %v, want a *StaleError at %d (stored %d)", err, seenB.N, seenA.N)
	}
	got, err := a.Messages(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user:hi", "assistant:hello", "user:from A", "assistant:x"}; !reflect.DeepEqual(texts(got), want) {
		t.Fatalf("stored messages %q, want %q (nothing of B's, nothing twice)", texts(got), want)
	}

	// A's reply grows and completes in place at its revision.
	done := mine[len(mine)-1]
	done.Text, done.TokenIDs, done.Partial = "xyz", []int32{9, 10, 11}, false
	mine[len(mine)-1] = done
	if seenA, err = a.SaveTranscriptAs(ctx, c.ID, SaveOptions{Seen: &seenA}, mine, ""); err != nil {
		t.Fatal(err)
	}
	if got := currentTexts(t, a, c.ID); !reflect.DeepEqual(got, texts(mine)) {
		t.Fatalf("current path %q, want %q", got, texts(mine))
	}

	// B re-reads and sends again: it continues A's turn.
	conv, cur, err := b.CurrentPath(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	seenB = Revision{N: conv.Revision, Leaf: conv.CurrentLeaf}
	if seenB != seenA {
		t.Fatalf("B read revision %+v, A holds %+v", seenB, seenA)
	}
	again := append(cur, turn("user", "from B", 12))
	if _, err := b.SaveTranscriptAs(ctx, c.ID, SaveOptions{Seen: &seenB}, again, ""); err != nil {
		t.Fatalf("B after re-reading: %v", err)
	}
	if n, _ := a.GetConversation(ctx, c.ID); n.Messages != 5 {
		t.Errorf("%d messages stored, want 5", n.Messages)
	}

	// A stale in-place update keeps the leaf where the other writer put it.
	done.Stats = []byte(`{"n":3}`)
	mine[len(mine)-1] = done
	if _, err := a.SaveTranscriptAs(ctx, c.ID, SaveOptions{Seen: &seenA}, mine, ""); err != nil {
		t.Fatalf("a stale update in place: %v", err)
	}
	if got := currentTexts(t, a, c.ID); got[len(got)-1] != "user:from B" {
		t.Errorf("current path %q: the stale update moved the leaf", got)
	}
}

// Every change of the tree moves the revision: inserts, updates, deletes,
// leaf moves.
func TestRevisionCountsShapeChanges(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{Title: DefaultTitle})
	rev := func() int64 {
		t.Helper()
		got, err := db.GetConversation(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Revision
	}
	m1 := mustAdd(t, db, Message{ConversationID: c.ID, Role: "user", Text: "a"})
	m2 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: m1.ID, Role: "assistant", Text: "b"})
	if rev() != 2 {
		t.Fatalf("after two inserts: revision %d", rev())
	}
	m2.Text = "bb"
	if err := db.UpdateMessage(ctx, m2); err != nil || rev() != 3 {
		t.Fatalf("an update: revision %d (%v)", rev(), err)
	}
	if err := db.SetCurrentLeaf(ctx, c.ID, m1.ID); err != nil || rev() != 4 {
		t.Fatalf("a leaf change: revision %d (%v)", rev(), err)
	}
	if err := db.DeleteMessage(ctx, m2.ID); err != nil || rev() != 5 {
		t.Fatalf("a delete: revision %d (%v)", rev(), err)
	}
	mustAdd(t, db, Message{ConversationID: c.ID, ParentID: m1.ID, Role: "assistant", Text: "c"})
	mustAdd(t, db, Message{ConversationID: c.ID, ParentID: m1.ID, Role: "assistant", Text: "d"})
	if _, rv, err := db.SwitchBranchAt(ctx, c.ID, &Revision{N: 7}, 1, -1); err != nil || rv.N != 8 || rev() != 8 {
		t.Fatalf("a branch switch: %+v, revision %d (%v)", rv, rev(), err)
	}
	if _, _, err := db.SwitchBranchAt(ctx, c.ID, &Revision{N: 7}, 1, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("a switch at an old revision: %v, want a conflict", err)
	}
	if _, _, err := db.DeleteBranchAt(ctx, c.ID, &Revision{N: 7}, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("a branch delete at an old revision: %v, want a conflict", err)
	}
}

// Undo with Discard deletes what it took back instead of keeping it as a
// branch; a message another branch still hangs from stays.
func TestSaveTranscriptDiscardRemovesWhatWasUndone(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{Title: DefaultTitle})
	full := []Message{turn("user", "1", 1), turn("assistant", "one", 2), turn("user", "2", 3), turn("assistant", "two", 4)}
	if err := db.SaveTranscript(ctx, c.ID, full, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveTranscriptAs(ctx, c.ID, SaveOptions{Discard: true}, full[:2], ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Messages(ctx, c.ID); !reflect.DeepEqual(texts(got), texts(full[:2])) {
		t.Fatalf("after undoing a turn the tree holds %q", texts(got))
	}
	// Undo tokens: the reply cut shorter replaces the longer one.
	cut := []Message{full[0], turn("assistant", "on", 2)}
	if _, err := db.SaveTranscriptAs(ctx, c.ID, SaveOptions{Discard: true}, cut, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Messages(ctx, c.ID); !reflect.DeepEqual(texts(got), texts(cut)) {
		t.Fatalf("after undoing tokens the tree holds %q", texts(got))
	}
	bs, err := db.Branches(ctx, c.ID)
	if err != nil || bs[1] != (Branch{K: 1, N: 1}) {
		t.Fatalf("branches %v (%v), want no alternatives", bs, err)
	}
	// A regeneration keeps the old reply as a branch; undoing the turn
	// then leaves the user message, which the other reply still hangs from.
	regen := []Message{full[0], turn("assistant", "uno", 5)}
	if err := db.SaveTranscript(ctx, c.ID, regen, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SaveTranscriptAs(ctx, c.ID, SaveOptions{Discard: true}, nil, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Messages(ctx, c.ID); !reflect.DeepEqual(texts(got), []string{"user:1", "assistant:on"}) {
		t.Fatalf("after undoing the regenerated turn the tree holds %q", texts(got))
	}
}
