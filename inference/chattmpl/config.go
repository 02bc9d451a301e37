package chattmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
)

// Config is what a tokenizer_config.json says about chat templates and
// special tokens.
type Config struct {
	// Path is the file it was read from.
	Path string
	// Templates are the chat templates by name; a single-string
	// chat_template is named "default".
	Templates map[string]string
	// BOSToken and EOSToken are the special tokens' text ("" when unset).
	BOSToken, EOSToken string
	// Tokens are the special-token variables a template sees (bos_token,
	// eos_token, unk_token, pad_token, additional_special_tokens, ...).
	Tokens map[string]any
}

// HasTemplate reports whether the config carries any chat template.
func (c *Config) HasTemplate() bool { return len(c.Templates) > 0 }

// TemplateNames lists the named templates, sorted.
func (c *Config) TemplateNames() []string {
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrNoTemplate means a tokenizer config has no chat template.
var ErrNoTemplate = errors.New("no chat template")

// Template compiles the named template ("" for "default").
func (c *Config) Template(name string) (*Template, error) {
	if name == "" {
		name = "default"
	}
	src, ok := c.Templates[name]
	if !ok {
		if len(c.Templates) == 0 {
			return nil, fmt.Errorf("%s: %w", c.Path, ErrNoTemplate)
		}
		return nil, fmt.Errorf("%s: no chat template named %q (have %v)", c.Path, name, c.TemplateNames())
	}
	return NewTemplate(name, src, c.Tokens)
}

// tokenText reads a special token given as a string or as an AddedToken
// object {"content": ...}.
func tokenText(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, fmt.Errorf("a special token must be a string or an object with \"content\"")
	}
	return *obj.Content, true, nil
}

// LoadConfig reads a tokenizer_config.json.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// ParseConfig parses the contents of a tokenizer_config.json.
func ParseConfig(b []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("tokenizer config: %w", err)
	}
	c := &Config{Templates: map[string]string{}, Tokens: map[string]any{}}
	if ct, ok := raw["chat_template"]; ok && string(ct) != "null" {
		if err := parseTemplates(ct, c.Templates); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"} {
		s, ok, err := tokenText(raw[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if ok {
			c.Tokens[name] = s
		}
	}
	if ast, ok := raw["additional_special_tokens"]; ok && string(ast) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(ast, &list); err != nil {
			return nil, fmt.Errorf("additional_special_tokens: %w", err)
		}
		var toks []any
		for _, e := range list {
			s, ok, err := tokenText(e)
			if err != nil {
				return nil, fmt.Errorf("additional_special_tokens: %w", err)
			}
			if ok {
				toks = append(toks, s)
			}
		}
		c.Tokens["additional_special_tokens"] = toks
	}
	if est, ok := raw["extra_special_tokens"]; ok && string(est) != "null" {
		var m map[string]json.RawMessage
		if json.Unmarshal(est, &m) == nil {
			for k, v := range m {
				if s, ok, err := tokenText(v); err == nil && ok {
					if _, taken := c.Tokens[k]; !taken {
						c.Tokens[k] = s
					}
				}
			}
		}
	}
	c.BOSToken, _ = c.Tokens["bos_token"].(string)
	c.EOSToken, _ = c.Tokens["eos_token"].(string)
	return c, nil
}

func parseTemplates(ct json.RawMessage, into map[string]string) error {
	var s string
	if err := json.Unmarshal(ct, &s); err == nil {
		into["default"] = s
		return nil
	}
	var list []struct {
		Name     *string `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(ct, &list); err != nil {
		return errors.New("chat_template must be a string or a list of {name, template}")
	}
	for i, e := range list {
		if e.Name == nil || e.Template == nil {
			return fmt.Errorf("chat_template entry %d needs a name and a template", i)
		}
		into[*e.Name] = *e.Template
	}
	return nil
}
