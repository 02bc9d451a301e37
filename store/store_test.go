package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock ticks one second per reading, from a fixed start.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func openTest(t testing.TB, path string) *DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "etchat.db")
	}
	db, err := Open(context.Background(), path, Options{Now: newClock().Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDefaultPath(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	got, err := DefaultPath(env("ETCHAT_DB", "/x/y.db", "HOME", "/home/u", "AppData", `C:\a`))
	if err != nil || got != "/x/y.db" {
		t.Errorf("ETCHAT_DB: got %q, %v; want /x/y.db", got, err)
	}
	want := map[string]string{
		"linux":   filepath.Join("/home/u", ".config", "etchat", "etchat.db"),
		"darwin":  filepath.Join("/home/u", "Library", "Application Support", "etchat", "etchat.db"),
		"windows": filepath.Join(`C:\a`, "etchat", "etchat.db"),
	}
	defer func(g string) { goos = g }(goos)
	for g, w := range want {
		goos = g
		got, err := DefaultPath(env("HOME", "/home/u", "AppData", `C:\a`))
		if err != nil || got != w {
			t.Errorf("%s: got %q, %v; want %q", g, got, err, w)
		}
	}
	goos = "linux"
	if got, _ := DefaultPath(env("HOME", "/home/u", "XDG_CONFIG_HOME", "/xdg")); got != filepath.Join("/xdg", "etchat", "etchat.db") {
		t.Errorf("XDG_CONFIG_HOME ignored: %q", got)
	}
	if _, err := DefaultPath(env()); err == nil || !strings.Contains(err.Error(), "ETCHAT_DB") {
		t.Errorf("no HOME: want an error naming ETCHAT_DB, got %v", err)
	}
}

func TestOpenCreatesPrivateFileAndFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "etchat.db")
	db := openTest(t, path)
	if db.File() != path {
		t.Errorf("File() = %q, want %q", db.File(), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v, want 0600", fi.Mode().Perm())
	}
	v, err := db.Version(context.Background())
	if err != nil || v != SchemaVersion() || v < 2 {
		t.Errorf("Version = %d, %v; want %d", v, err, SchemaVersion())
	}
	var mode string
	if err := db.sql.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v", mode, err)
	}
	var fk, sync int
	if err := db.sql.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d, %v", fk, err)
	}
	if err := db.sql.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Errorf("synchronous %d, %v; want 2 (FULL)", sync, err)
	}
}

func TestCloseCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etchat.db")
	db := openTest(t, path)
	ctx := context.Background()
	if _, err := db.CreateConversation(ctx, Conversation{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("expected a non-empty WAL before close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Errorf("WAL still holds %d bytes after Close", fi.Size())
	}
}

func mustConv(t testing.TB, db *DB, c Conversation) Conversation {
	t.Helper()
	c, err := db.CreateConversation(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustAdd(t testing.TB, db *DB, m Message) Message {
	t.Helper()
	m, err := db.AddMessage(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConversationTreeSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db := openTest(t, path)
	model, err := db.UpsertModel(ctx, Model{Path: "/m/llama.pte", SHA256: "abcd", DisplayName: "Llama"})
	if err != nil {
		t.Fatal(err)
	}
	c := mustConv(t, db, Conversation{ModelID: model.ID, Title: "t", Settings: json.RawMessage(`{"cache":"ring","temperature":0.7}`)})
	if c.ModelName != "Llama" || c.ModelSHA256 != "abcd" || c.UID == "" || c.CurrentLeaf != 0 {
		t.Fatalf("created %+v", c)
	}
	sys := mustAdd(t, db, Message{ConversationID: c.ID, Role: "system", Text: "be brief", TokenIDs: []int32{1, 2, 3}, PosEnd: 3})
	u1 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: sys.ID, Role: "user", Text: "hi", TokenIDs: []int32{4, 5}, PosStart: 3, PosEnd: 5})
	a1 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u1.ID, Role: "assistant", Text: "hello", TokenIDs: []int32{6, 1 << 30, -1}, PosStart: 5, PosEnd: 8,
		Stats: json.RawMessage(`{"decode_tok_s":31.5}`)})
	// Regenerate: a sibling of a1. The leaf moves to it; a1 stays.
	a2 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u1.ID, Role: "assistant", Text: "hey", TokenIDs: []int32{7}, PosStart: 5, PosEnd: 6})
	kids, err := db.Children(ctx, u1.ID)
	if err != nil || len(kids) != 2 || kids[0].ID != a1.ID || kids[1].ID != a2.ID {
		t.Fatalf("Children = %+v, %v", kids, err)
	}
	got, err := db.GetConversation(ctx, c.ID)
	if err != nil || got.CurrentLeaf != a2.ID || got.Messages != 4 {
		t.Fatalf("after regenerate: %+v, %v", got, err)
	}
	if err := db.SetCurrentLeaf(ctx, c.ID, a1.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, path)
	c2, p, err := db.CurrentPath(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c2.CurrentLeaf != a1.ID || string(c2.Settings) != `{"cache":"ring","temperature":0.7}` {
		t.Errorf("reopened conversation %+v", c2)
	}
	want := []Message{sys, u1, a1}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("path after reopen:\n got %+v\nwant %+v", p, want)
	}
	if p[2].TokenIDs[1] != 1<<30 || p[2].TokenIDs[2] != -1 {
		t.Errorf("token ids not kept exactly: %v", p[2].TokenIDs)
	}
	// The other branch is still there.
	p2, err := db.Path(ctx, a2.ID)
	if err != nil || len(p2) != 3 || p2[2].Text != "hey" {
		t.Errorf("Path(a2) = %+v, %v", p2, err)
	}
}

func TestStreamingUpdates(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{})
	u := mustAdd(t, db, Message{ConversationID: c.ID, Role: "user", Text: "q", TokenIDs: []int32{1}, PosEnd: 1})
	a := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Partial: true, PosStart: 1, PosEnd: 1})
	var ids []int32
	for i := range 5 {
		ids = append(ids, int32(100+i))
		a.Text += "w"
		a.TokenIDs, a.PosEnd = ids, 1+len(ids)
		if err := db.UpdateMessage(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	a.Partial = false
	a.Stats = json.RawMessage(`{"n":5}`)
	if err := db.UpdateMessage(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetMessage(ctx, a.ID)
	if err != nil || got.Text != "wwwww" || !reflect.DeepEqual(got.TokenIDs, ids) || got.PosEnd != 6 || got.Partial || string(got.Stats) != `{"n":5}` {
		t.Errorf("after stream: %+v, %v", got, err)
	}
	if !got.Updated.After(got.Created) {
		t.Errorf("Updated %v not after Created %v", got.Updated, got.Created)
	}
	if err := db.UpdateMessage(ctx, Message{ID: 9999}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}
	if err := db.UpdateMessage(ctx, Message{ID: a.ID, PosStart: 4, PosEnd: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad range: %v", err)
	}
	other := mustConv(t, db, Conversation{})
	if err := db.UpdateMessage(ctx, Message{ID: a.ID, ConversationID: other.ID, Text: "x"}); !errors.Is(err, ErrConflict) {
		t.Errorf("update through the wrong conversation: %v", err)
	}
	if got2, _ := db.GetMessage(ctx, a.ID); got2.Text != "wwwww" {
		t.Errorf("a refused update changed the message: %q", got2.Text)
	}
}

func TestMessageBadInput(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c1 := mustConv(t, db, Conversation{})
	c2 := mustConv(t, db, Conversation{})
	m1 := mustAdd(t, db, Message{ConversationID: c1.ID, Role: "user", Text: "a"})
	cases := []struct {
		name string
		m    Message
		want error
	}{
		{"bad role", Message{ConversationID: c1.ID, Role: "robot"}, ErrInvalid},
		{"bad stats", Message{ConversationID: c1.ID, Role: "user", Stats: json.RawMessage(`{`)}, ErrInvalid},
		{"negative pos", Message{ConversationID: c1.ID, Role: "user", PosStart: -1}, ErrInvalid},
		{"no conversation", Message{ConversationID: 999, Role: "user"}, ErrNotFound},
		{"no parent", Message{ConversationID: c1.ID, ParentID: 999, Role: "user"}, ErrNotFound},
		{"parent elsewhere", Message{ConversationID: c2.ID, ParentID: m1.ID, Role: "user"}, ErrConflict},
	}
	for _, tc := range cases {
		if _, err := db.AddMessage(ctx, tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		} else if Explain(err) == "" {
			t.Errorf("%s: empty explanation", tc.name)
		}
	}
	for _, c := range []Conversation{c1, c2} {
		if got, _ := db.GetConversation(ctx, c.ID); got.Messages != map[int64]int{c1.ID: 1, c2.ID: 0}[c.ID] {
			t.Errorf("refused adds changed conversation %d: %d messages", c.ID, got.Messages)
		}
	}
	if err := db.SetCurrentLeaf(ctx, c2.ID, m1.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("leaf from another conversation: %v", err)
	}
	if _, err := db.Path(ctx, 12345); !errors.Is(err, ErrNotFound) {
		t.Errorf("Path of missing leaf: %v", err)
	}
	if _, err := db.CreateConversation(ctx, Conversation{ModelID: 77}); !errors.Is(err, ErrNotFound) {
		t.Errorf("conversation with missing model: %v", err)
	}
	if _, err := db.CreateConversation(ctx, Conversation{Settings: json.RawMessage("nope")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad settings: %v", err)
	}
	if _, err := db.CreateConversation(ctx, Conversation{UID: c1.UID}); !errors.Is(err, ErrConflict) {
		t.Errorf("duplicate uid: %v", err)
	}
	for name, err := range map[string]error{
		"rename":   db.RenameConversation(ctx, 999, "x"),
		"delete":   db.DeleteConversation(ctx, 999),
		"settings": db.SetConversationSettings(ctx, 999, nil),
		"leaf":     db.SetCurrentLeaf(ctx, 999, 0),
		"delmsg":   db.DeleteMessage(ctx, 999),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of missing: %v", name, err)
		}
	}
}

func TestDeleteMessageMovesLeaf(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{})
	u := mustAdd(t, db, Message{ConversationID: c.ID, Role: "user"})
	a1 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "1"})
	a2 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "2"})
	u2 := mustAdd(t, db, Message{ConversationID: c.ID, ParentID: a2.ID, Role: "user"})
	// Deleting the other branch leaves the leaf alone.
	if err := db.DeleteMessage(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.GetConversation(ctx, c.ID); got.CurrentLeaf != u2.ID || got.Messages != 3 {
		t.Errorf("after deleting a side branch: %+v", got)
	}
	// Deleting above the leaf moves it to the deleted message's parent.
	if err := db.DeleteMessage(ctx, a2.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.GetConversation(ctx, c.ID); got.CurrentLeaf != u.ID || got.Messages != 1 {
		t.Errorf("after deleting the leaf's branch: %+v", got)
	}
	if err := db.DeleteConversation(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	var n int
	db.sql.QueryRow("SELECT count(*) FROM messages").Scan(&n)
	if n != 0 {
		t.Errorf("%d messages outlived their conversation", n)
	}
}

func TestModels(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	m, err := db.UpsertModel(ctx, Model{Path: "/a.pte", SHA256: "11", Size: 10, ModTime: time.UnixMilli(5000), DisplayName: "A", Kind: "llm",
		Metadata: json.RawMessage(`{"layers":2}`), TokenizerPath: "/tok.json", Template: "llama3"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == 0 || m.Added.IsZero() || !m.LastUsed.IsZero() || string(m.Metadata) != `{"layers":2}` || !m.ModTime.Equal(time.UnixMilli(5000)) {
		t.Errorf("inserted %+v", m)
	}
	m2, err := db.UpsertModel(ctx, Model{Path: "/a.pte", SHA256: "22", DisplayName: "A2"})
	if err != nil || m2.ID != m.ID || m2.SHA256 != "22" || !m2.Added.Equal(m.Added) || string(m2.Metadata) != "{}" {
		t.Errorf("upsert same path: %+v, %v", m2, err)
	}
	if got, err := db.ModelByPath(ctx, "/a.pte"); err != nil || got.ID != m.ID || got.SHA256 != "22" {
		t.Errorf("ModelByPath = %+v, %v", got, err)
	}
	if _, err := db.ModelByPath(ctx, "/nope.pte"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ModelByPath(missing) = %v", err)
	}
	if got, err := db.GetModel(ctx, m.ID); err != nil || got.Path != "/a.pte" {
		t.Errorf("GetModel = %+v, %v", got, err)
	}
	b, _ := db.UpsertModel(ctx, Model{Path: "/b.pte", DisplayName: "B"})
	if err := db.TouchModel(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListModels(ctx)
	if err != nil || len(list) != 2 || list[0].ID != b.ID {
		t.Errorf("ListModels = %+v, %v (want the used one first)", list, err)
	}
	if _, err := db.UpsertModel(ctx, Model{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty path: %v", err)
	}
	if _, err := db.UpsertModel(ctx, Model{Path: "/c", Metadata: json.RawMessage("{x")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad metadata: %v", err)
	}
	c := mustConv(t, db, Conversation{ModelID: m.ID})
	mustAdd(t, db, Message{ConversationID: c.ID, Role: "user", Text: "keep me"})
	if got, _ := db.ListConversations(ctx, m.ID); len(got) != 1 {
		t.Errorf("ListConversations(model) = %d", len(got))
	}
	if err := db.RemoveModel(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveModel(ctx, m.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second remove: %v", err)
	}
	got, err := db.GetConversation(ctx, c.ID)
	if err != nil || got.ModelID != 0 || got.ModelName != "A2" || got.Messages != 1 {
		t.Errorf("conversation after its model was removed: %+v, %v", got, err)
	}
}

func TestRuns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "")
	st := Stats{ModelLoadStartMs: 1000, ModelLoadEndMs: 1500, InferenceStartMs: 2000, PromptEvalEndMs: 2500, FirstTokenMs: 2520,
		InferenceEndMs: 4500, AggregateSamplingTimeMs: 10, NumPromptTokens: 100, NumGeneratedTokens: 50}
	samples := []Sample{{Stats: st, TokS: 10}, {Stats: st, TokS: 20}, {Stats: st, TokS: 30, MemPeak: 1 << 30}}
	r, err := db.InsertRun(ctx, Run{Kind: "bench", Engine: "cpu", ModelSHA256: "aa11", ModelName: "Llama", Stats: st,
		Memory: Memory{AfterLoad: 1, Peak: 1 << 33}, Bench: BenchTest{NPrompt: 100, NGen: 50, NDepth: 0},
		Config: json.RawMessage(`{"threads":2}`)}, samples)
	if err != nil {
		t.Fatal(err)
	}
	if r.PrefillTokS != 200 || r.DecodeTokS != 25 || r.TTFTMs != 520 {
		t.Errorf("derived: prefill %v decode %v ttft %v; want 200, 25, 520", r.PrefillTokS, r.DecodeTokS, r.TTFTMs)
	}
	if r.Bench.Repetitions != 3 || r.Bench.AvgTokS != 20 || r.Bench.StddevTokS != 10 {
		t.Errorf("bench summary %+v; want 3 reps, avg 20, stddev 10", r.Bench)
	}
	if r.Started.IsZero() || string(r.Machine) != "{}" || r.Memory.AfterPrefill != 0 || r.Memory.Peak != 1<<33 {
		t.Errorf("stored run %+v", r)
	}
	got, gs, err := db.GetRun(ctx, r.ID)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("GetRun = %+v, %v; want %+v", got, err, r)
	}
	if len(gs) != 3 || gs[0].Rep != 1 || gs[2].Rep != 3 || gs[2].MemPeak != 1<<30 || gs[1].TokS != 20 || gs[0].PrefillTokS != 200 || gs[0].Stats != st {
		t.Errorf("samples %+v", gs)
	}
	if _, err := db.InsertRun(ctx, Run{Kind: "chat", ModelSHA256: "bb22", ModelName: "Qwen", Started: time.UnixMilli(1)}, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    RunFilter
		want int
	}{
		{RunFilter{}, 2},
		{RunFilter{ModelSHA: "aa11"}, 1},
		{RunFilter{Model: "aa"}, 1},
		{RunFilter{Model: "qwen"}, 1},
		{RunFilter{Kind: "chat"}, 1},
		{RunFilter{Since: time.UnixMilli(2)}, 1},
		{RunFilter{Limit: 1}, 1},
		{RunFilter{Model: "zz"}, 0},
	} {
		rs, err := db.ListRuns(ctx, tc.f)
		if err != nil || len(rs) != tc.want {
			t.Errorf("ListRuns(%+v) = %d, %v; want %d", tc.f, len(rs), err, tc.want)
		}
	}
	if _, err := db.ListRuns(ctx, RunFilter{Kind: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad kind filter: %v", err)
	}
	if _, err := db.InsertRun(ctx, Run{Kind: "x"}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad kind: %v", err)
	}
	if _, err := db.InsertRun(ctx, Run{Kind: "bench"}, []Sample{{Rep: 1}, {Rep: 1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("repeated rep: %v", err)
	}
	if _, err := db.InsertRun(ctx, Run{Kind: "chat", Config: json.RawMessage("[")}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad config: %v", err)
	}
	if rs, _ := db.ListRuns(ctx, RunFilter{}); len(rs) != 2 {
		t.Errorf("refused inserts left %d runs", len(rs))
	}
	if _, _, err := db.GetRun(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRun missing: %v", err)
	}
	if err := db.DeleteRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	var n int
	db.sql.QueryRow("SELECT count(*) FROM bench_samples").Scan(&n)
	if n != 0 {
		t.Errorf("%d samples outlived their run", n)
	}
}

func TestStatsZeroSpans(t *testing.T) {
	var s Stats
	if s.PrefillTokPerSec() != 0 || s.DecodeTokPerSec() != 0 || s.TTFTMs() != 0 || s.TokPerSec() != 0 {
		t.Errorf("zero stats give nonzero rates")
	}
	s = Stats{InferenceStartMs: 10, PromptEvalEndMs: 5, NumPromptTokens: 3}
	if s.PrefillTokPerSec() != 0 {
		t.Errorf("negative span gives %v", s.PrefillTokPerSec())
	}
}

func TestClockInjected(t *testing.T) {
	db := openTest(t, "")
	c := mustConv(t, db, Conversation{})
	if c.Created.Year() != 2026 || c.Created.Month() != 3 {
		t.Errorf("created %v; want the injected clock's time", c.Created)
	}
}

func TestTokenBlob(t *testing.T) {
	ids := []int32{0, 1, 255, 256, 151645, 1<<31 - 1, -5}
	b := encodeTokens(ids)
	if len(b) != 4*len(ids) || b[8] != 255 || b[12] != 0 || b[13] != 1 {
		t.Errorf("not little-endian uint32: % x", b)
	}
	got, err := decodeTokens(b)
	if err != nil || !reflect.DeepEqual(got, ids) {
		t.Errorf("round trip %v, %v", got, err)
	}
	if _, err := decodeTokens(b[:5]); err == nil {
		t.Errorf("a ragged blob decoded")
	}
	if encodeTokens(nil) != nil {
		t.Errorf("no tokens should be NULL")
	}
}

func TestResolvePath(t *testing.T) {
	env := func(k string) string { return map[string]string{"ETCHAT_DB": "/env.db", "HOME": "/h"}[k] }
	if p, _ := ResolvePath("/flag.db", env); p != "/flag.db" {
		t.Errorf("flag lost to %q", p)
	}
	if p, _ := ResolvePath("", env); p != "/env.db" {
		t.Errorf("env lost to %q", p)
	}
}

func TestReadOnlyFileIsExplained(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "etchat.db")
	db := openTest(t, path)
	db.Close()
	os.Chmod(path, 0o400)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	db2, err := Open(ctx, path, Options{})
	if err == nil {
		defer db2.Close()
		_, err = db2.CreateConversation(ctx, Conversation{})
	}
	if err == nil || !strings.Contains(Explain(err), "read-only") && !strings.Contains(Explain(err), "cannot open") {
		t.Errorf("read-only database: %v", err)
	}
	t.Log(Explain(err))
}
