package runlog

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/inference/stats"
	"etchat/internal/fixtures"
	"etchat/store"
)

func TestRunRecordsAGeneration(t *testing.T) {
	st := inference.Stats{Stats: stats.Stats{InferenceStartMs: 1_700_000_000_000, InferenceEndMs: 1_700_000_002_500, NumPromptTokens: 7, NumGeneratedTokens: 20},
		PrefillRate: 350, DecodeRate: 41.5, TTFTSeconds: 0.125, PeakBytes: 9 << 20}
	st.MemAfterLoad.ActiveBytes, st.MemAfterDecode.ActiveBytes = 5<<20, 8<<20
	r := Run(store.RunChat, Model{Path: "/models/qwen3-0.6b/model.pte", SHA256: "ab12"}, "cpu", st)
	if r.Kind != store.RunChat || r.Engine != "cpu" || r.ModelName != "qwen3-0.6b" || r.ModelSHA256 != "ab12" || r.ModelPath != "/models/qwen3-0.6b/model.pte" {
		t.Errorf("identity: %+v", r)
	}
	if r.TTFTMs != 125 || r.DecodeTokS != 41.5 || r.PrefillTokS != 350 || r.Stats != st.Stats {
		t.Errorf("numbers: %+v", r)
	}
	if r.Memory != (store.Memory{AfterLoad: 5 << 20, AfterDecode: 8 << 20, Peak: 9 << 20}) {
		t.Errorf("memory %+v", r.Memory)
	}
	if !r.Started.Equal(time.UnixMilli(st.InferenceStartMs)) || r.Ended.Sub(r.Started) != 2500*time.Millisecond {
		t.Errorf("times %v … %v", r.Started, r.Ended)
	}
	// It is what the store takes.
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "e.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.InsertRun(context.Background(), r, nil)
	if err != nil || got.ModelName != "qwen3-0.6b" || got.DecodeTokS != 41.5 {
		t.Errorf("stored %+v, %v", got, err)
	}
}

// A transcript goes into the store and comes back as it was shown: roles,
// text, tokens, a partial reply's mark, a reply's stats and stop reason.
func TestTranscriptRoundTrip(t *testing.T) {
	msgs := []inference.Message{
		{Role: inference.RoleSystem, Text: "Be terse.", IDs: []int{1, 2}},
		{Role: inference.RoleUser, Text: "hi", IDs: []int{3}, Start: 2},
		{Role: inference.RoleAssistant, Text: "hello", IDs: []int{4, 5}, Start: 3, StopReason: inference.StopEOS,
			Stats: &inference.Stats{Stats: stats.Stats{NumPromptTokens: 3, NumGeneratedTokens: 2}, PrefillRate: 10, DecodeRate: 4, TTFTSeconds: 0.5}},
		{Role: inference.RoleUser, Text: "more", Start: 5},
		{Role: inference.RoleAssistant, Text: "he", IDs: []int{6}, Start: 5, StopReason: StopIncomplete},
	}
	sms, err := StoreMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !sms[4].Partial || sms[2].Partial || sms[3].TokenIDs != nil {
		t.Errorf("stored form %+v", sms)
	}
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "e.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateConversation(context.Background(), store.Conversation{Title: store.DefaultTitle})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveTranscript(context.Background(), c.ID, sms, Title(msgs)); err != nil {
		t.Fatal(err)
	}
	c, path, err := db.CurrentPath(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := Messages(path); !reflect.DeepEqual(got, msgs) {
		t.Errorf("came back as\n%+v\nwant\n%+v", got, msgs)
	}
	if c.Title != "hi" {
		t.Errorf("title %q, want the first user message", c.Title)
	}
}

func TestShortTitle(t *testing.T) {
	for in, want := range map[string]string{"  what   is\n2+2? ": "what is 2+2?", "": "Untitled",
		"a very long first message that goes on and on past the limit": "a very long first message that goes on and on p…"} {
		if got := ShortTitle(in); got != want {
			t.Errorf("ShortTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// A model in the library keeps the hash it was stored with while the file
// is unchanged, and is named as everywhere else.
func TestSaveModel(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "e.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	path := fixtures.PTE("llama3-tiny-offgraph")
	m, err := SaveModel(ctx, db, path, nil)
	if err != nil || m.Kind != "unreadable" || m.DisplayName != "llama3-tiny-offgraph" || m.SHA256 != "" {
		t.Fatalf("without info: %+v, %v", m, err)
	}
	info, err := modelinfo.Load(path, modelinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := modelinfo.HashFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err = SaveModel(ctx, db, path, info)
	if err != nil || m.Kind != "off-graph" || m.SHA256 != sum || !strings.Contains(string(m.Metadata), fmt.Sprintf(`"max_ctx_len":%d`, info.MaxCtxLen)) {
		t.Fatalf("with info: %+v, %v", m, err)
	}
	// The stored hash is trusted while size and time match: not read again.
	m.SHA256 = "cafe"
	if _, err := db.UpsertModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	if m, err = SaveModel(ctx, db, path, info); err != nil || m.SHA256 != "cafe" {
		t.Errorf("rescanned an unchanged file: %q, %v", m.SHA256, err)
	}
}
