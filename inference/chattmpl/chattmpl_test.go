package chattmpl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"etchat/inference/chattmpl/jinja"
	"etchat/internal/fixtures"
)

// wrapTurn is run_llm_hf.cpp's wrap_turn, transcribed for comparison.
func wrapTurn(chat, prompt string, withBOS bool) string {
	bos := func(s string) string {
		if withBOS {
			return s
		}
		return ""
	}
	switch chat {
	case "0":
		return prompt
	case "llama3":
		return bos("<|begin_of_text|>") + "<|start_header_id|>user<|end_header_id|>\n\n" + prompt +
			"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	case "gemma":
		return bos("<bos>") + "<start_of_turn>user\n" + prompt + "<end_of_turn>\n<start_of_turn>model\n"
	case "gemma4":
		return bos("<bos>") + "<|turn>user\n" + prompt + "<turn|>\n<|turn>model\n"
	}
	panic(chat)
}

// runnerTurnEnd is the token the runner commits after each reply.
var runnerTurnEnd = map[string]string{"0": "", "llama3": "<|eot_id|>", "gemma": "<end_of_turn>", "gemma4": "<turn|>"}

// TestBuiltinsMatchTheRunner: a conversation rendered by a built-in is the
// text the runner's interactive loop feeds: each user turn through
// wrap_turn (BOS on the first only), each reply followed by its turn end.
func TestBuiltinsMatchTheRunner(t *testing.T) {
	users := []string{"Hello", "Tell me a joke.", "multi\nline"}
	replies := []string{"Hi! How can I help?", "Why did the chicken cross the road?"}
	for _, chat := range []string{"llama3", "gemma", "gemma4", "0"} {
		t.Run(chat, func(t *testing.T) {
			tmpl, err := Builtin(chat)
			if err != nil {
				t.Fatal(err)
			}
			if got := tmpl.TurnEnd(); got != runnerTurnEnd[chat] {
				t.Fatalf("TurnEnd %q, want %q", got, runnerTurnEnd[chat])
			}
			var msgs []Message
			want := ""
			for i, u := range users {
				msgs = append(msgs, Message{Role: "user", Content: u})
				want += wrapTurn(chat, u, i == 0)
				got, err := tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true})
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("after %d user turns:\n got %q\nwant %q", i+1, got, want)
				}
				if i < len(replies) {
					msgs = append(msgs, Message{Role: "assistant", Content: replies[i]})
					want += replies[i] + runnerTurnEnd[chat]
				}
			}
			// Without the generation prompt the last user turn stops before
			// the assistant header.
			one, _ := tmpl.Render(msgs[:1], RenderOptions{})
			full := wrapTurn(chat, users[0], true)
			if chat != "0" && (one == full || !strings.HasPrefix(full, one)) {
				t.Fatalf("no generation prompt: %q, want a proper prefix of %q", one, full)
			}
		})
	}
}

func TestBuiltinChatmlAndSystem(t *testing.T) {
	tmpl, err := Builtin("chatml")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "A"}}
	got, err := tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true})
	want := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>assistant\n"
	if err != nil || got != want {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
	// Gemma has no system turn: the system text leads the first user turn.
	g, _ := Builtin("gemma")
	got, _ = g.Render(msgs[:2], RenderOptions{AddGenerationPrompt: true})
	if want := wrapTurn("gemma", "S\n\nU", true); got != want {
		t.Fatalf("gemma system: %q, want %q", got, want)
	}
	if _, err := g.Render([]Message{{Role: "tool", Content: "x"}}, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "tool") {
		t.Fatalf("tool role: %v", err)
	}
	if _, err := Builtin("nope"); err == nil {
		t.Fatal("unknown built-in accepted")
	}
	if b, err := Builtin("none"); err != nil || !b.TokenizerAddsBOS() {
		t.Fatalf("none: %v", err)
	}
}

// TestModelTurnEnds: the turn end read off each fixture's own template.
func TestModelTurnEnds(t *testing.T) {
	want := map[string]string{fixtures.Llama3: "<|eot_id|>", fixtures.Gemma3: "<end_of_turn>", fixtures.Qwen3: "<|im_end|>"}
	for model, w := range want {
		cfg, err := LoadConfig(filepath.Join(modelDir(t, model), "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := cfg.Template("")
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.TurnEnd(); got != w {
			t.Errorf("%s: TurnEnd %q, want %q", model, got, w)
		}
	}
}

// addedTokens resolves token text with the fixture tokenizer_config.json's
// added_tokens_decoder, standing in for the tokenizer package.
type addedTokens map[string]int

func (a addedTokens) TokenID(s string) (int, bool) { id, ok := a[s]; return id, ok }

func loadAddedTokens(t *testing.T, dir string) addedTokens {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		Decoder map[string]struct {
			Content string `json:"content"`
		} `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	out := addedTokens{}
	for id, tok := range tc.Decoder {
		n, err := strconv.Atoi(id)
		if err != nil {
			t.Fatal(err)
		}
		out[tok.Content] = n
	}
	if len(out) == 0 {
		t.Fatal("no added tokens")
	}
	return out
}

// modelDir is a fixture's model folder without its tokenizer.json (which
// these tests do not need and which is slow to unpack under -race).
func modelDir(t testing.TB, model string) string {
	t.Helper()
	dir := t.TempDir()
	src := fixtures.ModelDir(model)
	for _, name := range []string{"config.json", "generation_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := fixtures.ReadGz(filepath.Join(src, "tokenizer_config.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStopTokens: for each fixture the template's turn end and the
// tokenizer's eos resolve to ids generation_config.json already lists.
func TestStopTokens(t *testing.T) {
	for _, model := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3} {
		t.Run(model, func(t *testing.T) {
			dir := modelDir(t, model)
			tmpl, why, err := Choose(dir, "auto")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(why, "own chat template") {
				t.Fatalf("why %q", why)
			}
			ids, texts, err := StopStrings(dir, tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 2 || len(texts) == 0 || !slices.Contains(texts, tmpl.TurnEnd()) {
				t.Fatalf("ids %v texts %q", ids, texts)
			}
			tok := loadAddedTokens(t, dir)
			all, err := StopTokens(dir, tmpl, tok)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(all)
			slices.Sort(ids)
			if !slices.Equal(all, ids) {
				t.Fatalf("resolved stop ids %v, want generation_config's %v", all, ids)
			}
			for _, s := range texts {
				if id, ok := tok.TokenID(s); !ok || !slices.Contains(ids, id) {
					t.Errorf("%q -> %d, %v", s, id, ok)
				}
			}
		})
	}
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestChooseAuto(t *testing.T) {
	cases := []struct {
		files    map[string]string
		want     string
		whyWords string
	}{
		{map[string]string{"config.json": `{"model_type": "llama"}`}, "llama3", "model_type"},
		{map[string]string{"config.json": `{"model_type": "gemma3_text"}`}, "gemma", "gemma3_text"},
		{map[string]string{"config.json": `{"model_type": "gemma4"}`}, "gemma4", "gemma4"},
		{map[string]string{"config.json": `{"model_type": "qwen3"}`}, "chatml", "qwen3"},
		{map[string]string{"config.json": `{"model_type": "phi3"}`}, "none", "phi3"},
		{map[string]string{}, "none", "no chat template"},
		{map[string]string{"config.json": `{"model_type": "llama"}`, "tokenizer_config.json": `{"eos_token": "</s>"}`}, "llama3", "model_type"},
		{map[string]string{"config.json": `{"model_type": "llama"}`, "tokenizer_config.json": `{"chat_template": "{{ messages[0].content }}!"}`}, "default", "own chat template"},
		{map[string]string{"chat_template.jinja": "{{ messages[0].content }}?"}, "default", "own chat template"},
	}
	for i, c := range cases {
		tmpl, why, err := Choose(writeDir(t, c.files), "auto")
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if tmpl.Name != c.want || !strings.Contains(why, c.whyWords) {
			t.Errorf("case %d: got %s (%q), want %s with %q", i, tmpl.Name, why, c.want, c.whyWords)
		}
	}
}

func TestChooseNamed(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"config.json":           `{"model_type": "llama"}`,
		"tokenizer_config.json": `{"chat_template": [{"name": "default", "template": "D{{ messages|length }}"}, {"name": "tool_use", "template": "T{{ tools|length }}"}], "bos_token": {"content": "<s>", "lstrip": false}}`,
	})
	msgs := []Message{{Role: "user", Content: "x"}}
	for chat, want := range map[string]string{"": "D1", "auto": "D1", "model": "D1", "tool_use": "T1"} {
		tmpl, _, err := Choose(dir, chat)
		if err != nil {
			t.Fatalf("%q: %v", chat, err)
		}
		got, err := tmpl.Render(msgs, RenderOptions{Tools: []any{map[string]any{"name": "f"}}})
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", chat, got, err, want)
		}
	}
	if tmpl, _, err := Choose(dir, "gemma"); err != nil || tmpl.Name != "gemma" {
		t.Fatalf("--chat gemma: %v", err)
	}
	if _, _, err := Choose(dir, "nonsense"); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("unknown chat: %v", err)
	}
	if _, _, err := Choose(writeDir(t, map[string]string{"config.json": `{"model_type": "llama"}`}), "model"); err == nil {
		t.Fatal("--chat model without a template succeeded")
	}
	if _, _, err := Choose(writeDir(t, map[string]string{"tokenizer_config.json": `{"chat_template": 5}`}), "auto"); err == nil {
		t.Fatal("bad chat_template accepted")
	}
	if _, _, err := Choose(writeDir(t, map[string]string{"tokenizer_config.json": `{"chat_template": "{% if %}"}`}), "auto"); err == nil {
		t.Fatal("unparsable template accepted")
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"bos_token": {"content": "<s>", "special": true}, "eos_token": "</s>", "pad_token": null,
		"additional_special_tokens": ["<a>", {"content": "<b>"}], "chat_template": "{{ bos_token }}{{ additional_special_tokens|join(',') }}{{ pad_token is defined }}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.BOSToken != "<s>" || c.EOSToken != "</s>" {
		t.Fatalf("tokens %q %q", c.BOSToken, c.EOSToken)
	}
	tmpl, err := c.Template("")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Render(nil, RenderOptions{}); err != nil || got != "<s><a>,<b>False" {
		t.Fatalf("%q, %v", got, err)
	}
	for _, bad := range []string{`[]`, `{"chat_template": {"a": 1}}`, `{"chat_template": [{"name": "x"}]}`, `{"bos_token": 3}`, `not json`} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing file accepted")
	}
	empty, _ := ParseConfig([]byte(`{}`))
	if _, err := empty.Template(""); !errors.Is(err, ErrNoTemplate) {
		t.Fatalf("no template: %v", err)
	}
}

// TestQwen3ToolConversation: tools, tool calls (arguments as an object and
// as a string), consecutive tool results, reasoning_content and
// enable_thinking, against Jinja2's own rendering of the fixture template.
func TestQwen3ToolConversation(t *testing.T) {
	b, err := os.ReadFile("testdata/qwen3_tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Messages []Message       `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
		Cases    []struct {
			AddGenerationPrompt bool            `json:"add_generation_prompt"`
			Kwargs              map[string]bool `json:"kwargs"`
			Rendered            string          `json:"rendered"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	tools, err := jinja.DecodeJSON(g.Tools)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(filepath.Join(modelDir(t, fixtures.Qwen3), "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := cfg.Template("")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range g.Cases {
		vars := map[string]any{}
		for k, v := range c.Kwargs {
			vars[k] = v
		}
		got, err := tmpl.Render(g.Messages, RenderOptions{AddGenerationPrompt: c.AddGenerationPrompt, Tools: tools.([]any), Vars: vars})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got != c.Rendered {
			t.Errorf("case %d:\n got %q\nwant %q", i, got, c.Rendered)
		}
	}
}

func TestMessageJSON(t *testing.T) {
	var m Message
	if err := json.Unmarshal([]byte(`{"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "bob"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Role != "user" || m.Content != "" || m.Extra["name"] != "bob" {
		t.Fatalf("%+v", m)
	}
	tm, _ := NewTemplate("t", `{{ messages[0].content[0].text }} {{ messages[0].name }} {{ messages[0]|tojson }}`, nil)
	got, err := tm.Render([]Message{m}, RenderOptions{})
	if want := `hi bob {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "bob"}`; err != nil || got != want {
		t.Fatalf("%q, %v", got, err)
	}
	out, err := json.Marshal(m)
	if err != nil || !strings.Contains(string(out), `"name":"bob"`) {
		t.Fatalf("%s %v", out, err)
	}
	for _, bad := range []string{`{"content": "x"}`, `{"role": 1}`, `[1]`, `{"role": "user"`} {
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestStrftimeNowClock(t *testing.T) {
	tm, err := NewTemplate("t", `Today Date: {{ strftime_now("%d %b %Y") }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	tm.Now = func() time.Time { return time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) }
	if got, err := tm.Render(nil, RenderOptions{}); err != nil || got != "Today Date: 29 Nov 2026" {
		t.Fatalf("%q, %v", got, err)
	}
}

// TestConcurrentRender: one Template serves many goroutines (run with -race).
func TestConcurrentRender(t *testing.T) {
	cfg, err := LoadConfig(filepath.Join(modelDir(t, fixtures.Qwen3), "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := cfg.Template("")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	want, err := tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 20; j++ {
				got, err := tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true})
				if err == nil && got != want {
					err = errors.New("different rendering: " + got)
				}
				if err == nil && tmpl.TurnEnd() != "<|im_end|>" {
					err = errors.New("turn end " + tmpl.TurnEnd())
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
