package chattmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// modelType reads config.json's model_type ("" when absent).
func modelType(modelDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(modelDir, "config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(modelDir, "config.json"), err)
	}
	return c.ModelType, nil
}

// BuiltinFor names the built-in template for a config.json model_type:
// llama → llama3, gemma4* → gemma4, other gemma* → gemma, qwen* → chatml,
// anything else → none.
func BuiltinFor(modelType string) string {
	mt := strings.ToLower(modelType)
	switch {
	case strings.HasPrefix(mt, "llama"):
		return "llama3"
	case strings.HasPrefix(mt, "gemma4") || strings.HasPrefix(mt, "gemma_4"):
		return "gemma4"
	case strings.HasPrefix(mt, "gemma"):
		return "gemma"
	case strings.HasPrefix(mt, "qwen"):
		return "chatml"
	}
	return "none"
}

// modelConfig loads the folder's tokenizer_config.json, with a template
// kept beside it (chat_template.jinja, or chat_template.json's
// chat_template, as newer transformers save them) taking the "default"
// slot when the config has none. It returns nil, nil when there is no
// tokenizer config and no template file.
func modelConfig(modelDir string) (*Config, error) {
	path := filepath.Join(modelDir, "tokenizer_config.json")
	c, err := LoadConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		c, err = &Config{Path: path, Templates: map[string]string{}, Tokens: map[string]any{}}, nil
		if _, statErr := os.Stat(filepath.Join(modelDir, "chat_template.jinja")); statErr != nil {
			if _, statErr := os.Stat(filepath.Join(modelDir, "chat_template.json")); statErr != nil {
				return nil, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if _, ok := c.Templates["default"]; !ok {
		if b, err := os.ReadFile(filepath.Join(modelDir, "chat_template.jinja")); err == nil {
			c.Templates["default"] = string(b)
		} else if b, err := os.ReadFile(filepath.Join(modelDir, "chat_template.json")); err == nil {
			var ct struct {
				ChatTemplate json.RawMessage `json:"chat_template"`
			}
			if err := json.Unmarshal(b, &ct); err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(modelDir, "chat_template.json"), err)
			}
			if len(ct.ChatTemplate) > 0 {
				if err := parseTemplates(ct.ChatTemplate, c.Templates); err != nil {
					return nil, fmt.Errorf("%s: %w", filepath.Join(modelDir, "chat_template.json"), err)
				}
			}
		}
	}
	return c, nil
}

// Choose picks the template for a model folder. chat is "auto" (or "",
// the default): the model's own template when its tokenizer_config.json
// (or chat_template.jinja) has one, else the built-in for config.json's
// model_type, else none. "model" insists on the model's own template; a
// built-in name (llama3, gemma, gemma4, chatml, 0/none) picks it; any
// other name selects a named template of the model's. why says, in a
// phrase, which was chosen and why.
func Choose(modelDir string, chat string) (tmpl *Template, why string, err error) {
	switch strings.ToLower(chat) {
	case "", "auto":
		cfg, err := modelConfig(modelDir)
		if err != nil {
			return nil, "", err
		}
		if cfg != nil && cfg.HasTemplate() {
			name := "default"
			if _, ok := cfg.Templates[name]; !ok {
				name = cfg.TemplateNames()[0]
			}
			t, err := cfg.Template(name)
			if err != nil {
				return nil, "", err
			}
			return t, fmt.Sprintf("the model's own chat template (%s, %q)", filepath.Base(cfg.Path), name), nil
		}
		mt, err := modelType(modelDir)
		if err != nil {
			return nil, "", err
		}
		b := BuiltinFor(mt)
		t, _ := Builtin(b)
		if mt == "" {
			return t, "built-in none: no chat template and no model_type in " + modelDir, nil
		}
		if b == "none" {
			return t, fmt.Sprintf("built-in none: no chat template, and no built-in for model_type %q", mt), nil
		}
		return t, fmt.Sprintf("built-in %s for model_type %q (no chat template in the model folder)", b, mt), nil
	case "model":
		cfg, err := modelConfig(modelDir)
		if err != nil {
			return nil, "", err
		}
		if cfg == nil || !cfg.HasTemplate() {
			return nil, "", fmt.Errorf("--chat model: %s has no chat template", modelDir)
		}
		t, err := cfg.Template("")
		if err != nil {
			return nil, "", err
		}
		return t, "the model's own chat template (--chat model)", nil
	}
	if t, err := Builtin(chat); err == nil {
		return t, "built-in " + t.Name + " (--chat " + chat + ")", nil
	}
	cfg, err := modelConfig(modelDir)
	if err != nil {
		return nil, "", err
	}
	if cfg != nil {
		if _, ok := cfg.Templates[chat]; ok {
			t, err := cfg.Template(chat)
			if err != nil {
				return nil, "", err
			}
			return t, fmt.Sprintf("the model's chat template named %q", chat), nil
		}
	}
	return nil, "", fmt.Errorf("unknown --chat %q: expected auto, model, %s, 0, or a template name from the model's tokenizer_config.json", chat, strings.Join(BuiltinNames(), ", "))
}
