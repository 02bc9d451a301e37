package chattmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"etchat/inference/chattmpl/jinja"
	"etchat/inference/grammar"
)

// Tool calls. A template supports tools when tools change what it renders
// (the built-ins, Llama 3.0's and Gemma 3's do not); the model then writes
// its calls in its family's format, which ParseToolCalls reads back and
// ToolCallGrammar constrains (tool_choice required or a named function).
// Formats: "hermes" (Qwen 2.5/3, Hermes: <tool_call>{"name": …,
// "arguments": {…}}</tool_call>, one block per call) and "llama3-json"
// (Llama 3.1/3.2/3.3: the whole reply is {"name": …, "parameters": {…}},
// after <|python_tag|> in 3.1's custom-tool form; see llamatools.go).

// Tool is a function a model may call: its name and its parameters' JSON
// Schema (nil: an object of anything).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// ToolCall is one call parsed from a reply: the arguments as JSON text.
// ID is the caller's name for it (the server gives one; a parsed call has
// none).
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallsValue is calls as a template reads a message's tool_calls:
// OpenAI's objects, the arguments as an object when they parse (templates
// print them with tojson) and as the text otherwise. The object keeps the
// order of its keys and its integers as integers (jinja.DecodeJSON), so
// tojson writes back {"days": 3} as the model wrote it, not 3.0.
func ToolCallsValue(calls []ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		var args any = c.Arguments
		if v, err := jinja.DecodeJSON([]byte(c.Arguments)); err == nil {
			if obj, ok := v.(*jinja.Dict); ok {
				args = obj
			}
		}
		out[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
	}
	return out
}

// ToolFormatHermes is the <tool_call> JSON block format.
const ToolFormatHermes = "hermes"

// ToolCallOpen is the text that opens a call in format (a streamed reply
// is held back from there on, to be parsed when it ends), or "" when the
// format has no opening tag (llama3-json: see HoldFrom).
func ToolCallOpen(format string) string {
	if format == ToolFormatHermes {
		return "<tool_call>"
	}
	return ""
}

// HoldFrom is where a streamed reply s in format must be held back from,
// as it may be (the start of) a call that is parsed when the reply ends:
// len(s) when all of it can be sent as text now. Hermes holds from its
// opening tag, or from a suffix that may begin one; llama3-json, whose
// calls are the whole reply, holds everything while the reply is empty
// or starts like a call ({ or <|python_tag|>, after spaces) and nothing
// once it has started as text.
func HoldFrom(format, s string) int {
	if format == ToolFormatLlama3JSON {
		if llamaCallStart(s) {
			return 0
		}
		return len(s)
	}
	open := ToolCallOpen(format)
	if open == "" {
		return len(s)
	}
	if i := strings.Index(s, open); i >= 0 {
		return i
	}
	for k := min(len(open)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, open[:k]) {
			return len(s) - k
		}
	}
	return len(s)
}

// FormatToolCalls writes calls as the model writes them in format (what
// ParseToolCalls reads back): for a transcript kept as text.
func FormatToolCalls(format string, calls []ToolCall) string {
	switch format {
	case ToolFormatLlama3JSON:
		return formatCalls(calls, "\n{\"name\": %s, \"parameters\": %s}") // one per line
	case ToolFormatHermes:
		return formatCalls(calls, "\n<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>")
	}
	return ""
}

// formatCalls writes each call through layout, which takes the name and
// the arguments as JSON (arguments that are not JSON go in as a string).
func formatCalls(calls []ToolCall, layout string) string {
	var b strings.Builder
	for _, c := range calls {
		name, _ := json.Marshal(c.Name)
		args := c.Arguments
		if !json.Valid([]byte(args)) {
			a, _ := json.Marshal(args)
			args = string(a)
		}
		fmt.Fprintf(&b, layout, name, args)
	}
	return b.String()
}

// NoToolsError: tools were given to a template that renders the same with
// and without them.
type NoToolsError struct{ Template string }

func (e *NoToolsError) Error() string {
	return fmt.Sprintf("the chat template %s does not render tools: this model was not given a way to call them", e.Template)
}

var probeTool = []any{map[string]any{"type": "function", "function": map[string]any{"name": "etchat_probe",
	"description": "probe", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}}

// ToolFormat is the format the template's model writes tool calls in, or
// a NoToolsError when tools do not change its rendering.
// It renders probes (up to three renderings) the first time only: the
// server asks on every request with tools.
func (t *Template) ToolFormat() (string, error) {
	if t.builtin != nil {
		return "", &NoToolsError{Template: t.Name}
	}
	t.toolFormatOnce.Do(func() { t.toolFormat, t.toolFormatErr = t.findToolFormat() })
	return t.toolFormat, t.toolFormatErr
}

func (t *Template) findToolFormat() (string, error) {
	msgs := []Message{{Role: "user", Content: "x"}}
	plain, err := t.Render(msgs, RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		return "", err
	}
	with, err := t.Render(msgs, RenderOptions{AddGenerationPrompt: true, Tools: probeTool})
	if err != nil || with == plain {
		return "", &NoToolsError{Template: t.Name}
	}
	if strings.Contains(t.Source, "<tool_call>") {
		return ToolFormatHermes, nil
	}
	if t.writesLlamaCalls() {
		return ToolFormatLlama3JSON, nil
	}
	return "", fmt.Errorf("the chat template %s renders tools in a format etchat does not parse yet (hermes <tool_call> blocks and Llama 3.x JSON calls are)", t.Name)
}

// ParseToolCalls splits a reply in format into its text and its calls. A
// block that is not a call (bad JSON, no name) is an error: the reply
// claimed a call it did not make.
func ParseToolCalls(format, reply string) (text string, calls []ToolCall, err error) {
	if format == ToolFormatLlama3JSON {
		return parseLlamaCalls(reply)
	}
	if format != ToolFormatHermes {
		return "", nil, fmt.Errorf("tool-call format %q is not supported", format)
	}
	const open, closeTag = "<tool_call>", "</tool_call>"
	var rest strings.Builder
	s := reply
	for {
		i := strings.Index(s, open)
		if i < 0 {
			rest.WriteString(s)
			break
		}
		rest.WriteString(s[:i])
		s = s[i+len(open):]
		j := strings.Index(s, closeTag)
		if j < 0 {
			return "", nil, errors.New("a <tool_call> block is not closed")
		}
		call, err := parseHermesCall(s[:j])
		if err != nil {
			return "", nil, err
		}
		calls = append(calls, call)
		s = s[j+len(closeTag):]
	}
	return strings.TrimSpace(rest.String()), calls, nil
}

func parseHermesCall(body string) (ToolCall, error) {
	var c struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	d := json.NewDecoder(strings.NewReader(body))
	if err := d.Decode(&c); err != nil || d.More() {
		return ToolCall{}, fmt.Errorf("a <tool_call> block is not one JSON object: %q", clipText(body))
	}
	if c.Name == "" {
		return ToolCall{}, fmt.Errorf("a <tool_call> block has no name: %q", clipText(body))
	}
	return ToolCall{Name: c.Name, Arguments: normArgs(c.Arguments)}, nil
}

// normArgs is a parsed call's arguments as JSON text: {} when absent or
// null, the inner text when the model wrote them as a JSON string.
func normArgs(raw json.RawMessage) string {
	args := bytes.TrimSpace(raw)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return "{}"
	}
	if args[0] == '"' { // arguments as a JSON string holding JSON
		var s string
		if json.Unmarshal(args, &s) == nil {
			return s
		}
	}
	return string(args)
}

func clipText(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// ToolCallGrammar is the grammar of one call in format to one of tools
// (only the one named when name is not ""), its arguments following the
// tool's parameters schema: tool_choice "required" or a named function.
func ToolCallGrammar(format string, tools []Tool, name string) (*grammar.Grammar, error) {
	if format != ToolFormatHermes && format != ToolFormatLlama3JSON {
		return nil, fmt.Errorf("tool-call format %q is not supported", format)
	}
	var alts []string
	var schemas [][]byte
	for _, tl := range tools {
		if name != "" && tl.Name != name {
			continue
		}
		params := tl.Parameters
		if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
			params = []byte(`{"type":"object"}`)
		}
		nameJSON, _ := json.Marshal(tl.Name)
		alts = append(alts, fmt.Sprintf(`"{\"name\": " %s ", \"%s\": " schema-%d "}"`, grammar.Literal(string(nameJSON)), argsKey(format), len(schemas)))
		schemas = append(schemas, params)
	}
	if len(alts) == 0 {
		if name != "" {
			return nil, fmt.Errorf("tool_choice names %q, which is not among the tools", name)
		}
		return nil, errors.New("no tools to call")
	}
	root := `( ` + strings.Join(alts, " | ") + ` )`
	if format == ToolFormatHermes {
		root = `"<tool_call>\n" ` + root + ` "\n</tool_call>"`
	}
	return grammar.WithSchemas(root, schemas)
}
