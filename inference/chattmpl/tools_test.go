package chattmpl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// Of the fixtures only qwen3's template renders tools; llama3's (Llama
// 3.0's) and gemma3's render the same with and without them, as do the
// built-ins.
func TestToolFormat(t *testing.T) {
	for model, want := range map[string]string{fixtures.Qwen3: ToolFormatHermes, fixtures.Llama3: "", fixtures.Gemma3: ""} {
		tmpl, _, err := Choose(modelDir(t, model), "auto")
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.ToolFormat()
		var nt *NoToolsError
		if got != want || (want == "") != errors.As(err, &nt) {
			t.Errorf("%s: format %q, error %v; want %q", model, got, err, want)
		}
	}
	for _, name := range []string{"llama3", "chatml"} {
		tmpl, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		var nt *NoToolsError
		if _, err := tmpl.ToolFormat(); !errors.As(err, &nt) || !strings.Contains(err.Error(), name) {
			t.Errorf("built-in %s: %v", name, err)
		}
	}
}

func TestParseToolCalls(t *testing.T) {
	text, calls, err := ParseToolCalls(ToolFormatHermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"+
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>")
	if err != nil || text != "Let me check." || len(calls) != 2 || calls[0] != (ToolCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}) || calls[1] != (ToolCall{Name: "get_time", Arguments: `{"tz": "CET"}`}) {
		t.Errorf("%q %+v %v", text, calls, err)
	}
	if text, calls, err := ParseToolCalls(ToolFormatHermes, "no call"); text != "no call" || calls != nil || err != nil {
		t.Errorf("plain: %q %v %v", text, calls, err)
	}
	for _, bad := range []string{"<tool_call>{\"name\": \"x\"", "<tool_call>{}</tool_call>", "<tool_call>not json</tool_call>"} {
		if _, _, err := ParseToolCalls(ToolFormatHermes, bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The grammar of a required call accepts exactly a call to one of the
// tools with arguments of its schema.
func TestToolCallGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}`)},
		{Name: "now"},
	}
	g, err := ToolCallGrammar(ToolFormatHermes, tools, "")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>": true,
		"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>":                                             true,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\"}}\n</tool_call>":                      false,
		"<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>":                                           false,
	} {
		if whole, _ := g.Match([]byte(s)); whole != want {
			t.Errorf("%q: %v", s, whole)
		}
	}
	named, err := ToolCallGrammar(ToolFormatHermes, tools, "now")
	if err != nil {
		t.Fatal(err)
	}
	if whole, _ := named.Match([]byte("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>")); whole {
		t.Error("the named grammar accepts another tool")
	}
	if _, err := ToolCallGrammar(ToolFormatHermes, tools, "missing"); err == nil {
		t.Error("a missing named tool: no error")
	}
}
