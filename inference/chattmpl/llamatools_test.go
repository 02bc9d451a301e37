package chattmpl

import (
	"encoding/json"
	"errors"
	"testing"

	"etchat/internal/fixtures"
)

// Llama 3.2's template (the llama3 fixture with its tokenizer_config) is
// recognised by how it renders a call: the Llama 3.x JSON format.
func TestLlamaToolFormat(t *testing.T) {
	tmpl, _, err := Choose(fixtures.Llama32(t), "auto")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := tmpl.ToolFormat(); f != ToolFormatLlama3JSON || err != nil {
		t.Errorf("format %q, %v", f, err)
	}
	// The Llama 3.0 template beside it renders no tools.
	old, _, err := Choose(fixtures.Unpacked(t, fixtures.Llama3), "auto")
	if err != nil {
		t.Fatal(err)
	}
	var nt *NoToolsError
	if _, err := old.ToolFormat(); !errors.As(err, &nt) {
		t.Errorf("Llama 3.0's template: %v", err)
	}
}

func TestParseLlamaToolCalls(t *testing.T) {
	for reply, want := range map[string][]ToolCall{
		`{"name": "get_weather", "parameters": {"city": "Paris"}}`:                               {{Name: "get_weather", Arguments: `{"city": "Paris"}`}},
		" <|python_tag|>{\"name\": \"now\", \"parameters\": {}}\n":                               {{Name: "now", Arguments: `{}`}},
		`{"name": "a", "parameters": {"x": 1}}; {"name": "b", "arguments": "{\"y\": 2}"}`:        {{Name: "a", Arguments: `{"x": 1}`}, {Name: "b", Arguments: `{"y": 2}`}},
		"{\"type\": \"function\", \"name\": \"now\", \"parameters\": null}\n{\"name\": \"now\"}": {{Name: "now", Arguments: `{}`}, {Name: "now", Arguments: `{}`}},
		`{"name": "get_weather", "parameters": {"city": "Nice", "days": [1, 2]}}`:                {{Name: "get_weather", Arguments: `{"city": "Nice", "days": [1, 2]}`}},
	} {
		text, calls, err := ParseToolCalls(ToolFormatLlama3JSON, reply)
		if err != nil || text != "" || len(calls) != len(want) {
			t.Errorf("%q: %q %+v %v", reply, text, calls, err)
			continue
		}
		for i := range want {
			if calls[i] != want[i] {
				t.Errorf("%q: call %d %+v, want %+v", reply, i, calls[i], want[i])
			}
		}
	}
	if text, calls, err := ParseToolCalls(ToolFormatLlama3JSON, " It is sunny {mostly}. "); text != "It is sunny {mostly}." || calls != nil || err != nil {
		t.Errorf("text: %q %v %v", text, calls, err)
	}
	for _, bad := range []string{`{"name": "x", "parameters": {`, `{"city": "Paris"}`, `{"name": "x"} and more`, `<|python_tag|>{not json}`} {
		if _, calls, err := ParseToolCalls(ToolFormatLlama3JSON, bad); err == nil {
			t.Errorf("%q: no error, calls %+v", bad, calls)
		}
	}
	// What FormatToolCalls writes, ParseToolCalls reads back.
	calls := []ToolCall{{Name: "a", Arguments: `{"x": 1}`}, {Name: "b", Arguments: "not json"}}
	_, back, err := ParseToolCalls(ToolFormatLlama3JSON, FormatToolCalls(ToolFormatLlama3JSON, calls))
	if err != nil || len(back) != 2 || back[0] != calls[0] || back[1] != calls[1] {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

// A required call in the Llama format is exactly the reply the template
// renders back for it: {"name": …, "parameters": …}.
func TestLlamaToolCallGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "now"},
	}
	g, err := ToolCallGrammar(ToolFormatLlama3JSON, tools, "")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		`{"name": "get_weather", "parameters": {"city": "Paris"}}`:          true,
		`{"name": "now", "parameters": {}}`:                                 true,
		`{"name": "get_weather", "parameters": {}}`:                         false,
		`{"name": "get_weather", "arguments": {"city": "Paris"}}`:           false,
		"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>": false,
	} {
		if whole, _ := g.Match([]byte(s)); whole != want {
			t.Errorf("%q: %v", s, whole)
		}
		if want {
			if _, calls, err := ParseToolCalls(ToolFormatLlama3JSON, s); err != nil || len(calls) != 1 {
				t.Errorf("%q does not parse back: %v", s, err)
			}
		}
	}
	named, err := ToolCallGrammar(ToolFormatLlama3JSON, tools, "now")
	if err != nil {
		t.Fatal(err)
	}
	if whole, _ := named.Match([]byte(`{"name": "get_weather", "parameters": {"city": "x"}}`)); whole {
		t.Error("the named grammar accepts another tool")
	}
}

// HoldFrom: what a streamed reply may send before it ends.
func TestHoldFrom(t *testing.T) {
	for _, c := range []struct {
		format, s string
		want      int
	}{
		{ToolFormatHermes, "Let me see", 10},
		{ToolFormatHermes, "Let me see <tool", 11},
		{ToolFormatHermes, "ok <tool_call>{\"name\"", 3},
		{ToolFormatLlama3JSON, "", 0},
		{ToolFormatLlama3JSON, "  ", 0},
		{ToolFormatLlama3JSON, "\n{\"name\"", 0},
		{ToolFormatLlama3JSON, "<|python", 0},
		{ToolFormatLlama3JSON, "<|python_tag|>{", 0},
		{ToolFormatLlama3JSON, "It is {sunny}", 13},
		{ToolFormatLlama3JSON, "<b>", 3},
		{"", "anything", 8},
	} {
		if got := HoldFrom(c.format, c.s); got != c.want {
			t.Errorf("%s %q: %d, want %d", c.format, c.s, got, c.want)
		}
	}
}
