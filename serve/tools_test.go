package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/chattmpl"
	"etchat/internal/fixtures"
)

var weatherTool = map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 6}},
		"required": []string{"city"}, "additionalProperties": false}}}
var timeTool = map[string]any{"type": "function", "function": map[string]any{"name": "get_time",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}}}

// checkCall asserts that a reply's message is one call to name (any of
// the two tools when "") whose
// arguments are JSON (a city of at most 6 characters for get_weather).
func checkCall(t *testing.T, r reply, name string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if f := path(r.doc, "choices", 0, "finish_reason"); f != "tool_calls" {
		t.Fatalf("finish_reason %v: %s", f, r.raw)
	}
	calls, _ := path(r.doc, "choices", 0, "message", "tool_calls").([]any)
	got, _ := path(calls, 0, "function", "name").(string)
	if name == "" && (got == "get_weather" || got == "get_time") {
		name = got // required: either tool
	}
	if len(calls) != 1 || got != name || path(calls[0], "type") != "function" ||
		!strings.HasPrefix(path(calls[0], "id").(string), "call_") {
		t.Fatalf("tool_calls %v", calls)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(path(calls[0], "function", "arguments").(string)), &args); err != nil {
		t.Fatalf("arguments: %v", err)
	}
	if name == "get_weather" {
		city, ok := args["city"].(string)
		if !ok || len([]rune(city)) > 6 || len(args) != 1 {
			t.Fatalf("arguments %v", args)
		}
	}
}

// Tool calls through the server on the random-weight qwen3 fixture:
// required and a named function make a call only the grammar can make
// from these weights; auto and none leave text; the call and its result
// go back as messages; a stream carries the call as delta.tool_calls; the
// llama3 fixture's template (Llama 3.0) has no tools: a 400 naming it.
func TestServeToolCalls(t *testing.T) {
	qwen := filepath.Join(fixtures.QwenShortTools(t), "model.pte")
	_, ts := newServer(t, Options{Models: []string{qwen, llamaPTE(t)}})
	url := ts.URL + "/v1/chat/completions"
	id := "model" // the temporary folder's model
	models := do(t, "GET", ts.URL+"/v1/models", "")
	for _, m := range models.doc["data"].([]any) {
		if s := path(m, "id").(string); s != llamaID {
			id = s
		}
	}
	user := []map[string]any{{"role": "user", "content": "Weather in Oslo?"}}
	tools := []any{weatherTool, timeTool}

	// auto: these weights write text, not a call.
	auto := post(t, url, map[string]any{"model": id, "messages": user, "tools": tools, "max_tokens": 20, "temperature": 0})
	if auto.status != http.StatusOK || path(auto.doc, "choices", 0, "finish_reason") == "tool_calls" || path(auto.doc, "choices", 0, "message", "tool_calls") != nil {
		t.Fatalf("auto: %d %s", auto.status, auto.raw)
	}
	checkCall(t, post(t, url, map[string]any{"model": id, "messages": user, "tools": tools, "tool_choice": "required",
		"max_tokens": 60, "temperature": 0}), "")
	named := post(t, url, map[string]any{"model": id, "messages": user, "tools": tools, "max_tokens": 60, "temperature": 1, "seed": 3,
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}})
	checkCall(t, named, "get_weather")

	// The call and its result rendered back: the next turn's prompt
	// holds both (its prompt tokens grow by them).
	call := path(named.doc, "choices", 0, "message").(map[string]any)
	back := append(append([]map[string]any{}, user...), call,
		map[string]any{"role": "tool", "tool_call_id": path(call, "tool_calls", 0, "id"), "content": "sunny"})
	r := post(t, url, map[string]any{"model": id, "messages": back, "tools": tools, "tool_choice": "none", "max_tokens": 5, "temperature": 0,
		"return_token_ids": true})
	if r.status != http.StatusOK || path(r.doc, "choices", 0, "finish_reason") == "tool_calls" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	tok := post(t, ts.URL+"/detokenize", map[string]any{"model": id, "tokens": path(r.doc, "prompt_token_ids")})
	if p, _ := tok.doc["content"].(string); !strings.Contains(p, "<tool_response>sunny</tool_response>") || !strings.Contains(p, `<tool_call>{"name": "get_weather"`) {
		t.Fatalf("rendered prompt %s", tok.raw)
	}

	// Streamed: one delta.tool_calls chunk, then finish_reason tool_calls.
	resp, err := http.Post(url, "application/json", jsonBytes(map[string]any{"model": id, "messages": user, "tools": tools,
		"tool_choice": "required", "max_tokens": 60, "temperature": 0, "stream": true}))
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
		if f := path(d, "choices", 0, "finish_reason"); f != nil {
			finish = f
		}
	}
	if !done || finish != "tool_calls" || len(streamed) != 1 || path(streamed[0], "index") != 0.0 {
		t.Fatalf("stream: done %v finish %v calls %v", done, finish, streamed)
	}

	for _, bad := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"model": llamaID, "messages": user, "tools": tools}, "tools"},
		{map[string]any{"model": id, "messages": user, "tools": tools, "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}, "tool_choice"},
		{map[string]any{"model": id, "messages": user, "tools": []any{map[string]any{"type": "function"}}}, "tools[0].function.name"},
		{map[string]any{"model": id, "messages": user, "tool_choice": "required"}, "tool_choice"},
	} {
		r := post(t, url, bad.body)
		if r.status != http.StatusBadRequest || path(r.doc, "error", "param") != bad.param {
			t.Errorf("%v: %d %s", bad.body, r.status, r.raw)
		}
	}
	if r := post(t, url, map[string]any{"model": llamaID, "messages": user, "tools": tools}); !strings.Contains(string(r.raw), "does not render tools") {
		t.Errorf("llama3's refusal does not say why: %s", r.raw)
	}
}

// A streamed reply that may call tools passes its text on until the
// opening tag could begin; a block that turns out a call is sent as
// tool_calls, a false start as text.
func TestToolHold(t *testing.T) {
	req := &request{Tools: &toolRequest{choice: "auto", format: "hermes"}}
	h := newToolHold(req)
	var sent strings.Builder
	for _, piece := range []string{"Let me <to", "day", " check. <tool_", "call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"} {
		sent.WriteString(h.push(piece))
	}
	if sent.String() != "Let me <today check. " {
		t.Fatalf("sent %q", sent.String())
	}
	c := &choice{text: h.buf.String(), finish: "stop"}
	readCalls(req, c)
	if c.finish != "tool_calls" || len(c.calls) != 1 || c.calls[0].Name != "get_time" || c.calls[0].Arguments != "{}" || h.rest(c) != "" ||
		c.text != "Let me <today check." {
		t.Fatalf("%+v rest %q", c, h.rest(c))
	}

	h = newToolHold(req)
	sent.Reset()
	sent.WriteString(h.push("Plain <tool_call>{broken"))
	c = &choice{text: h.buf.String(), finish: "length"}
	readCalls(req, c)
	if sent.String() != "Plain " || c.finish != "length" || c.calls != nil || h.rest(c) != "<tool_call>{broken" {
		t.Fatalf("sent %q, %+v rest %q", sent.String(), c, h.rest(c))
	}
	if newToolHold(&request{Tools: &toolRequest{choice: "none"}}) != nil || newToolHold(&request{}) != nil {
		t.Fatal("a request that reads no calls holds nothing back")
	}
}

// TestStoreToolCalls: with StoreConversations, a reply's tool call is
// kept in the stored conversation as the model wrote it (parsed back, the
// same call), and the next turn appends the tool's result as a tool
// message to the same conversation.
func TestStoreToolCalls(t *testing.T) {
	db := openStore(t)
	_, ts := newServer(t, Options{Models: []string{filepath.Join(fixtures.QwenShortTools(t), "model.pte")}, Store: db, StoreConversations: true})
	url := ts.URL + "/v1/chat/completions"
	id := path(do(t, "GET", ts.URL+"/v1/models", "").doc, "data", 0, "id").(string)
	user := []map[string]any{{"role": "user", "content": "Weather in Oslo?"}}
	named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	r := post(t, url, map[string]any{"model": id, "messages": user, "tools": []any{weatherTool}, "tool_choice": named, "max_tokens": 60, "temperature": 0})
	checkCall(t, r, "get_weather")
	call := path(r.doc, "choices", 0, "message").(map[string]any)
	back := append(append([]map[string]any{}, user...), call,
		map[string]any{"role": "tool", "tool_call_id": path(call, "tool_calls", 0, "id"), "content": "sunny"})
	post(t, url, map[string]any{"model": id, "messages": back, "tools": []any{weatherTool}, "max_tokens": 3, "temperature": 0})
	waitRuns(t, db, 2)
	convs, err := db.ListConversations(context.Background(), 0)
	if err != nil || len(convs) != 1 {
		t.Fatalf("conversations %+v, %v", convs, err)
	}
	_, msgs, err := db.CurrentPath(context.Background(), convs[0].ID)
	if err != nil || len(msgs) != 4 || msgs[1].Role != "assistant" || msgs[2].Role != "tool" || msgs[2].Text != "sunny" {
		t.Fatalf("stored path %+v, %v", msgs, err)
	}
	_, calls, err := chattmpl.ParseToolCalls(chattmpl.ToolFormatHermes, msgs[1].Text)
	if err != nil || len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Arguments != path(call, "tool_calls", 0, "function", "arguments") {
		t.Fatalf("stored reply %q: %+v %v", msgs[1].Text, calls, err)
	}
}
