package chattmpl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"etchat/inference/chattmpl/jinja"
	"etchat/internal/fixtures"
)

// tjsGoldens is testdata/goldens/transformersjs-tools.json, written by
// tests/chat-templates/render.mjs with transformers.js.
type tjsGoldens struct {
	Models map[string]struct {
		ConfigSHA256 string      `json:"tokenizer_config_sha256"`
		Records      []tjsRecord `json:"records"`
	} `json:"models"`
}

// tjsRecord is a case rendered by transformers.js (Rendered/Error) and
// by @huggingface/jinja 0.5.13 itself (Jinja).
type tjsRecord struct {
	goldenRecord
	Jinja struct {
		Rendered *string `json:"rendered"`
		Error    *string `json:"error"`
	} `json:"jinja"`
}

func readTJSGoldens(t *testing.T) tjsGoldens {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.Root(), "goldens", "transformersjs-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g tjsGoldens
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// tjsModels are the folders whose templates the goldens rendered: the
// qwen3 fixture, and the llama3 fixture with Llama 3.2's tokenizer_config.
var tjsModels = map[string]func(testing.TB) string{
	"qwen3":    func(tb testing.TB) string { return fixtures.Unpacked(tb, fixtures.Qwen3) },
	"llama3_2": fixtures.Llama32,
}

// jsEmpty is an empty object or list as @huggingface/jinja 0.5.10's
// tojson writes it with an indent: "{" newline, the indent, "}".
var jsEmpty = regexp.MustCompile(`([{[])\n *([}\]])`)

// pythonEmpties is a rendering with each empty object or list under
// tojson(indent=n) written "{}" / "[]", as Python's json.dumps (what
// transformers in Python uses) and @huggingface/jinja from 0.5.13 write
// them; transformers.js 4.3.2 bundles jinja 0.5.10, which writes
// "{\n        }" (Llama 3.2's tool list, "properties": {}).
func pythonEmpties(s string) string { return jsEmpty.ReplaceAllString(s, "$1$2") }

// TestTransformersJSGoldens renders every record of Hugging Face's JS
// goldens (tools, tool calls, tool results; no-tools baselines) byte for
// byte as @huggingface/jinja 0.5.13 does, and as transformers.js's
// apply_chat_template does but for its bundled jinja's empty containers;
// it fails where the template raised, with its message.
func TestTransformersJSGoldens(t *testing.T) {
	g := readTJSGoldens(t)
	if len(g.Models) != len(tjsModels) {
		t.Fatalf("goldens for %d models, want %d", len(g.Models), len(tjsModels))
	}
	for name, m := range g.Models {
		t.Run(name, func(t *testing.T) {
			dir := tjsModels[name](t)
			cfgBytes, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(cfgBytes); hex.EncodeToString(sum[:]) != m.ConfigSHA256 {
				t.Fatalf("tokenizer_config.json is not the one the goldens rendered (sha256 %x)", sum)
			}
			tmpl, _, err := Choose(dir, "auto")
			if err != nil {
				t.Fatal(err)
			}
			var nTools, nErr, nPy int
			for i, rec := range m.Records {
				tools := rec.tools(t)
				got, err := tmpl.Render(rec.Messages, RenderOptions{AddGenerationPrompt: rec.AddGenerationPrompt, Tools: tools, Vars: rec.vars(t)})
				if rec.Error != nil {
					var re *jinja.RaisedError
					if !errors.As(err, &re) || re.Msg != *rec.Error || rec.Jinja.Error == nil || *rec.Jinja.Error != *rec.Error {
						t.Errorf("record %d: got (%q, %v), want the template's error %q", i, got, err, *rec.Error)
					}
					nErr++
					continue
				}
				if rec.Rendered == nil || rec.Jinja.Rendered == nil {
					t.Fatalf("record %d has neither rendering nor error", i)
				}
				// @huggingface/jinja 0.5.13: the same bytes. transformers.js
				// (its bundled 0.5.10): the same but for empty containers
				// under tojson(indent), exactly.
				want := *rec.Jinja.Rendered
				if js := *rec.Rendered; js != want {
					if pythonEmpties(js) != want {
						t.Errorf("record %d: transformers.js and @huggingface/jinja differ by more than empty containers:\n%q\n%q", i, js, want)
					}
					nPy++
				}
				if err != nil {
					t.Errorf("record %d: %v", i, err)
				} else if got != want {
					t.Errorf("record %d:\n got %q\nwant %q", i, got, want)
				}
				if len(tools) > 0 {
					nTools++
				}
			}
			if nTools < 3 || nErr == 0 && name == "llama3_2" {
				t.Errorf("%d renderings with tools, %d errors: the goldens lost their cases", nTools, nErr)
			}
			t.Logf("%d records, %d with tools, %d template errors, %d where transformers.js's bundled jinja writes an empty container on two lines", len(m.Records), nTools, nErr, nPy)
		})
	}
}

// Llama 3.2's template reads today's date from strftime_now when no
// date_string is given: Template.Now is that clock, so a fixed clock
// renders exactly the golden made with that date_string.
func TestLlama32Clock(t *testing.T) {
	g := readTJSGoldens(t)
	tmpl, _, err := Choose(fixtures.Llama32(t), "auto")
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Now = func() time.Time { return time.Date(2024, 7, 26, 23, 59, 0, 0, time.UTC) }
	rec := g.Models["llama3_2"].Records[2]
	if rec.Jinja.Rendered == nil || !strings.Contains(*rec.Jinja.Rendered, "Today Date: 26 Jul 2024\n") {
		t.Fatalf("record 2 is not the tools rendering dated 26 Jul 2024: %v", rec.Jinja.Rendered)
	}
	vars := rec.vars(t)
	delete(vars, "date_string")
	got, err := tmpl.Render(rec.Messages, RenderOptions{AddGenerationPrompt: rec.AddGenerationPrompt, Tools: rec.tools(t), Vars: vars})
	if err != nil || got != *rec.Jinja.Rendered {
		t.Errorf("with the clock at 26 Jul 2024: %v\n got %q\nwant %q", err, got, *rec.Jinja.Rendered)
	}
}
