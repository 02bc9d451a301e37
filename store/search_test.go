package store

import (
	"context"
	"errors"
	"testing"
)

// searchFixture is two models with two conversations each, and a branch:
// conversation "Harbour" has a regenerated reply whose older alternative
// alone mentions "lighthouse".
func searchFixture(t *testing.T, db *DB) (m1, m2 Model, ids map[string]int64) {
	t.Helper()
	ctx := context.Background()
	var err error
	if m1, err = db.UpsertModel(ctx, Model{Path: "/m/one.pte", DisplayName: "one"}); err != nil {
		t.Fatal(err)
	}
	if m2, err = db.UpsertModel(ctx, Model{Path: "/m/two.pte", DisplayName: "two"}); err != nil {
		t.Fatal(err)
	}
	ids = map[string]int64{}
	add := func(m Model, title string, texts ...string) int64 {
		c, err := db.CreateConversation(ctx, Conversation{ModelID: m.ID, Title: title})
		if err != nil {
			t.Fatal(err)
		}
		sys, err := db.AddMessage(ctx, Message{ConversationID: c.ID, Role: "system", Text: "You are a sailor."})
		if err != nil {
			t.Fatal(err)
		}
		parent := sys.ID
		for i, text := range texts {
			msg, err := db.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: parent, Role: []string{"user", "assistant"}[i%2], Text: text})
			if err != nil {
				t.Fatal(err)
			}
			parent = msg.ID
		}
		ids[title] = c.ID
		return parent
	}
	add(m1, "Sea voyages", "Tell me about ships.", "Ships float on the WIDE sea.")
	last := add(m1, "Harbour", "Where do boats sleep?", "In a harbour, near the 50% lighthouse.")
	// A regeneration: the lighthouse reply becomes the older branch.
	old, err := db.GetMessage(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddMessage(ctx, Message{ConversationID: ids["Harbour"], ParentID: old.ParentID, Role: "assistant", Text: "At the quay."}); err != nil {
		t.Fatal(err)
	}
	add(m2, "Mountains", "How high is the peak?", "Very high.")
	add(m2, "Cooking", "A sailor's stew?", "Fish and potatoes.")
	return m1, m2, ids
}

func hitTitles(hs []ConversationHit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Title)
	}
	return out
}

func TestSearchConversations(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	m1, m2, _ := searchFixture(t, db)
	for _, tc := range []struct {
		query   string
		model   int64
		want    []string
		snippet string // of the first hit
	}{
		{"", 0, []string{"Cooking", "Mountains", "Harbour", "Sea voyages"}, ""},
		{"", m2.ID, []string{"Cooking", "Mountains"}, ""},
		{"VOYAGE", 0, []string{"Sea voyages"}, ""},                                   // the title, any case
		{"wide sea", m1.ID, []string{"Sea voyages"}, "Ships float on the WIDE sea."}, // a reply's text
		{"lighthouse", 0, []string{"Harbour"}, "In a harbour, near the 50% lighthouse."},
		{"50%", 0, []string{"Harbour"}, "In a harbour, near the 50% lighthouse."}, // % is no wildcard
		{"5_%", 0, nil, ""},
		{"sailor", 0, []string{"Cooking"}, "A sailor's stew?"}, // the system prompt is not searched
		{"peak", m1.ID, nil, ""},
		{"  ships  ", 0, []string{"Sea voyages"}, "Tell me about ships."},
	} {
		hs, err := db.SearchConversations(ctx, tc.query, tc.model)
		if err != nil {
			t.Fatal(err)
		}
		got := hitTitles(hs)
		if len(got) != len(tc.want) {
			t.Errorf("%q in %d: %v, want %v", tc.query, tc.model, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q in %d: %v, want %v", tc.query, tc.model, got, tc.want)
			}
		}
		if len(hs) > 0 && hs[0].Snippet != tc.snippet {
			t.Errorf("%q: snippet %q, want %q", tc.query, hs[0].Snippet, tc.snippet)
		}
	}
	hs, _ := db.SearchConversations(ctx, "", 0)
	if hs[0].ModelPath != "/m/two.pte" || hs[3].ModelPath != "/m/one.pte" || hs[0].ModelName != "two" {
		t.Errorf("model of the hits: %+v", hs)
	}
	// A conversation whose model left the library is still found, without
	// a path.
	if err := db.RemoveModel(ctx, m2.ID); err != nil {
		t.Fatal(err)
	}
	hs, err := db.SearchConversations(ctx, "peak", 0)
	if err != nil || len(hs) != 1 || hs[0].ModelPath != "" || hs[0].ModelName != "two" {
		t.Errorf("after removing the model: %+v, %v", hs, err)
	}
}

func TestSnippet(t *testing.T) {
	long := "Once upon a time there was a very long sentence about the Ocean and all the fish in it, and more."
	for _, tc := range []struct{ text, q, want string }{
		{long, "ocean", "…long sentence about the Ocean and all the fish in it,…"},
		{"Ärger im\nÜberfluss", "über", "Ärger im Überfluss"},
		{"short", "x", ""},
		{"short", "", ""},
	} {
		if got := Snippet(tc.text, tc.q, 24); got != tc.want {
			t.Errorf("Snippet(%q, %q) = %q, want %q", tc.text, tc.q, got, tc.want)
		}
	}
}

func TestDeleteBranch(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	_, _, ids := searchFixture(t, db)
	id := ids["Harbour"]
	_, path, err := db.CurrentPath(ctx, id)
	if err != nil || len(path) != 3 || path[2].Text != "At the quay." {
		t.Fatalf("path %+v, %v", path, err)
	}
	if _, err := db.DeleteBranch(ctx, id, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("deleting a message without alternatives: %v", err)
	}
	if _, err := db.DeleteBranch(ctx, id, 3); !errors.Is(err, ErrInvalid) {
		t.Errorf("deleting past the path: %v", err)
	}
	preview, err := db.PathAfterDeleteBranch(ctx, id, 2)
	if err != nil || len(preview) != 3 || preview[2].Text != "In a harbour, near the 50% lighthouse." {
		t.Fatalf("the path after deleting, before: %+v, %v", preview, err)
	}
	if all, _ := db.Messages(ctx, id); len(all) != 4 {
		t.Errorf("the preview deleted: %d messages left", len(all))
	}
	if _, err := db.PathAfterDeleteBranch(ctx, id, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("the preview of a message without alternatives: %v", err)
	}
	got, err := db.DeleteBranch(ctx, id, 2)
	if err != nil || len(got) != 3 || got[2].Text != "In a harbour, near the 50% lighthouse." {
		t.Fatalf("after deleting the newer reply: %+v, %v", got, err)
	}
	_, cur, _ := db.CurrentPath(ctx, id)
	if len(cur) != 3 || cur[2].ID != got[2].ID || cur[2].ID != preview[2].ID {
		t.Errorf("the current path is not the one returned: %+v", cur)
	}
	all, _ := db.Messages(ctx, id)
	if len(all) != 3 {
		t.Errorf("%d messages left, want 3", len(all))
	}
	if br, _ := db.Branches(ctx, id); br[2].N != 1 {
		t.Errorf("branches after: %+v", br)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}
