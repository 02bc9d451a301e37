package chattmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TokenResolver finds a token's id from its text; the tokenizer package
// provides one.
type TokenResolver interface {
	TokenID(string) (int, bool)
}

// eosIDs reads eos_token_id (an int or a list of ints) from a JSON file;
// found is false when the file or the field is absent.
func eosIDs(path string) (ids []int, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var c struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if len(c.EOS) == 0 || string(c.EOS) == "null" {
		return nil, false, nil
	}
	var one int
	if err := json.Unmarshal(c.EOS, &one); err == nil {
		return []int{one}, true, nil
	}
	var many []int
	if err := json.Unmarshal(c.EOS, &many); err != nil {
		return nil, false, fmt.Errorf("%s: eos_token_id must be an integer or a list of integers", path)
	}
	return many, true, nil
}

// StopStrings gathers what ends generation for a model folder: the ids of
// generation_config.json's eos_token_id (config.json's when
// generation_config.json has none), and the texts of tokenizer_config.json's
// eos_token and of the template's turn end, for a tokenizer to resolve.
// tmpl may be nil. Duplicates are dropped; order is kept.
func StopStrings(modelDir string, tmpl *Template) (ids []int, texts []string, err error) {
	ids, found, err := eosIDs(filepath.Join(modelDir, "generation_config.json"))
	if err != nil {
		return nil, nil, err
	}
	if !found {
		if ids, _, err = eosIDs(filepath.Join(modelDir, "config.json")); err != nil {
			return nil, nil, err
		}
	}
	ids = dedupInts(ids)
	addText := func(s string) {
		if s == "" {
			return
		}
		for _, t := range texts {
			if t == s {
				return
			}
		}
		texts = append(texts, s)
	}
	cfg, err := LoadConfig(filepath.Join(modelDir, "tokenizer_config.json"))
	switch {
	case err == nil:
		addText(cfg.EOSToken)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, err
	}
	if tmpl != nil {
		addText(tmpl.TurnEnd())
	}
	return ids, texts, nil
}

// StopTokens is StopStrings with the texts resolved to ids by tok; texts
// the tokenizer does not know are skipped (a template's turn end that is
// not a single token cannot stop generation by id).
func StopTokens(modelDir string, tmpl *Template, tok TokenResolver) ([]int, error) {
	ids, texts, err := StopStrings(modelDir, tmpl)
	if err != nil {
		return nil, err
	}
	if tok != nil {
		for _, s := range texts {
			if id, ok := tok.TokenID(s); ok {
				ids = append(ids, id)
			}
		}
	}
	return dedupInts(ids), nil
}

func dedupInts(in []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
