package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"etchat/inference"
	"etchat/inference/chattmpl"
	"etchat/inference/chattmpl/jinja"
)

// Tool calls on the chat endpoint (issue 39). tools are rendered through
// the model's own chat template; a template that renders the same with
// and without them has no tool support and the request gets a 400 naming
// it. tool_choice: "auto" (the default) lets the model write calls in its
// family's format, parsed out of the reply; "required" and a named
// function constrain the reply to one call (chattmpl.ToolCallGrammar);
// "none" renders no tools, so the model answers in text.

// toolRequest is a request's tools and tool_choice.
type toolRequest struct {
	defs   []any           // the tools as sent, for the template
	tools  []chattmpl.Tool // their names and parameter schemas, for the grammar
	choice string          // auto, none, required or function
	name   string          // the function tool_choice names
	format string          // the template's call format, once the model is known
}

// calls reports whether the reply is read for tool calls.
func (t *toolRequest) calls() bool { return t != nil && t.choice != "none" }

type wireTools struct {
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// maxTools bounds a request's tools (OpenAI's limit is 128).
const maxTools = 128

// decodeTools reads a chat body's tools and tool_choice into r.Tools.
func (r *request) decodeTools(body []byte) *apiError {
	var w wireTools
	if err := json.Unmarshal(body, &w); err != nil {
		return badRequest("tools", "tools: %v", err)
	}
	raw := bytes.TrimSpace(w.Tools)
	if isNone(raw, "[]") {
		if !isNone(bytes.TrimSpace(w.ToolChoice), `"none"`, `"auto"`) {
			return badRequest("tool_choice", "tool_choice needs tools")
		}
		return nil
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(raw, &defs); err != nil {
		return badRequest("tools", "tools must be an array of tool objects")
	}
	if len(defs) > maxTools {
		return badRequest("tools", "%d tools; at most %d", len(defs), maxTools)
	}
	t := &toolRequest{choice: "auto"}
	for i, d := range defs {
		tl, def, ae := decodeTool(d, fmt.Sprintf("tools[%d]", i))
		if ae != nil {
			return ae
		}
		t.tools, t.defs = append(t.tools, tl), append(t.defs, def)
	}
	if ae := t.decodeChoice(w.ToolChoice); ae != nil {
		return ae
	}
	if r.Grammar != nil && (t.choice == "required" || t.choice == "function") {
		return badRequest("tool_choice", "tool_choice %q and response_format both constrain the reply; send one", t.choice)
	}
	r.Tools = t
	return nil
}

// isNone reports whether raw is absent, null, or one of empty.
func isNone(raw []byte, empty ...string) bool {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return true
	}
	for _, e := range empty {
		if bytes.Equal(raw, []byte(e)) {
			return true
		}
	}
	return false
}

// decodeTool reads one tool: a function with a name (its parameters a
// schema the grammar compiler checks when a call is constrained).
func decodeTool(raw json.RawMessage, param string) (chattmpl.Tool, any, *apiError) {
	var wt wireTool
	if err := json.Unmarshal(raw, &wt); err != nil {
		return chattmpl.Tool{}, nil, badRequest(param, "%s must be a tool object: %v", param, err)
	}
	if wt.Type != "function" {
		return chattmpl.Tool{}, nil, badRequest(param+".type", "%s.type %q is not supported (function)", param, clip(wt.Type))
	}
	if wt.Function == nil || wt.Function.Name == "" {
		return chattmpl.Tool{}, nil, badRequest(param+".function.name", "%s.function.name is required", param)
	}
	// Decoded keeping the client's key order and integers: templates print
	// the tools with tojson, as Hugging Face does from the request's JSON.
	def, err := jinja.DecodeJSON(raw)
	if err != nil {
		return chattmpl.Tool{}, nil, badRequest(param, "%s: %v", param, err)
	}
	return chattmpl.Tool{Name: wt.Function.Name, Parameters: wt.Function.Parameters}, def, nil
}

// decodeChoice reads tool_choice: "none", "auto", "required", or
// {"type": "function", "function": {"name": …}} naming one of the tools.
func (t *toolRequest) decodeChoice(raw json.RawMessage) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none", "auto", "required":
			t.choice = s
			return nil
		}
		return badRequest("tool_choice", "tool_choice %q is not supported (none, auto, required or a function)", clip(s))
	}
	var f struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "function" || f.Function.Name == "" {
		return badRequest("tool_choice", `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": …}}`)
	}
	for _, tl := range t.tools {
		if tl.Name == f.Function.Name {
			t.choice, t.name = "function", tl.Name
			return nil
		}
	}
	return badRequest("tool_choice", "tool_choice names %q, which is not among the tools", clip(f.Function.Name))
}

// wireToolCall is an assistant message's call as OpenAI sends it.
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// decodeToolCalls reads an assistant message's tool_calls (arguments are
// a string of JSON, as OpenAI sends them, or an object).
func decodeToolCalls(raw json.RawMessage, param string) ([]inference.ToolCall, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var wc []wireToolCall
	if err := json.Unmarshal(raw, &wc); err != nil {
		return nil, badRequest(param, "%s must be an array of tool calls: %v", param, err)
	}
	out := make([]inference.ToolCall, len(wc))
	for i, c := range wc {
		if c.Function.Name == "" {
			return nil, badRequest(fmt.Sprintf("%s[%d].function.name", param, i), "%s[%d].function.name is required", param, i)
		}
		args := string(bytes.TrimSpace(c.Function.Arguments))
		var s string
		if json.Unmarshal(c.Function.Arguments, &s) == nil {
			args = s
		}
		out[i] = inference.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args}
	}
	return out, nil
}

// prepareTools checks, once the model is known, that its template renders
// tools, and constrains the reply for required or a named function.
func (e *entry) prepareTools(req *request) *apiError {
	t := req.Tools
	if !t.calls() {
		return nil
	}
	tt, ok := e.prep.Chat.Template.(inference.ToolTemplate)
	if !ok {
		return badRequest("tools", "%s has no chat template that renders tools (%s)", e.id, e.prep.Chat.TemplateName)
	}
	format, err := tt.ToolFormat()
	var nt *chattmpl.NoToolsError
	if errors.As(err, &nt) {
		return badRequest("tools", "%s: %v", e.id, err)
	}
	if err != nil {
		return badRequest("tools", "%s: %v", e.id, err)
	}
	t.format = format
	if t.choice == "required" || t.choice == "function" {
		g, err := chattmpl.ToolCallGrammar(format, t.tools, t.name)
		if err != nil {
			return badRequest("tools", "the tools' call grammar: %v", err)
		}
		req.Grammar = g
	}
	return nil
}

// renderTools is the template's rendering of the request with its tools
// (tool_choice none renders none).
func renderTools(tmpl inference.Template, req *request) (string, error) {
	tt, ok := tmpl.(inference.ToolTemplate)
	if !ok || !req.Tools.calls() {
		return tmpl.Render(req.Messages, true)
	}
	return tt.RenderTools(req.Messages, true, req.Tools.defs)
}

// readCalls splits a finished choice's text into its content and calls,
// setting the finish reason tool_calls when it made any. A reply whose
// call blocks do not parse stays text: the client sees what the model
// wrote.
func readCalls(req *request, c *choice) {
	if !req.Tools.calls() || c.err != nil {
		return
	}
	text, calls, err := chattmpl.ParseToolCalls(req.Tools.format, c.text)
	if err != nil || len(calls) == 0 {
		return
	}
	for i := range calls {
		calls[i].ID = callID()
	}
	c.text, c.calls, c.finish = text, calls, "tool_calls"
}

// callID is a new tool call's id.
func callID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// callsDoc is calls as OpenAI's message.tool_calls (with index when
// streamed as delta.tool_calls).
func callsDoc(calls []inference.ToolCall, streamed bool) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		d := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		if streamed {
			d["index"] = i
		}
		out[i] = d
	}
	return out
}

// messageDoc is a chat choice's message: its content (null when it only
// calls tools) and its calls.
func messageDoc(c *choice) map[string]any {
	m := map[string]any{"role": "assistant", "content": c.text}
	if len(c.calls) > 0 {
		m["tool_calls"] = callsDoc(c.calls, false)
		if c.text == "" {
			m["content"] = nil
		}
	}
	return m
}

// toolHold streams a reply that may call tools: text passes on until a
// call could begin in the family's format (chattmpl.HoldFrom: hermes'
// opening tag; a Llama 3.x reply that starts like JSON), then everything
// is held to be parsed when the reply ends.
type toolHold struct {
	format string
	buf    strings.Builder
	sent   int
}

// newToolHold holds back req's calls, or is nil when there are none to read.
func newToolHold(req *request) *toolHold {
	if !req.Tools.calls() {
		return nil
	}
	return &toolHold{format: req.Tools.format}
}

// push adds text and returns what can be sent now.
func (h *toolHold) push(text string) string {
	h.buf.WriteString(text)
	s := h.buf.String()
	safe := chattmpl.HoldFrom(h.format, s)
	if safe <= h.sent {
		return ""
	}
	out := s[h.sent:safe]
	h.sent = safe
	return out
}

// rest is what the finished choice still has to send as text: nothing
// when it made calls (they go as delta.tool_calls), else the held text.
func (h *toolHold) rest(c *choice) string {
	if len(c.calls) > 0 {
		return ""
	}
	return h.buf.String()[h.sent:]
}

// sendHeld sends what a streamed choice held back: its text when it made
// no calls, else its calls as one delta.tool_calls chunk.
func (x *eventStream) sendHeld(c *choice, h *toolHold, send emitFunc) error {
	if rest := h.rest(c); rest != "" {
		return send(c, rest)
	}
	if len(c.calls) == 0 {
		return nil
	}
	doc := x.chunk(c.index, "", nil, nil)
	doc["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"tool_calls": callsDoc(c.calls, true)}
	return x.send(doc)
}
