package chattmpl

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/chattmpl/jinja"
	"etchat/internal/fixtures"
)

type goldenRecord struct {
	Messages            []Message       `json:"messages"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Kwargs              json.RawMessage `json:"kwargs"`
	Tools               json.RawMessage `json:"tools"`
	Rendered            *string         `json:"rendered"`
	Error               *string         `json:"error"`
}

// tools are the record's tool definitions, if it has any (kwargs may
// carry them too, as apply_chat_template's keyword arguments).
func (g goldenRecord) tools(t *testing.T) []any {
	t.Helper()
	if len(g.Tools) == 0 || string(g.Tools) == "null" {
		return nil
	}
	v, err := jinja.DecodeJSON(g.Tools)
	if err != nil {
		t.Fatal(err)
	}
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("tools is a %T", v)
	}
	return list
}

func (g goldenRecord) vars(t *testing.T) map[string]any {
	t.Helper()
	if len(g.Kwargs) == 0 {
		return nil
	}
	v, err := jinja.DecodeJSON(g.Kwargs)
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*jinja.Dict)
	out := map[string]any{}
	for _, k := range d.Keys() {
		val, _ := d.Get(k)
		out[k.(string)] = val
	}
	return out
}

var goldenModels = map[string]string{"llama3": fixtures.Llama3, "gemma3": fixtures.Gemma3, "qwen3": fixtures.Qwen3}

// TestGoldens reproduces every chat_template record of the reference
// goldens: each rendering byte for byte, each template error with the
// template's own message.
func TestGoldens(t *testing.T) {
	for name, model := range goldenModels {
		t.Run(name, func(t *testing.T) {
			var g struct {
				ChatTemplate []goldenRecord `json:"chat_template"`
			}
			fixtures.Golden(t, name, &g)
			if len(g.ChatTemplate) == 0 {
				t.Fatal("no chat_template records")
			}
			cfg, err := LoadConfig(filepath.Join(modelDir(t, model), "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := cfg.Template("")
			if err != nil {
				t.Fatal(err)
			}
			var nRendered, nErr int
			for i, rec := range g.ChatTemplate {
				got, err := tmpl.Render(rec.Messages, RenderOptions{AddGenerationPrompt: rec.AddGenerationPrompt, Tools: rec.tools(t), Vars: rec.vars(t)})
				switch {
				case rec.Error != nil && strings.HasPrefix(*rec.Error, "TemplateError: "):
					// The template's own raise_exception: the same message.
					want := strings.TrimPrefix(*rec.Error, "TemplateError: ")
					var re *jinja.RaisedError
					if !errors.As(err, &re) || re.Msg != want {
						t.Errorf("record %d: got (%q, %v), want error %q", i, got, err, want)
					}
					nErr++
				case rec.Error != nil:
					// Python failed inside the template (a TypeError, an
					// UndefinedError): it must fail here too.
					if err == nil {
						t.Errorf("record %d: rendered %q, want an error like %q", i, got, *rec.Error)
					}
					nErr++
				case rec.Rendered != nil:
					if err != nil {
						t.Errorf("record %d: %v", i, err)
					} else if got != *rec.Rendered {
						t.Errorf("record %d:\n got %q\nwant %q", i, got, *rec.Rendered)
					}
					nRendered++
				default:
					t.Fatalf("record %d has neither rendered nor error", i)
				}
			}
			t.Logf("%d renderings, %d errors", nRendered, nErr)
		})
	}
}
