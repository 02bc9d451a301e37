package modelinfo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Companion file names, as Hugging Face's save_pretrained writes them.
const (
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	GenerationConfigFile = "generation_config.json"
	ConfigFile           = "config.json"
	ChatTemplateFile     = "chat_template.jinja"
)

// FindCompanions looks for the companion files in dir.
func FindCompanions(dir string) Companions { return findCompanions(dir) }

func findCompanions(dir string) Companions {
	c := Companions{Dir: dir}
	found := func(name string) string {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			if !os.IsNotExist(err) {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", p, err))
			}
			return ""
		}
		if !st.Mode().IsRegular() {
			c.Problems = append(c.Problems, p+": not a regular file")
			return ""
		}
		return p
	}
	c.Tokenizer = found(TokenizerFile)
	c.TokenizerConfig = found(TokenizerConfigFile)
	c.GenerationConfig = found(GenerationConfigFile)
	c.Config = found(ConfigFile)
	c.ChatTemplate = found(ChatTemplateFile)
	c.HasChatTemplate = c.ChatTemplate != ""

	if c.TokenizerConfig != "" {
		var tc struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := readJSON(c.TokenizerConfig, &tc); err != nil {
			c.Problems = append(c.Problems, err.Error())
		} else if t := bytes.TrimSpace(tc.ChatTemplate); len(t) > 0 && !bytes.Equal(t, []byte("null")) &&
			!bytes.Equal(t, []byte(`""`)) && !bytes.Equal(t, []byte("[]")) {
			c.HasChatTemplate = true
		}
	}
	if c.GenerationConfig != "" {
		var gc struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := readJSON(c.GenerationConfig, &gc); err != nil {
			c.Problems = append(c.Problems, err.Error())
		} else if ids, err := tokenIDs(gc.EOS); err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s: eos_token_id: %v", c.GenerationConfig, err))
		} else {
			c.GenerationEOS = ids
		}
	}
	if c.Config != "" {
		var cc struct {
			ModelType string          `json:"model_type"`
			EOS       json.RawMessage `json:"eos_token_id"`
		}
		if err := readJSON(c.Config, &cc); err != nil {
			c.Problems = append(c.Problems, err.Error())
		} else {
			c.ModelType = cc.ModelType
			if ids, err := tokenIDs(cc.EOS); err != nil {
				c.Problems = append(c.Problems, fmt.Sprintf("%s: eos_token_id: %v", c.Config, err))
			} else {
				c.ConfigEOS = ids
			}
		}
	}
	return c
}

// readJSON decodes a companion file of at most maxCompanionBytes.
func readJSON(path string, v any) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxCompanionBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxCompanionBytes {
		return fmt.Errorf("%s: larger than %d bytes", path, maxCompanionBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not valid JSON: %w", path, err)
	}
	return nil
}

// tokenIDs reads an id or a list of ids; absent or null is nil.
func tokenIDs(raw json.RawMessage) ([]int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		if one < 0 {
			return nil, fmt.Errorf("negative id %d", one)
		}
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("want an id or a list of ids, got %s", truncate(string(raw), 40))
	}
	for _, id := range many {
		if id < 0 {
			return nil, fmt.Errorf("negative id %d", id)
		}
	}
	return many, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
