package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

func tmplRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func tmplWriteFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tmplTokenizerConfig writes a fixture's tokenizer_config.json to a temp
// folder (without unpacking its large tokenizer.json).
func tmplTokenizerConfig(t *testing.T, model string) string {
	t.Helper()
	b, err := fixtures.ReadGz(filepath.Join(fixtures.ModelDir(model), "tokenizer_config.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return tmplWriteFile(t, "tokenizer_config.json", string(b))
}

type tmplGolden struct {
	Messages            json.RawMessage `json:"messages"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Kwargs              map[string]json.RawMessage
	Tools               json.RawMessage `json:"tools"`
	Rendered            *string         `json:"rendered"`
	Error               *string         `json:"error"`
}

// TestTemplateGoldens runs every golden chat_template record through the
// command: stdout must be exactly the reference rendering, and a template
// error must exit 1 with the template's message.
func TestTemplateGoldens(t *testing.T) {
	for name, model := range map[string]string{"llama3": fixtures.Llama3, "gemma3": fixtures.Gemma3, "qwen3": fixtures.Qwen3} {
		t.Run(name, func(t *testing.T) {
			var g struct {
				ChatTemplate []tmplGolden `json:"chat_template"`
			}
			fixtures.Golden(t, name, &g)
			cfg := tmplTokenizerConfig(t, model)
			for i, rec := range g.ChatTemplate {
				msgs := tmplWriteFile(t, "m.json", string(rec.Messages))
				args := []string{"template", "--tokenizer-config", cfg, "--messages", msgs}
				if rec.AddGenerationPrompt {
					args = append(args, "--add-generation-prompt")
				}
				if len(rec.Tools) > 0 && string(rec.Tools) != "null" {
					args = append(args, "--tools", tmplWriteFile(t, "tools.json", string(rec.Tools)))
				}
				for k, v := range rec.Kwargs {
					args = append(args, "--var", k+"="+string(v))
				}
				code, out, stderr := tmplRun(t, "", args...)
				if rec.Error != nil {
					want := ""
					if strings.HasPrefix(*rec.Error, "TemplateError: ") {
						want = strings.TrimPrefix(*rec.Error, "TemplateError: ")
					}
					if code != 1 || out != "" || !strings.Contains(stderr, want) {
						t.Errorf("record %d: exit %d, stdout %q, stderr %q; want exit 1 and %q", i, code, out, stderr, want)
					}
					continue
				}
				if code != 0 || out != *rec.Rendered {
					t.Errorf("record %d: exit %d, stderr %q\n got %q\nwant %q", i, code, stderr, out, *rec.Rendered)
				}
			}
		})
	}
}

func TestTemplateStdinAndBuiltin(t *testing.T) {
	msgs := `{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "again"}]}`
	code, out, stderr := tmplRun(t, msgs, "template", "--chat", "llama3", "--messages", "-", "--add-generation-prompt")
	want := "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nagain<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stderr %q\n got %q\nwant %q", code, stderr, out, want)
	}
}

func TestTemplateTools(t *testing.T) {
	cfg := tmplTokenizerConfig(t, fixtures.Qwen3)
	msgs := tmplWriteFile(t, "m.json", `[{"role":"user","content":"weather?"}]`)
	tools := tmplWriteFile(t, "t.json", `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`)
	code, out, stderr := tmplRun(t, "", "template", "--tokenizer-config", cfg, "--messages", msgs, "--tools", tools)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Qwen's template prints each tool with tojson: Python's json.dumps
	// spacing, keys in the file's order.
	want := `{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}`
	if !strings.Contains(out, "<tools>\n"+want+"\n</tools>") {
		t.Fatalf("tools not rendered as expected:\n%s", out)
	}
}

func TestTemplateUsageErrors(t *testing.T) {
	cfg := tmplTokenizerConfig(t, fixtures.Llama3)
	msgs := tmplWriteFile(t, "m.json", `[{"role":"user","content":"hi"}]`)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no messages", []string{"--tokenizer-config", cfg}, 2, "--messages is required"},
		{"no template", []string{"--messages", msgs}, 2, "--tokenizer-config"},
		{"bad var", []string{"--tokenizer-config", cfg, "--messages", msgs, "--var", "x=not json"}, 2, "var"},
		{"var without =", []string{"--tokenizer-config", cfg, "--messages", msgs, "--var", "x"}, 2, "name=json"},
		{"unknown chat", []string{"--messages", msgs, "--chat", "nope"}, 2, "not a built-in"},
		{"unknown named template", []string{"--tokenizer-config", cfg, "--messages", msgs, "--chat", "tool_use"}, 1, "no chat template named"},
		{"missing file", []string{"--tokenizer-config", cfg, "--messages", filepath.Join(t.TempDir(), "nope.json")}, 1, "nope.json"},
		{"bad messages", []string{"--tokenizer-config", cfg, "--messages", tmplWriteFile(t, "bad.json", `{"role": 3}`)}, 1, "messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := tmplRun(t, "", append([]string{"template"}, c.args...)...)
			if code != c.code || out != "" || !strings.Contains(stderr, c.msg) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, out, stderr, c.code, c.msg)
			}
		})
	}
}

func TestTemplateHelp(t *testing.T) {
	code, out, stderr := tmplRun(t, "", "template", "-h")
	if code != 0 || out != "" || !strings.Contains(stderr, "--messages") && !strings.Contains(stderr, "-messages") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
