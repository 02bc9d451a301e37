package chattmpl

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// Llama 3.1/3.2/3.3 tool calls ("llama3-json"). Their templates ask for
// a reply that is nothing but the call, {"name": function name,
// "parameters": {argument: value}}, and render an assistant message's
// tool_calls back the same way (Llama 3.2's template refuses more than
// one call per message; models still write several, one after another).
// Llama 3.1 may open a custom tool call with <|python_tag|> (and end it
// with <|eom_id|>); the tag is dropped when present. Tool results are
// rendered by the template itself as ipython turns (role "tool").

// ToolFormatLlama3JSON is the Llama 3.x JSON call format.
const ToolFormatLlama3JSON = "llama3-json"

// pythonTag opens Llama 3.1's tool calls.
const pythonTag = "<|python_tag|>"

// argsKey is the field a call's arguments go in, in format.
func argsKey(format string) string {
	if format == ToolFormatLlama3JSON {
		return "parameters"
	}
	return "arguments"
}

// writesLlamaCalls reports whether the template renders an assistant's
// tool call as Llama 3.x JSON: recognised by what it renders, not by its
// source, so that 3.1's, 3.2's and 3.3's templates (and fine-tunes'
// copies of them) all qualify.
func (t *Template) writesLlamaCalls() bool {
	call := ToolCall{ID: "call_probe", Name: "etchat_probe", Arguments: `{"a": 1}`}
	msgs := []Message{
		{Role: "user", Content: "x"},
		{Role: "assistant", Extra: map[string]any{"tool_calls": ToolCallsValue([]ToolCall{call})}},
	}
	out, err := t.Render(msgs, RenderOptions{Tools: probeTool})
	return err == nil && strings.Contains(out, `{"name": "etchat_probe", "parameters": {"a": 1}}`)
}

// llamaCallStart reports whether a reply so far may be a Llama 3.x call:
// nothing yet but spaces, or a start of { or <|python_tag|>.
func llamaCallStart(s string) bool {
	t := strings.TrimLeftFunc(s, unicode.IsSpace) // as parseLlamaCalls' TrimSpace
	return t == "" || t[0] == '{' || strings.HasPrefix(pythonTag, t) || strings.HasPrefix(t, pythonTag)
}

// parseLlamaCalls reads a reply that is one or more calls (separated by
// spaces, ";" or ","), after an optional <|python_tag|>. A reply that
// does not start with { is text; one that does but is not made of calls
// is an error (it may be JSON the user asked for: the caller keeps it as
// text).
func parseLlamaCalls(reply string) (string, []ToolCall, error) {
	rest := strings.TrimSpace(reply)
	rest = strings.TrimSpace(strings.TrimPrefix(rest, pythonTag))
	if !strings.HasPrefix(rest, "{") {
		return strings.TrimSpace(reply), nil, nil
	}
	var calls []ToolCall
	for rest != "" {
		if rest[0] != '{' {
			return "", nil, fmt.Errorf("text after a Llama 3.x tool call: %q", clipText(rest))
		}
		var c struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			Arguments  json.RawMessage `json:"arguments"`
		}
		d := json.NewDecoder(strings.NewReader(rest))
		if err := d.Decode(&c); err != nil {
			return "", nil, fmt.Errorf("a Llama 3.x tool call is not a JSON object: %q", clipText(rest))
		}
		if c.Name == "" {
			return "", nil, fmt.Errorf("a Llama 3.x tool call has no name: %q", clipText(rest))
		}
		args := c.Parameters
		if len(args) == 0 {
			args = c.Arguments
		}
		calls = append(calls, ToolCall{Name: c.Name, Arguments: normArgs(args)})
		rest = strings.TrimLeft(rest[d.InputOffset():], " \t\r\n;,")
	}
	return "", calls, nil
}
