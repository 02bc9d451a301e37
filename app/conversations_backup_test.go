package app

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
	"etchat/store"
)

// chatWithTwo is a chat on the llama3 fixture (real CPU engine and store)
// holding two conversations of one turn each, "first" then "second".
func chatWithTwo(t *testing.T) (*Chat, *[]error, Backend, []int64) {
	t.Helper()
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	c, errs := newTestChat(t, b, inspect(t, path))
	var ids []int64
	for _, text := range []string{"first question", "second question"} {
		run(t, c, errs, c.NewConversation(greedy(6)))
		run(t, c, errs, c.Send(text))
		ids = append(ids, c.State().ConvID)
		if err := c.RenameConversation(context.Background(), c.State().ConvID, text); err != nil {
			t.Fatal(err)
		}
	}
	return c, errs, b, ids
}

func listTitles(st ChatState) string {
	var s []string
	for _, c := range st.Conversations {
		s = append(s, c.Title)
	}
	return strings.Join(s, ",")
}

// TestPinAndListOrder (issue 40 item 5): the list is by last use, a
// pinned conversation first, its row saying so with the time it was last
// used; unpinned it goes back to its place.
func TestPinAndListOrder(t *testing.T) {
	ctx := context.Background()
	c, _, _, ids := chatWithTwo(t)
	if got := listTitles(c.State()); got != "second question,first question" {
		t.Fatalf("by last use: %q", got)
	}
	if err := c.SetPinned(ctx, ids[0], true); err != nil {
		t.Fatal(err)
	}
	st := c.State()
	if got := listTitles(st); got != "first question,second question" {
		t.Errorf("pinned first: %q", got)
	}
	row := ListLabel(st.Conversations[0], false)
	if !st.Conversations[0].Pinned || !strings.HasSuffix(row, " · pinned") || !strings.Contains(row, st.Conversations[0].Updated.Local().Format("Jan 2 15:04")) {
		t.Errorf("pinned row %q", row)
	}
	if r := ListLabel(st.Conversations[1], false); strings.Contains(r, "pinned") || !strings.HasPrefix(r, "second question\n") {
		t.Errorf("unpinned row %q", r)
	}
	if !c.Pinned() == (c.State().ConvID == ids[0]) {
		t.Errorf("Pinned() says %v for the open conversation %d", c.Pinned(), c.State().ConvID)
	}
	if err := c.SetPinned(ctx, ids[0], false); err != nil {
		t.Fatal(err)
	}
	if got := listTitles(c.State()); got != "second question,first question" {
		t.Errorf("unpinned: %q", got)
	}
	if err := c.SetPinned(ctx, 9999, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pinning a missing conversation: %v", err)
	}
}

// TestImportExportAll (issue 40 item 5): Export All writes every
// conversation (Markdown for reading, JSON losslessly); the JSON imports
// into another database whole (the same transcripts, tokens included),
// and what etchat history --import refuses is refused here with its
// reason, importing nothing.
func TestImportExportAll(t *testing.T) {
	ctx := context.Background()
	c, _, _, ids := chatWithTwo(t)
	var md, js bytes.Buffer
	if err := c.ExportAll(ctx, &md, "md"); err != nil {
		t.Fatal(err)
	}
	if err := c.ExportAll(ctx, &js, "json"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"first question", "second question"} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("the Markdown export lacks %q", w)
		}
	}
	if err := c.ExportAll(ctx, &md, "pdf"); err == nil {
		t.Error("an unknown format was accepted")
	}
	// Back into the same database: already here, refused whole.
	before := listTitles(c.State())
	_, err := c.ImportConversations(ctx, bytes.NewReader(js.Bytes()), "all.json")
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "nothing was imported from all.json") {
		t.Errorf("importing conversations already here: %v", err)
	}
	if got := listTitles(c.State()); got != before {
		t.Errorf("a refused import changed the list: %q", got)
	}
	for _, bad := range []string{"{not json", `{"format":"something-else","version":1,"conversations":[]}`} {
		if _, err := c.ImportConversations(ctx, strings.NewReader(bad), "bad.json"); err == nil || !strings.Contains(err.Error(), "nothing was imported") {
			t.Errorf("importing %q: %v", bad, err)
		}
	}
	// Into another database with the same model in its library.
	b2, _ := testBackend(t)
	path2 := modelCopy(t, fixtures.Llama3, true)
	c2, errs2 := newTestChat(t, b2, inspect(t, path2))
	if err := b2.Library.(*storeAdapter).SaveModel(ctx, path2, inspect(t, path2)); err != nil {
		t.Fatal(err)
	}
	run(t, c2, errs2, c2.SetListFilter(ctx, ListFilter{All: true}))
	note, err := c2.ImportConversations(ctx, bytes.NewReader(js.Bytes()), "all.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(note, "Imported 2 conversations:") || !strings.Contains(note, "first question (2 messages") {
		t.Errorf("import note %q", note)
	}
	if got := listTitles(c2.State()); got != "second question,first question" {
		t.Errorf("imported list %q", got)
	}
	for i, id := range ids {
		_, _, want, err := c.store.LoadConversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := c2.State().Conversations[1-i]
		_, _, msgs, err := c2.store.LoadConversation(ctx, got.ID)
		if err != nil || !sameTranscript(msgs, want) {
			t.Errorf("imported %q differs: %v", got.Title, err)
		}
	}
}

// TestBackupWhileReplyingAndRestore (issue 40 item 5): a backup taken
// while a reply streams holds a consistent database (intact; the
// conversation's stored path is the transcript so far, a reply cut short
// flagged partial and a prefix of the final one); restoring it is refused
// while another holder is named or a reply streams, and otherwise brings
// back exactly what it held, closing the open conversation.
func TestBackupWhileReplyingAndRestore(t *testing.T) {
	ctx := context.Background()
	c, errs, _, ids := chatWithTwo(t)
	dir := t.TempDir()
	mid := filepath.Join(dir, "mid-reply.db")
	if err := c.Send("a third question with a longer reply"); err != nil {
		t.Fatal(err)
	}
	if err := c.BackupDatabase(ctx, mid); err != nil {
		t.Fatal(err)
	}
	st := run(t, c, errs, nil)
	final := st.Messages
	bdb, err := store.Open(ctx, mid, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	conv, err := bdb.GetConversation(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	path, err := bdb.Path(ctx, conv.CurrentLeaf)
	bdb.Close()
	if err != nil || len(path) < 2 || len(path) > len(final) {
		t.Fatalf("the backup's path: %d messages (%v), the chat holds %d", len(path), err, len(final))
	}
	for i, m := range path {
		switch {
		case m.Text == final[i].Text:
		case m.Partial && m.Role == "assistant" && i == len(path)-1 && strings.HasPrefix(final[i].Text, m.Text):
		default:
			t.Errorf("backup message %d (%s, partial %v) %q is not the chat's %q", i, m.Role, m.Partial, m.Text, final[i].Text)
		}
	}
	t.Logf("the backup caught %d of %d messages", len(path), len(final))

	whole := filepath.Join(dir, "whole.db")
	if err := c.BackupDatabase(ctx, whole); err != nil {
		t.Fatal(err)
	}
	run(t, c, errs, c.NewConversation(greedy(4)))
	run(t, c, errs, c.Send("after the backup"))
	var blocked *RestoreBlockedError
	if err := c.RestoreDatabase(ctx, whole, "another etchat window has this database open"); !errors.As(err, &blocked) {
		t.Errorf("restore with another holder: %v", err)
	}
	if len(c.State().Conversations) != 3 {
		t.Fatal("a refused restore changed the list")
	}
	if err := c.Send("streaming while a restore is asked"); err != nil {
		t.Fatal(err)
	}
	switch err := c.RestoreDatabase(ctx, whole, ""); {
	case errors.As(err, &blocked):
	case err == nil:
		t.Log("the reply ended before the restore was asked: the refusal while busy was not exercised")
	default:
		t.Errorf("restore during a reply: %v", err)
	}
	run(t, c, errs, nil)
	if err := c.RestoreDatabase(ctx, whole, ""); err != nil {
		t.Fatal(err)
	}
	st = c.State()
	if st.ConvID != 0 || len(st.Messages) != 0 || listTitles(st) != "second question,first question" {
		t.Errorf("after restore: open %d, %d messages, list %q", st.ConvID, len(st.Messages), listTitles(st))
	}
	if err := c.OpenConversation(ids[1]); err != nil {
		t.Fatal(err)
	}
	st = run(t, c, errs, nil)
	if len(st.Messages) != len(final) || st.Messages[len(final)-1].Text != final[len(final)-1].Text {
		t.Errorf("the restored conversation holds %d messages, the backup %d", len(st.Messages), len(final))
	}
}
