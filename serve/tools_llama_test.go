package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/chattmpl"
	"etchat/internal/fixtures"
)

// Llama 3.x tool calls through the server on the random-weight llama3
// fixture with a short template in Llama's format (fixtures.
// LlamaShortTools): required and a named function make a reply that is
// {"name": …, "parameters": …}, only the grammar can make these weights
// write it, and it comes back as tool_calls; the call and the tool's
// result are rendered back (an ipython turn); streamed, the call is one
// delta.tool_calls chunk and nothing of its JSON is sent as content.
func TestServeLlamaToolCalls(t *testing.T) {
	_, ts := newServer(t, Options{Models: []string{filepath.Join(fixtures.LlamaShortTools(t), "model.pte")}})
	url := ts.URL + "/v1/chat/completions"
	id := path(do(t, "GET", ts.URL+"/v1/models", "").doc, "data", 0, "id").(string)
	user := []map[string]any{{"role": "user", "content": "Weather in Oslo?"}}
	tools := []any{weatherTool, timeTool}

	checkCall(t, post(t, url, map[string]any{"model": id, "messages": user, "tools": tools, "tool_choice": "required",
		"max_tokens": 40, "temperature": 0}), "")
	named := post(t, url, map[string]any{"model": id, "messages": user, "tools": tools, "max_tokens": 40, "temperature": 1, "seed": 5,
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}})
	checkCall(t, named, "get_weather")

	call := path(named.doc, "choices", 0, "message").(map[string]any)
	if call["content"] != nil {
		t.Errorf("a reply that only calls has content %v", call["content"])
	}
	back := append(append([]map[string]any{}, user...), call,
		map[string]any{"role": "tool", "tool_call_id": path(call, "tool_calls", 0, "id"), "content": "sunny"})
	r := post(t, url, map[string]any{"model": id, "messages": back, "tools": tools, "tool_choice": "none", "max_tokens": 5, "temperature": 0,
		"return_token_ids": true})
	if r.status != http.StatusOK || path(r.doc, "choices", 0, "finish_reason") == "tool_calls" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	tok := post(t, ts.URL+"/detokenize", map[string]any{"model": id, "tokens": path(r.doc, "prompt_token_ids")})
	p, _ := tok.doc["content"].(string)
	// The arguments come back as the template's tojson writes them
	// (Python's json.dumps spacing), whatever spacing the model used.
	var args struct{ City string }
	if err := json.Unmarshal([]byte(path(call, "tool_calls", 0, "function", "arguments").(string)), &args); err != nil {
		t.Fatal(err)
	}
	var city bytes.Buffer
	enc := json.NewEncoder(&city)
	enc.SetEscapeHTML(false)
	enc.Encode(args.City)
	if !strings.Contains(p, "<|start_header_id|>ipython<|end_header_id|>\n\nsunny<|eot_id|>") ||
		!strings.Contains(p, `{"name": "get_weather", "parameters": {"city": `+strings.TrimSpace(city.String())+`}}<|eot_id|>`) {
		t.Fatalf("rendered prompt %q (city %q)", p, args.City)
	}

	resp, err := http.Post(url, "application/json", jsonBytes(map[string]any{"model": id, "messages": user, "tools": tools,
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}, "max_tokens": 40, "temperature": 0, "stream": true}))
	if err != nil {
		t.Fatal(err)
	}
	docs, done := events(t, resp.Body)
	resp.Body.Close()
	var streamed []any
	var finish any
	for _, d := range docs {
		if c, ok := path(d, "choices", 0, "delta", "tool_calls").([]any); ok {
			streamed = append(streamed, c...)
		}
		if s, _ := path(d, "choices", 0, "delta", "content").(string); s != "" {
			t.Errorf("streamed content %q", s)
		}
		if f := path(d, "choices", 0, "finish_reason"); f != nil {
			finish = f
		}
	}
	if !done || finish != "tool_calls" || len(streamed) != 1 || path(streamed[0], "function", "name") != "get_time" {
		t.Fatalf("stream: done %v finish %v calls %v", done, finish, streamed)
	}
}

// A streamed Llama 3.x reply is held while it may be a call (empty, or
// starting with { or <|python_tag|>) and passes on once it is text.
func TestLlamaToolHold(t *testing.T) {
	req := &request{Tools: &toolRequest{choice: "auto", format: "llama3-json"}}
	h := newToolHold(req)
	var sent strings.Builder
	for _, piece := range []string{" ", "<|python", "_tag|>{\"name\": \"get_time\",", " \"parameters\": {}}"} {
		sent.WriteString(h.push(piece))
	}
	c := &choice{text: h.buf.String(), finish: "stop"}
	readCalls(req, c)
	if sent.String() != "" || c.finish != "tool_calls" || len(c.calls) != 1 || c.calls[0].Name != "get_time" || h.rest(c) != "" {
		t.Fatalf("sent %q, %+v rest %q", sent.String(), c, h.rest(c))
	}

	h = newToolHold(req)
	sent.Reset()
	for _, piece := range []string{"\n", "It is", " {sunny}"} {
		sent.WriteString(h.push(piece))
	}
	c = &choice{text: h.buf.String(), finish: "stop"}
	readCalls(req, c)
	if sent.String() != "\nIt is {sunny}" || c.calls != nil || h.rest(c) != "" {
		t.Fatalf("sent %q, %+v rest %q", sent.String(), c, h.rest(c))
	}

	// JSON that is not a call is sent as text when the reply ends.
	h = newToolHold(req)
	if s := h.push(`{"city": "Oslo"}`); s != "" {
		t.Fatalf("sent %q early", s)
	}
	c = &choice{text: h.buf.String(), finish: "stop"}
	readCalls(req, c)
	if c.calls != nil || c.finish != "stop" || h.rest(c) != `{"city": "Oslo"}` {
		t.Fatalf("%+v rest %q", c, h.rest(c))
	}
}

// A tool is passed to the template as the client sent it: its keys in
// their order and its integers as integers (the template's tojson writes
// it into the prompt, as Hugging Face's apply_chat_template does).
func TestDecodeToolKeepsOrder(t *testing.T) {
	raw := `{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"z": {"type": "integer", "maximum": 3}, "a": {}}}}}`
	_, def, ae := decodeTool(json.RawMessage(raw), "tools[0]")
	if ae != nil {
		t.Fatal(ae)
	}
	tmpl, err := chattmpl.NewTemplate("t", "{{ tools[0] | tojson }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(nil, chattmpl.RenderOptions{Tools: []any{def}})
	if want := `{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"z": {"type": "integer", "maximum": 3}, "a": {}}}}}`; err != nil || got != want {
		t.Errorf("got %s, %v\nwant %s", got, err, want)
	}
}

// Llama 3.2's own template on the llama3 fixture: tools are accepted
// (its format is read), a prompt it makes too long for the fixture's
// 128-token context is refused as such, and a history with two calls in
// one message gets the template's own refusal as a 400 on messages.
func TestServeLlama32Template(t *testing.T) {
	_, ts := newServer(t, Options{Models: []string{filepath.Join(fixtures.Llama32(t), "model.pte")}})
	url := ts.URL + "/v1/chat/completions"
	id := path(do(t, "GET", ts.URL+"/v1/models", "").doc, "data", 0, "id").(string)
	user := []map[string]any{{"role": "user", "content": "Weather?"}}
	long := post(t, url, map[string]any{"model": id, "messages": user, "tools": []any{timeTool}, "max_tokens": 5})
	if long.status != http.StatusBadRequest || path(long.doc, "error", "param") == "tools" || !strings.Contains(string(long.raw), "128") {
		t.Errorf("one tool with Llama 3.2's preamble: %d %s", long.status, long.raw)
	}
	two := []any{
		map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_time", "arguments": "{}"}},
		map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "get_time", "arguments": "{}"}},
	}
	msgs := []map[string]any{user[0], {"role": "assistant", "content": nil, "tool_calls": two},
		{"role": "tool", "tool_call_id": "call_1", "content": "12:00"}, {"role": "tool", "tool_call_id": "call_2", "content": "12:00"}}
	r := post(t, url, map[string]any{"model": id, "messages": msgs, "tools": []any{timeTool}, "max_tokens": 5})
	if r.status != http.StatusBadRequest || path(r.doc, "error", "param") != "messages" || !strings.Contains(string(r.raw), "only supports single tool-calls") {
		t.Errorf("two calls in one message: %d %s", r.status, r.raw)
	}
}

// Stored conversations keep a Llama call as the model writes it: the
// stored text parses back into the same call.
func TestStoreLlamaToolCalls(t *testing.T) {
	db := openStore(t)
	_, ts := newServer(t, Options{Models: []string{filepath.Join(fixtures.LlamaShortTools(t), "model.pte")}, Store: db, StoreConversations: true})
	url := ts.URL + "/v1/chat/completions"
	id := path(do(t, "GET", ts.URL+"/v1/models", "").doc, "data", 0, "id").(string)
	user := []map[string]any{{"role": "user", "content": "Weather in Oslo?"}}
	named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	r := post(t, url, map[string]any{"model": id, "messages": user, "tools": []any{weatherTool}, "tool_choice": named, "max_tokens": 40, "temperature": 0})
	checkCall(t, r, "get_weather")
	waitRuns(t, db, 1)
	convs, err := db.ListConversations(context.Background(), 0)
	if err != nil || len(convs) != 1 {
		t.Fatalf("conversations %+v, %v", convs, err)
	}
	_, msgs, err := db.CurrentPath(context.Background(), convs[0].ID)
	if err != nil || len(msgs) != 2 || msgs[1].Role != "assistant" {
		t.Fatalf("stored path %+v, %v", msgs, err)
	}
	_, calls, err := chattmpl.ParseToolCalls(chattmpl.ToolFormatLlama3JSON, msgs[1].Text)
	if err != nil || len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Arguments != path(r.doc, "choices", 0, "message", "tool_calls", 0, "function", "arguments") {
		t.Fatalf("stored reply %q: %+v %v", msgs[1].Text, calls, err)
	}
}
