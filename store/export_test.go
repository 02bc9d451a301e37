package store

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// seedBranchy makes a conversation with a regenerated reply, an edited
// question, a partial reply, stats and settings.
func seedBranchy(t *testing.T, db *DB) Conversation {
	t.Helper()
	ctx := context.Background()
	m, err := db.UpsertModel(ctx, Model{Path: "/m.pte", SHA256: "feed", DisplayName: "Qwen"})
	if err != nil {
		t.Fatal(err)
	}
	c := mustConv(t, db, Conversation{ModelID: m.ID, Title: "Branches", Settings: json.RawMessage(`{"cache":{"policy":"ring","max":4096},"temperature":0.6}`)})
	sys := mustAdd(t, db, Message{ConversationID: c.ID, Role: "system", Text: "You are terse.", TokenIDs: []int32{1, 2}, PosEnd: 2})
	u := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: sys.ID, Role: "user", Text: "2+2?", TokenIDs: []int32{3}, PosStart: 2, PosEnd: 3})
	mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "4", TokenIDs: []int32{4, 151645}, PosStart: 3, PosEnd: 5,
		Stats: json.RawMessage(`{"decode_tok_s":12.5}`)})
	a2 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "Four.\n", TokenIDs: []int32{5, 6}, PosStart: 3, PosEnd: 5})
	mustAdd(t, db, Message{ConversationID: c.ID, ParentID: sys.ID, Role: "user", Text: "3+3?", TokenIDs: []int32{7}, PosStart: 2, PosEnd: 3})
	u2 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: a2.ID, Role: "user", Text: "and 5+5?", PosStart: 5, PosEnd: 5})
	mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u2.ID, Role: "assistant", Text: "1", TokenIDs: []int32{8}, Partial: true, PosStart: 5, PosEnd: 6})
	c, err = db.GetConversation(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, "")
	c := seedBranchy(t, src)
	mustConv(t, src, Conversation{Title: "empty one"})
	var a bytes.Buffer
	if err := src.ExportJSON(ctx, &a); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, "")
	// A model with the same hash in the other library gets linked.
	lm, _ := dst.UpsertModel(ctx, Model{Path: "/elsewhere/m.pte", SHA256: "feed", DisplayName: "Qwen local"})
	got, err := dst.ImportJSON(ctx, bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ModelID != lm.ID || got[0].Messages != c.Messages || got[0].ModelName != "Qwen" {
		t.Fatalf("imported %+v", got)
	}
	var b bytes.Buffer
	if err := dst.ExportJSON(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("export → import → export differs:\n%s\n---\n%s", a.String(), b.String())
	}
	// The imported conversation continues where the original stopped.
	_, p1, _ := src.CurrentPath(ctx, c.ID)
	_, p2, err := dst.CurrentPath(ctx, got[0].ID)
	if err != nil || len(p1) != len(p2) || len(p1) != 5 {
		t.Fatalf("paths %d / %d, %v", len(p1), len(p2), err)
	}
	for i := range p1 {
		x, y := p1[i], p2[i]
		x.ID, x.ParentID, x.ConversationID, y.ID, y.ParentID, y.ConversationID = 0, 0, 0, 0, 0, 0
		if !reflect.DeepEqual(x, y) {
			t.Errorf("message %d: %+v != %+v", i, x, y)
		}
	}

	// Importing again into the same library is refused and adds nothing.
	if _, err := dst.ImportJSON(ctx, bytes.NewReader(a.Bytes())); !errors.Is(err, ErrConflict) {
		t.Errorf("second import: %v", err)
	}
	if all, _ := dst.ListConversations(ctx, 0); len(all) != 2 {
		t.Errorf("refused import left %d conversations", len(all))
	}
	// One conversation by id.
	var one bytes.Buffer
	if err := src.ExportJSON(ctx, &one, c.ID); err != nil {
		t.Fatal(err)
	}
	var f ExportFile
	if err := json.Unmarshal(one.Bytes(), &f); err != nil || len(f.Conversations) != 1 || f.Conversations[0].UID != c.UID || len(f.Conversations[0].Messages) != 7 {
		t.Errorf("single export %+v, %v", f, err)
	}
	if err := src.ExportJSON(ctx, &one, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("export of a missing conversation: %v", err)
	}
}

func TestImportRejectsBadFiles(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	valid := func(edit func(*ExportConversation)) string {
		c := ExportConversation{UID: "u1", Title: "t", Messages: []ExportMessage{
			{ID: 1, Role: "user", Text: "a"}, {ID: 2, Parent: 1, Role: "assistant", Text: "b"}}, CurrentLeaf: 2}
		edit(&c)
		b, _ := json.Marshal(ExportFile{Format: ExportFormat, Version: 1, Conversations: []ExportConversation{{UID: "ok", Title: "fine"}, c}})
		return string(b)
	}
	for name, in := range map[string]string{
		"not json":      "hello",
		"truncated":     valid(func(*ExportConversation) {})[:60],
		"other format":  `{"format":"chatgpt","version":1}`,
		"future":        `{"format":"etchat-conversations","version":99}`,
		"forward ref":   valid(func(c *ExportConversation) { c.Messages[0].Parent = 2 }),
		"dup id":        valid(func(c *ExportConversation) { c.Messages[1].ID = 1 }),
		"bad role":      valid(func(c *ExportConversation) { c.Messages[1].Role = "wizard" }),
		"bad range":     valid(func(c *ExportConversation) { c.Messages[1].PosEnd = -3 }),
		"bad leaf":      valid(func(c *ExportConversation) { c.CurrentLeaf = 7 }),
		"bad settings":  valid(func(c *ExportConversation) { c.Settings = json.RawMessage(`{`) }),
		"zero id":       valid(func(c *ExportConversation) { c.Messages[0].ID = 0 }),
		"missing parnt": valid(func(c *ExportConversation) { c.Messages[1].Parent = 5 }),
	} {
		_, err := db.ImportJSON(ctx, strings.NewReader(in))
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if all, _ := db.ListConversations(ctx, 0); len(all) != 0 {
		t.Errorf("rejected imports left %d conversations", len(all))
	}
	if _, err := db.ImportJSON(ctx, strings.NewReader(valid(func(*ExportConversation) {}))); err != nil {
		t.Errorf("the valid file: %v", err)
	}
}

func TestExportMarkdown(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := seedBranchy(t, db)
	var b bytes.Buffer
	if err := db.ExportMarkdown(ctx, &b, c.ID); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"# Branches", "Model: Qwen (sha256 feed)", "**System**", "You are terse.", "**User** _(1 other version not shown)_\n\n2+2?",
		"**Assistant** _(1 other version not shown)_\n\nFour.\n\n", "and 5+5?", "_(incomplete)_"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "3+3?") || strings.Contains(md, "\n4\n") {
		t.Errorf("markdown shows a branch that is not current:\n%s", md)
	}
}

func TestExportRuns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	st := Stats{InferenceStartMs: 0, PromptEvalEndMs: 100, FirstTokenMs: 110, InferenceEndMs: 1100, NumPromptTokens: 64, NumGeneratedTokens: 100}
	r1, err := db.InsertRun(ctx, Run{Kind: "bench", ModelName: "Llama, 1B", ModelSHA256: "aa", Stats: st, Memory: Memory{Peak: 42},
		Config: json.RawMessage(`{"kv":"flat"}`), Started: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}, []Sample{{Stats: st}, {Stats: st}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertRun(ctx, Run{Kind: "chat", ModelSHA256: "bb"}, nil); err != nil {
		t.Fatal(err)
	}
	runs, _ := db.ListRuns(ctx, RunFilter{})
	var b bytes.Buffer
	if err := WriteRunsCSV(&b, runs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 3 || !reflect.DeepEqual(recs[0], RunsCSVHeader) {
		t.Fatalf("csv %v, %v", recs, err)
	}
	row := map[string]string{}
	for i, h := range recs[0] {
		row[h] = recs[2][i] // the older run, r1, comes last
	}
	if row["model_name"] != "Llama, 1B" || row["prefill_tok_s"] != "640" || row["decode_tok_s"] != "100" || row["ttft_ms"] != "110" ||
		row["mem_peak"] != "42" || row["mem_after_load"] != "" || row["repetitions"] != "2" || row["started"] != "2026-01-02T03:04:05.006Z" ||
		row["config"] != `{"kv":"flat"}` {
		t.Errorf("csv row %v", row)
	}
	var j bytes.Buffer
	if err := db.ExportRunsJSON(ctx, &j, RunFilter{ModelSHA: "aa"}); err != nil {
		t.Fatal(err)
	}
	var back []RunExport
	if err := json.Unmarshal(j.Bytes(), &back); err != nil || len(back) != 1 {
		t.Fatalf("runs json %s, %v", j.String(), err)
	}
	want, ws, _ := db.GetRun(ctx, r1.ID)
	if !reflect.DeepEqual(back[0].Samples, ws) || back[0].Run.Stats != want.Stats || back[0].PrefillTokS != 640 || !back[0].Started.Equal(want.Started) {
		t.Errorf("runs json round trip: %+v vs %+v", back[0], want)
	}
}
