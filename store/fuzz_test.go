package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fuzzing"
)

// importSeeds are a real export (ExportJSON of a branchy conversation) and
// hand-made files around ImportJSON's checks, each well under 2 KB.
func importSeeds(f *testing.F) [][]byte {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(f.TempDir(), "seed.db"), Options{Now: newClock().Now})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	c := mustConv(f, db, Conversation{Title: "Branches", Settings: json.RawMessage(`{"temperature":0.6}`)})
	sys := mustAdd(f, db, Message{ConversationID: c.ID, Role: "system", Text: "Be terse.", TokenIDs: []int32{1, 2}, PosEnd: 2})
	u := mustAdd(f, db, Message{ConversationID: c.ID, ParentID: sys.ID, Role: "user", Text: "2+2?", TokenIDs: []int32{3}, PosStart: 2, PosEnd: 3})
	mustAdd(f, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "4", TokenIDs: []int32{4}, PosStart: 3, PosEnd: 4,
		Stats: json.RawMessage(`{"decode_tok_s":12.5}`)})
	mustAdd(f, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "Four", Partial: true, PosStart: 3, PosEnd: 4})
	var real bytes.Buffer
	if err := db.ExportJSON(ctx, &real); err != nil {
		f.Fatal(err)
	}
	conv := func(edit func(*ExportConversation)) []byte {
		c := ExportConversation{UID: "u1", Title: "t", Settings: json.RawMessage(`{}`), CurrentLeaf: 2, Messages: []ExportMessage{
			{ID: 1, Role: "user", Text: "a", TokenIDs: []int32{1}, PosEnd: 1},
			{ID: 2, Parent: 1, Role: "assistant", Text: "b", PosStart: 1, PosEnd: 2, Stats: json.RawMessage(`{"x":1}`)}}}
		edit(&c)
		b, _ := json.Marshal(ExportFile{Format: ExportFormat, Version: ExportVersion,
			Conversations: []ExportConversation{{Title: "fine"}, c}}) // the first gets a new uid

		return b
	}
	return [][]byte{
		real.Bytes(),
		conv(func(*ExportConversation) {}),
		bytes.Replace(conv(func(c *ExportConversation) { c.UID = "dup" }), []byte(`"uid":""`), []byte(`"uid":"dup"`), 1), // twice in one file
		conv(func(c *ExportConversation) { c.UID = "" }),                                                                 // a uid is made
		conv(func(c *ExportConversation) { c.Messages[0].Parent = 2 }),                                                   // forward reference
		conv(func(c *ExportConversation) { c.Messages[1].ID = 1 }),                                                       // repeated id
		conv(func(c *ExportConversation) { c.Messages[1].Role = "tool" }),                                                // role
		conv(func(c *ExportConversation) { c.Messages[1].PosEnd = -3 }),                                                  // range
		conv(func(c *ExportConversation) { c.CurrentLeaf = 7 }),
		conv(func(c *ExportConversation) { c.Settings = json.RawMessage(`[1,`) }),
		conv(func(c *ExportConversation) { c.Messages[1].Stats = json.RawMessage(`"x"`) }),
		conv(func(c *ExportConversation) { c.ModelSHA256 = "feed"; c.ModelName = "m" }),
		[]byte(`{"format":"etchat-conversations","version":99}`),
		[]byte(`{"format":"chatgpt","version":1,"conversations":[]}`),
		[]byte(`{"format":"etchat-conversations","version":1,"conversations":[{"messages":[{"id":1,"role":"user","text":"\ud800"}]}]}`),
	}
}

// rows counts what an import writes.
func rows(t *testing.T, db *DB) [4]int64 {
	var n [4]int64
	err := db.sql.QueryRow(`SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages),
		(SELECT coalesce(max(id), 0) FROM conversations), (SELECT coalesce(max(id), 0) FROM messages)`).Scan(&n[0], &n[1], &n[2], &n[3])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// FuzzImport: `etchat history import` of any bytes either imports every
// conversation of the file (and then exactly its conversations and
// messages are added) or fails with ErrInvalid or ErrConflict having
// written nothing. One database per worker: imports accumulate, so uids
// seen before conflict, as a user's second import would.
func FuzzImport(f *testing.F) {
	for _, b := range importSeeds(f) {
		f.Add(b)
	}
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"), Options{Now: newClock().Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	if _, err := db.UpsertModel(ctx, Model{Path: "/m.pte", SHA256: "feed", DisplayName: "M"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.Time(len(data))()
		before := rows(t, db)
		got, err := db.ImportJSON(ctx, bytes.NewReader(data))
		after := rows(t, db)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrConflict) {
				t.Fatalf("import failed with neither ErrInvalid nor ErrConflict: %v", err)
			}
			if after != before {
				t.Fatalf("a failed import (%v) wrote: rows %v → %v", err, before, after)
			}
			return
		}
		var file ExportFile
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&file); err != nil {
			t.Fatalf("imported a file that does not decode: %v", err)
		}
		msgs := 0
		for _, c := range file.Conversations {
			msgs += len(c.Messages)
		}
		if len(got) != len(file.Conversations) || after[0]-before[0] != int64(len(got)) || after[1]-before[1] != int64(msgs) {
			t.Fatalf("imported %d conversations, %d messages: rows %v → %v", len(got), msgs, before, after)
		}
		for _, c := range got {
			if strings.TrimSpace(c.UID) == "" {
				t.Fatalf("imported conversation %d has no uid", c.ID)
			}
		}
	})
}
