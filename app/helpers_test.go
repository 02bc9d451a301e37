package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"etchat/inference"
	"etchat/inference/kvcache"
	"etchat/inference/sampler"
	"etchat/internal/engines"
	"etchat/internal/fixtures"
	"etchat/store"
)

func TestMain(m *testing.M) {
	engines.Register() // as main does
	if err := useTestFonts(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// testDB opens a real store in a temp folder.
func testDB(t *testing.T) (*store.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// testBackend is the real backend (modelinfo, the CPU engine, the store)
// over a fresh database.
func testBackend(t *testing.T) (Backend, *store.DB) {
	t.Helper()
	db, path := testDB(t)
	sa := NewStoreAdapter(db)
	return Backend{Inspector: NewInspector(), Library: sa, Chats: sa, Opener: hermeticOpener(), DBPath: path, DB: db}, db
}

// modelCopy makes a private model folder from a fixture (the .pte linked,
// tokenizer files unpacked) that a test may change.
func modelCopy(t *testing.T, name string, withTokenizer bool) string {
	t.Helper()
	src := fixtures.Unpacked(t, name)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if !withTokenizer && (n == "tokenizer.json" || n == "tokenizer_config.json") {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "model.pte")
}

// inspect reads a model with the real inspector.
func inspect(t *testing.T, path string) *ModelInfo {
	t.Helper()
	m, err := NewInspector().Inspect(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reference is the part of a fixture's reference.json the tests check.
type reference struct {
	Cases []struct {
		Prompt     string `json:"prompt"`
		InputIDs   []int  `json:"input_ids"`
		GreedyIDs  []int  `json:"greedy_ids"`
		GreedyText string `json:"greedy_text"`
	} `json:"cases"`
	Multiturn struct {
		Turn1 struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			InputIDs      []int  `json:"input_ids"`
			GeneratedIDs  []int  `json:"generated_ids"`
			GeneratedText string `json:"generated_text"`
		} `json:"turn1"`
		Turn2 struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			GeneratedIDs  []int  `json:"generated_ids"`
			GeneratedText string `json:"generated_text"`
		} `json:"turn2"`
	} `json:"multiturn"`
}

func llamaReference(t *testing.T) reference {
	var r reference
	fixtures.Reference(t, fixtures.Llama3, &r)
	return r
}

// greedy are settings that reproduce the references: the CPU engine, an
// fp32 cache (the references come from fp32 eager), greedy decoding.
func greedy(n int) Settings {
	s := DefaultSettings("cpu")
	s.StorageDType = "fp32"
	s.MaxNewTokens = n
	s.Temperature, s.TopP = 0, 1
	s.Numerics = "exact" // the references' numerics (fast is the app's default on quantized weights)
	return s
}

// hermeticOpener is the window's opener with an empty environment: the
// native engine is found only where a test says so, not through the
// machine's $ETCHAT_RUNNER (CI sets it for the native tests).
func hermeticOpener() Opener {
	return &engineOpener{getenv: func(string) string { return "" }}
}

// keptTurn2 is the text of the llama3 multi-turn reference's turn 2 when
// turn 1's reply keeps the ids it was generated as (the app's semantics,
// and the ExecuTorch runner's; the reference's own turn 2 re-tokenizes the
// reply's text, which the capped reply does not re-encode to): the same
// two turns through the inference package's conversation, uninterrupted,
// on a fresh CPU model with an fp32 cache and greedy decoding. A reopened
// or warmed chat must continue as if it had never been closed.
func keptTurn2(t *testing.T) string {
	t.Helper()
	_, text := keptTurn2Of(t, fixtures.Llama3, llamaReference(t))
	return text
}

// keptTurn2Of is keptTurn2 for any fixture with a multi-turn reference:
// turn 2's ids and text.
func keptTurn2Of(t *testing.T, fixture string, ref reference) ([]int, string) {
	t.Helper()
	mt := ref.Multiturn
	dir := fixtures.Unpacked(t, fixture)
	m, err := inference.Load(context.Background(), filepath.Join(dir, "model.pte"),
		inference.LoadOptions{Engine: "cpu", Policy: kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewConversation("", m.Generation(len(mt.Turn1.GeneratedIDs), sampler.Sampling{}))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Send(context.Background(), mt.Turn1.Messages[0].Content, nil); err != nil || r.Message.Text != mt.Turn1.GeneratedText {
		t.Fatalf("turn 1 %q (%v), want the reference's %q", r.Message.Text, err, mt.Turn1.GeneratedText)
	}
	r, err := c.Send(context.Background(), mt.Turn2.Messages[2].Content, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Message.IDs, r.Message.Text
}
