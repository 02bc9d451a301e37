package inference

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"etchat/inference/chattmpl"
	"etchat/inference/engine"
	"etchat/inference/grammar"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

const replyGBNF = `root ::= "{\"ok\": " ("true" | "false") ", \"n\": " [1-9] [0-9]? ", \"tag\": \"" [a-z]{1,6} "\"}"`

var replyRE = regexp.MustCompile(`^\{"ok": (true|false), "n": [1-9][0-9]?, "tag": "[a-z]{1,6}"\}$`)

// The fixtures' weights are random: unconstrained, they write no JSON; with
// the grammar, greedy and seeded sampling on both engines write a reply
// that parses and matches it, and stop on the end of turn where the
// grammar ends.
func TestConstrainedGenerate(t *testing.T) {
	g, err := grammar.Parse(replyGBNF)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range models(fixtures.Llama3, fixtures.Qwen3, fixtures.Gemma3) {
		t.Run(name, func(t *testing.T) {
			dir := fixtures.Unpacked(t, name)
			info, _ := fixtureConfig(t, name, "fp32")
			chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", info.EOSIDs)
			if err != nil {
				t.Fatal(err)
			}
			m := &Model{Chat: chat, StopIDs: chat.StopIDs}
			prompt, err := chat.Encode("Reply in JSON.")
			if err != nil {
				t.Fatal(err)
			}
			forEachEngine(t, func(t *testing.T, e engine.Engine) {
				sess, cfg := openOn(t, e, name, "fp32")
				run := func(s sampler.Sampling, c Constraint) *Result {
					t.Helper()
					if err := sess.Clear(); err != nil {
						t.Fatal(err)
					}
					res, err := Generate(bg, sess, prompt, Options{MaxNewTokens: 60, Sampling: s, StopIDs: chat.StopIDs,
						PrefillChunk: cfg.MaxWrite, Decoder: chat.Tokenizer, Constraint: c})
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				free := run(sampler.Sampling{}, nil)
				if json.Valid([]byte(free.Text)) {
					t.Fatalf("unconstrained greedy output %q is already JSON: the test proves nothing", free.Text)
				}
				for _, s := range []sampler.Sampling{{}, {Temperature: 1, TopP: 0.9, Seed: 7}, {Temperature: 1.5, TopK: 50, Seed: 8}} {
					mt, err := m.Constrain(g)
					if err != nil {
						t.Fatal(err)
					}
					res := run(s, mt)
					if !replyRE.MatchString(res.Text) || !json.Valid([]byte(res.Text)) {
						t.Errorf("%+v: %q does not match the grammar", s, res.Text)
					}
					if res.StopReason != StopEOS || !mt.Done() {
						t.Errorf("%+v: stop %q (done %v), want the end of turn", s, res.StopReason, mt.Done())
					}
				}
			})
		})
	}
}

func TestConstrainedGenerateErrors(t *testing.T) {
	if _, err := (&Model{}).Constrain(nil); !errors.Is(err, ErrNoTokenizer) {
		t.Errorf("no tokenizer: %v", err)
	}
	e := &zeroEngine{vocab: 300}
	s := openZero(e, flatConfig(64, 0))
	mask := make([]uint64, 5) // allows nothing
	_, err := Generate(bg, s, []int{1, 2}, Options{MaxNewTokens: 3, Constraint: fixedMask(mask)})
	if !errors.Is(err, sampler.ErrNothingAllowed) {
		t.Errorf("empty mask: %v", err)
	}
	if _, err := Generate(bg, s, []int{1, 2}, Options{MaxNewTokens: 3, IgnoreEOS: true, Constraint: fixedMask(mask)}); err == nil {
		t.Error("constraint with IgnoreEOS: no error")
	}
}

// fixedMask is a fake constraint: always the same mask.
type fixedMask []uint64

func (f fixedMask) Mask() []uint64   { return f }
func (f fixedMask) Accept(int) error { return nil }

// A JSON Schema on the fixtures: whatever the random weights prefer, the
// reply decodes into the schema's shape and keeps its bounds.
func TestConstrainedJSONSchema(t *testing.T) {
	const schema = `{"type":"object","properties":{"name":{"type":"string","maxLength":8},
		"age":{"type":"integer","minimum":18,"maximum":99},"tags":{"type":"array","items":{"enum":["red","green"]},"maxItems":2},
		"active":{"type":"boolean"}},"required":["name","age","active"],"additionalProperties":false}`
	g, err := grammar.FromJSONSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range models(fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3) {
		t.Run(name, func(t *testing.T) {
			dir := fixtures.Unpacked(t, name)
			info, cfg := fixtureConfig(t, name, "fp32")
			chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", info.EOSIDs)
			if err != nil {
				t.Fatal(err)
			}
			m := &Model{Chat: chat, StopIDs: chat.StopIDs}
			sess, _ := openOn(t, engineCPU(t), name, "fp32")
			prompt, _ := chat.Encode("Describe a person.")
			for _, s := range []sampler.Sampling{{}, {Temperature: 1, Seed: 21}} {
				if err := sess.Clear(); err != nil {
					t.Fatal(err)
				}
				mt, err := m.Constrain(g)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Generate(bg, sess, prompt, Options{MaxNewTokens: 200, Sampling: s, StopIDs: chat.StopIDs,
					PrefillChunk: cfg.MaxWrite, Decoder: chat.Tokenizer, Constraint: mt})
				if err != nil {
					t.Fatal(err)
				}
				if res.StopReason != StopEOS {
					t.Fatalf("%+v: stopped by %s after %q", s, res.StopReason, res.Text)
				}
				var v struct {
					Name   *string
					Age    *int
					Tags   []string
					Active *bool
				}
				d := json.NewDecoder(strings.NewReader(res.Text))
				d.DisallowUnknownFields()
				if err := d.Decode(&v); err != nil {
					t.Fatalf("%+v: %q: %v", s, res.Text, err)
				}
				if v.Name == nil || utf8.RuneCountInString(*v.Name) > 8 || v.Age == nil || *v.Age < 18 || *v.Age > 99 ||
					v.Active == nil || len(v.Tags) > 2 {
					t.Errorf("%+v: %q breaks the schema", s, res.Text)
				}
				for _, tag := range v.Tags {
					if tag != "red" && tag != "green" {
						t.Errorf("%+v: tag %q", s, tag)
					}
				}
				t.Logf("%+v: %s", s, res.Text)
			}
		})
	}
}

// A required tool call on the qwen3 fixture (the one whose template renders
// tools): the model's own template renders the tools, the reply is
// constrained to a Hermes call, and it parses back into a call of the tool
// with arguments of its schema. The fixture's context is 128 tokens and
// the template's tool preamble 203, so the reply follows a short prompt.
func TestConstrainedToolCall(t *testing.T) {
	name := fixtures.Qwen3
	dir := fixtures.Unpacked(t, name)
	info, cfg := fixtureConfig(t, name, "fp32")
	chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", info.EOSIDs)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := chat.Template.(ChatTemplate).T
	format, err := tmpl.ToolFormat()
	if err != nil {
		t.Fatal(err)
	}
	params := `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false}`
	tools := []chattmpl.Tool{{Name: "get_forecast", Parameters: json.RawMessage(params)}, {Name: "get_time"}}
	wire := []any{}
	for _, tl := range tools {
		fn := map[string]any{"name": tl.Name}
		if tl.Parameters != nil {
			var p any
			json.Unmarshal(tl.Parameters, &p)
			fn["parameters"] = p
		}
		wire = append(wire, map[string]any{"type": "function", "function": fn})
	}
	text, err := tmpl.Render([]chattmpl.Message{{Role: "user", Content: "Weather in Oslo for 3 days?"}}, chattmpl.RenderOptions{AddGenerationPrompt: true, Tools: wire})
	if err != nil || !strings.Contains(text, "get_forecast") {
		t.Fatalf("render: %v\n%s", err, text)
	}
	prompt, err := chat.Encode("Weather in Oslo for 3 days?")
	if err != nil {
		t.Fatal(err)
	}
	g, err := chattmpl.ToolCallGrammar(format, tools, "get_forecast")
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{Chat: chat, StopIDs: chat.StopIDs}
	mt, err := m.Constrain(g)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := openOn(t, engineCPU(t), name, "fp32")
	res, err := Generate(bg, sess, prompt, Options{MaxNewTokens: 100, StopIDs: chat.StopIDs, PrefillChunk: cfg.MaxWrite,
		Decoder: chat.Tokenizer, Constraint: mt})
	if err != nil {
		t.Fatal(err)
	}
	_, calls, err := chattmpl.ParseToolCalls(format, res.Text)
	if err != nil || len(calls) != 1 || calls[0].Name != "get_forecast" || res.StopReason != StopEOS {
		t.Fatalf("reply %q (stop %s): calls %+v, %v", res.Text, res.StopReason, calls, err)
	}
	var args struct {
		City *string
		Days *int
	}
	d := json.NewDecoder(strings.NewReader(calls[0].Arguments))
	d.DisallowUnknownFields()
	if err := d.Decode(&args); err != nil || args.City == nil || args.Days == nil || *args.Days < 1 || *args.Days > 7 {
		t.Errorf("arguments %s: %v", calls[0].Arguments, err)
	}
}
