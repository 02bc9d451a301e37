package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/inference/tokenizer"
)

// Tokens draws synthetic prompt ids: a seeded stream (PCG) of ids in
// [0, Vocab) that skips the Excluded ones. With a tokenizer, every added
// token (special or not) is excluded and the range is the smaller of the
// model's and the tokenizer's vocabularies; without one (the
// llama-bench-bf16 fixture has none) the ids the model's files publish as
// BOS, EOS or PAD are excluded.
type Tokens struct {
	Vocab    int
	Excluded []int  // sorted
	Seed     uint64 // the stream's seed
	Source   string // one line: where the exclusions came from
	ids      []int
	skip     map[int]bool
	rng      *rand.Rand
}

// NewTokens prepares the id stream for a model. tokPath is a
// tokenizer.json; "" uses the one next to the .pte, if any.
func NewTokens(info *modelinfo.Info, tokPath string, seed uint64) (*Tokens, error) {
	if tokPath == "" {
		tokPath = info.Companion.Tokenizer
	}
	if tokPath == "" {
		return newTokens(info, nil, "", seed)
	}
	tk, err := tokenizer.Load(tokPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return newTokens(info, tk, filepath.Base(tokPath), seed)
}

// tokenizerName is the file name of a prepared model's tokenizer.
func tokenizerName(m *inference.Model) string {
	if m.Chat == nil {
		return ""
	}
	return filepath.Base(m.Chat.Path)
}

// newTokens is NewTokens with the tokenizer loaded (tk nil: none; name is
// its file name).
func newTokens(info *modelinfo.Info, tk *tokenizer.Tokenizer, name string, seed uint64) (*Tokens, error) {
	vocab := info.VocabSize
	t := &Tokens{Seed: seed, skip: map[int]bool{}}
	if tk != nil {
		if tv := tk.VocabSize(); tv > 0 && (vocab <= 0 || tv < vocab) {
			vocab = tv
		}
		for _, a := range tk.AddedTokens() {
			t.skip[a.ID] = true
		}
		for id := range vocab {
			if tk.IsSpecial(id) {
				t.skip[id] = true
			}
		}
		t.Source = fmt.Sprintf("seeded ids in [0, %d) without the tokenizer's added/special ids (%s)", vocab, name)
	} else {
		for _, id := range info.EOSIDs {
			t.skip[id] = true
		}
		for _, id := range info.Companion.GenerationEOS {
			t.skip[id] = true
		}
		for _, id := range info.Companion.ConfigEOS {
			t.skip[id] = true
		}
		for _, f := range []string{info.Companion.Config, info.Companion.GenerationConfig} {
			for _, id := range bosPad(f) {
				t.skip[id] = true
			}
		}
		t.Source = fmt.Sprintf("seeded ids in [0, %d) without the published BOS/EOS/PAD ids (no tokenizer)", vocab)
	}
	if vocab <= 0 {
		return nil, fmt.Errorf("%s: vocabulary size unknown", info.Path)
	}
	t.Vocab = vocab
	for id := range t.skip {
		if id >= 0 && id < vocab {
			t.Excluded = append(t.Excluded, id)
		}
	}
	sort.Ints(t.Excluded)
	if len(t.Excluded) >= vocab {
		return nil, fmt.Errorf("no ordinary ids left in a vocabulary of %d", vocab)
	}
	t.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	return t, nil
}

// bosPad reads bos_token_id and pad_token_id from a config file; a missing
// or odd file gives none (the EOS ids have been read by modelinfo).
func bosPad(path string) []int {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	var out []int
	for _, k := range []string{"bos_token_id", "pad_token_id"} {
		var one int
		var many []int
		if json.Unmarshal(c[k], &one) == nil && c[k] != nil {
			out = append(out, one)
		} else if json.Unmarshal(c[k], &many) == nil {
			out = append(out, many...)
		}
	}
	return out
}

// IDs returns the first n ids of the stream (the same ids for the same
// seed, every call).
func (t *Tokens) IDs(n int) []int {
	for len(t.ids) < n {
		id := int(t.rng.IntN(t.Vocab))
		if !t.skip[id] {
			t.ids = append(t.ids, id)
		}
	}
	return t.ids[:n]
}
