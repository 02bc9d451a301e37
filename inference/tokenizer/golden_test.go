package tokenizer

import (
	"slices"
	"sync"
	"testing"

	"etchat/internal/fixtures"
)

type goldenFile struct {
	Encode []struct {
		Text               string   `json:"text"`
		IDs                []int    `json:"ids"`
		IDsWithSpecial     []int    `json:"ids_with_special"`
		Tokens             []string `json:"tokens"`
		Decoded            string   `json:"decoded"`
		DecodedSkipSpecial string   `json:"decoded_skip_special"`
	} `json:"encode"`
	ChatTemplate []struct {
		Rendered string `json:"rendered"`
		IDs      []int  `json:"ids"`
		Error    string `json:"error"`
	} `json:"chat_template"`
}

var families = []struct{ name, fixture string }{
	{"llama3", fixtures.Llama3},
	{"gemma3", fixtures.Gemma3},
	{"qwen3", fixtures.Qwen3},
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Tokenizer{}
)

// load returns the fixture's tokenizer, loaded once per test binary.
func load(tb testing.TB, fixture string) *Tokenizer {
	tb.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	if t, ok := loaded[fixture]; ok {
		return t
	}
	t, err := Load(fixtures.Tokenizer(tb, fixture))
	if err != nil {
		tb.Fatal(err)
	}
	loaded[fixture] = t
	return t
}

func TestGoldens(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			tk := load(t, f.fixture)
			var g goldenFile
			fixtures.Golden(t, f.name, &g)
			if len(g.Encode) == 0 {
				t.Fatal("no encode records")
			}
			for i, r := range g.Encode {
				ids, toks := tk.EncodeTokens(r.Text, false)
				if !slices.Equal(ids, r.IDs) {
					t.Errorf("record %d %q: ids\n got %v\nwant %v", i, r.Text, ids, r.IDs)
					continue
				}
				if !slices.Equal(toks, r.Tokens) {
					t.Errorf("record %d %q: tokens\n got %q\nwant %q", i, r.Text, toks, r.Tokens)
				}
				if got := tk.Encode(r.Text, true); !slices.Equal(got, r.IDsWithSpecial) {
					t.Errorf("record %d %q: ids with special\n got %v\nwant %v", i, r.Text, got, r.IDsWithSpecial)
				}
				if got := tk.Decode(r.IDs, false); got != r.Decoded {
					t.Errorf("record %d: decode\n got %q\nwant %q", i, got, r.Decoded)
				}
				if got := tk.Decode(r.IDs, true); got != r.DecodedSkipSpecial {
					t.Errorf("record %d: decode skip special\n got %q\nwant %q", i, got, r.DecodedSkipSpecial)
				}
			}
			n := 0
			for i, r := range g.ChatTemplate {
				if r.Error != "" {
					continue
				}
				n++
				if got := tk.Encode(r.Rendered, false); !slices.Equal(got, r.IDs) {
					t.Errorf("chat_template %d: ids\n got %v\nwant %v", i, got, r.IDs)
				}
			}
			if n == 0 {
				t.Error("no chat_template records")
			}
		})
	}
}
