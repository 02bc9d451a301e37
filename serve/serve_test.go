package serve

import (
	"context"
	"encoding/json"
	"errors"
	"etchat/inference/engine"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"etchat/inference"
	"etchat/internal/fixtures"
	"etchat/store"
)

func TestModelsEndpoint(t *testing.T) {
	_, ts := newServer(t, Options{})
	r := do(t, "GET", ts.URL+"/v1/models", "")
	if r.status != 200 || path(r.doc, "object") != "list" || path(r.doc, "data", 0, "id") != llamaID ||
		path(r.doc, "data", 0, "object") != "model" || path(r.doc, "data", 1) != nil {
		t.Errorf("/v1/models: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", ts.URL+"/v1/models/"+llamaID, ""); r.status != 200 || path(r.doc, "id") != llamaID {
		t.Errorf("/v1/models/%s: %d %s", llamaID, r.status, r.raw)
	}
	if r := do(t, "GET", ts.URL+"/v1/models/nope", ""); r.status != 404 || path(r.doc, "error", "code") != "model_not_found" {
		t.Errorf("/v1/models/nope: %d %s", r.status, r.raw)
	}
}

// A model object carries etchat's details: an older export's, and one
// written with a newer ExecuTorch's metadata (the last-row twin: its
// activation dtype, hence fp32 KV, and its logits mode).
func TestModelsEndpointDetails(t *testing.T) {
	last := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3Q4Last), "model.pte")
	_, ts := newServer(t, Options{Models: []string{llamaPTE(t), last}})
	r := do(t, "GET", ts.URL+"/v1/models/"+llamaID, "")
	if d := path(r.doc, "etchat"); num(path(d, "prefill_chunk")) != 32 || num(path(d, "vocab_size")) != 128256 || path(d, "logits_to_keep") != "full" ||
		path(d, "kv_dtype") != "bf16" || path(d, "kv_dtype_from") != "default" || path(d, "activation_dtype") != nil {
		t.Errorf("%s: %s", llamaID, r.raw)
	}
	r = do(t, "GET", ts.URL+"/v1/models/"+fixtures.Llama3Q4Last, "")
	if d := path(r.doc, "etchat"); r.status != 200 || num(path(d, "prefill_chunk")) != 32 || path(d, "logits_to_keep") != "last" ||
		path(d, "activation_dtype") != "fp32" || path(d, "kv_dtype") != "fp32" || path(d, "kv_dtype_from") != "get_activation_dtype" {
		t.Errorf("%s: %d %s", fixtures.Llama3Q4Last, r.status, r.raw)
	}
}

// TestChatGreedyEqualsEngine: a greedy chat completion's ids are the
// engine's own for the template-rendered prompt, with the usage counted
// from them, and the text is their decoding.
func TestChatGreedyEqualsEngine(t *testing.T) {
	_, ts := newServer(t, Options{})
	msgs := append([]any{}, user("Hello there"))
	_ = msgs
	prompt, want := greedy(t, 12, user("Hello there"))
	r := post(t, ts.URL+"/v1/chat/completions", chatBody(12, false, user("Hello there")))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	got := ints(path(r.doc, "choices", 0, "token_ids"))
	if !slices.Equal(got, want) || !slices.Equal(ints(path(r.doc, "prompt_token_ids")), prompt) {
		t.Errorf("ids %v, engine %v; prompt %v, want %v", got, want, path(r.doc, "prompt_token_ids"), prompt)
	}
	m := refModel(t)
	if text := path(r.doc, "choices", 0, "message", "content"); text != m.Chat.Tokenizer.Decode(want, true) {
		t.Errorf("content %q, want %q", text, m.Chat.Tokenizer.Decode(want, true))
	}
	if path(r.doc, "object") != "chat.completion" || path(r.doc, "choices", 0, "message", "role") != "assistant" ||
		path(r.doc, "choices", 0, "finish_reason") != "length" || !strings.HasPrefix(path(r.doc, "id").(string), "chatcmpl-") {
		t.Errorf("shape: %s", r.raw)
	}
	u := path(r.doc, "usage")
	if num(path(u, "prompt_tokens")) != len(prompt) || num(path(u, "completion_tokens")) != 12 || num(path(u, "total_tokens")) != len(prompt)+12 ||
		num(path(u, "prompt_tokens_details", "cached_tokens")) != 0 {
		t.Errorf("usage %v", u)
	}
	// The same request again finds its whole prompt cached but the last
	// token (fed again for its logits), and answers the same.
	r2 := post(t, ts.URL+"/v1/chat/completions", chatBody(12, false, user("Hello there")))
	if c := num(path(r2.doc, "usage", "prompt_tokens_details", "cached_tokens")); c != len(prompt)-1 || !slices.Equal(ints(path(r2.doc, "choices", 0, "token_ids")), want) {
		t.Errorf("again: cached %d of %d, %s", c, len(prompt), r2.raw)
	}
}

// TestStreamEqualsAnswer: the streamed deltas concatenate to the
// non-streaming content, with the role first, the finish reason last, the
// usage when asked, then [DONE].
func TestStreamEqualsAnswer(t *testing.T) {
	_, ts := newServer(t, Options{})
	whole := post(t, ts.URL+"/v1/chat/completions", chatBody(16, false, user("Stream me")))
	body := chatBody(16, true, user("Stream me"))
	body["stream_options"] = map[string]any{"include_usage": true}
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	docs, done := events(t, resp.Body)
	if !done || len(docs) < 3 {
		t.Fatalf("%d events, done %v", len(docs), done)
	}
	if path(docs[0], "choices", 0, "delta", "role") != "assistant" || path(docs[0], "object") != "chat.completion.chunk" {
		t.Errorf("first chunk %v", docs[0])
	}
	var text strings.Builder
	for _, d := range docs[:len(docs)-2] {
		s, _ := path(d, "choices", 0, "delta", "content").(string)
		text.WriteString(s)
		if path(d, "choices", 0, "finish_reason") != nil {
			t.Errorf("finish reason before the end: %v", d)
		}
	}
	fin, usage := docs[len(docs)-2], docs[len(docs)-1]
	if want := path(whole.doc, "choices", 0, "message", "content"); text.String() != want {
		t.Errorf("streamed %q, answered %q", text.String(), want)
	}
	if path(fin, "choices", 0, "finish_reason") != "length" ||
		!slices.Equal(ints(path(fin, "choices", 0, "token_ids")), ints(path(whole.doc, "choices", 0, "token_ids"))) {
		t.Errorf("finish chunk %v", fin)
	}
	if n := len(path(usage, "choices").([]any)); n != 0 || num(path(usage, "usage", "completion_tokens")) != 16 {
		t.Errorf("usage chunk %v", usage)
	}
}

func TestCompletions(t *testing.T) {
	_, ts := newServer(t, Options{})
	m := refModel(t)
	ids, _ := m.Chat.Tokenizer.Encode("Once upon a time", true)
	want := greedyIDs(t, ids, 10)
	for _, prompt := range []any{"Once upon a time", []string{"Once upon a time"}, ids, [][]int{ids}} {
		r := post(t, ts.URL+"/v1/completions", map[string]any{"model": llamaID, "prompt": prompt, "max_tokens": 10, "temperature": 0, "return_token_ids": true})
		if r.status != 200 || path(r.doc, "object") != "text_completion" || !slices.Equal(ints(path(r.doc, "choices", 0, "token_ids")), want) ||
			path(r.doc, "choices", 0, "text") != m.Chat.Tokenizer.Decode(want, true) {
			t.Errorf("prompt %v: %d %s, want ids %v", prompt, r.status, r.raw, want)
		}
	}
	// Streaming text completion.
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		jsonBytes(map[string]any{"model": llamaID, "prompt": "Once upon a time", "max_tokens": 10, "temperature": 0, "stream": true}))
	if err != nil {
		t.Fatal(err)
	}
	docs, done := events(t, resp.Body)
	resp.Body.Close()
	var text strings.Builder
	for _, d := range docs {
		s, _ := path(d, "choices", 0, "text").(string)
		text.WriteString(s)
	}
	if !done || text.String() != m.Chat.Tokenizer.Decode(want, true) || path(docs[len(docs)-1], "choices", 0, "finish_reason") != "length" {
		t.Errorf("streamed completion %q (done %v), want %q", text.String(), done, m.Chat.Tokenizer.Decode(want, true))
	}
}

// TestStopSequence: the reply ends before the first stop sequence, which
// is not shown, streamed or not, with finish_reason stop.
func TestStopSequence(t *testing.T) {
	_, ts := newServer(t, Options{})
	full := path(post(t, ts.URL+"/v1/chat/completions", chatBody(24, false, user("Stop somewhere"))).doc, "choices", 0, "message", "content").(string)
	if len(full) < 12 {
		t.Fatalf("reply too short to cut: %q", full)
	}
	// A stop taken from the middle of the reply (a few bytes, on rune
	// boundaries).
	runes := []rune(full)
	stop := string(runes[len(runes)/2 : len(runes)/2+3])
	want := full[:strings.Index(full, stop)]
	for _, stream := range []bool{false, true} {
		body := chatBody(24, stream, user("Stop somewhere"))
		body["stop"] = []string{"\x00never", stop}
		var got, finish any
		if !stream {
			r := post(t, ts.URL+"/v1/chat/completions", body)
			got, finish = path(r.doc, "choices", 0, "message", "content"), path(r.doc, "choices", 0, "finish_reason")
		} else {
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(body))
			if err != nil {
				t.Fatal(err)
			}
			docs, _ := events(t, resp.Body)
			resp.Body.Close()
			var b strings.Builder
			for _, d := range docs {
				s, _ := path(d, "choices", 0, "delta", "content").(string)
				b.WriteString(s)
				if f := path(d, "choices", 0, "finish_reason"); f != nil {
					finish = f
				}
			}
			got = b.String()
		}
		if got != want || finish != "stop" {
			t.Errorf("stream %v, stop %q: %q (%v), want %q", stream, stop, got, finish, want)
		}
	}
}

func TestTextSinkHoldsBackStops(t *testing.T) {
	k := &textSink{stops: []string{"END", "xy"}}
	var out []string
	for _, piece := range []string{"ab", "cE", "N", "x", "zE", "ND tail"} {
		o, hit := k.push(piece)
		out = append(out, o)
		if hit {
			break
		}
	}
	// "E" and "EN" are held until they turn out not to be "END", "x" until
	// it is not "xy"; then "END" hits and nothing of it is passed on.
	if got := strings.Join(out, "|"); got != "ab|c||EN|xz|" || k.text() != "abcENxz" {
		t.Errorf("pieces %q, text %q", got, k.text())
	}
	k = &textSink{stops: []string{"END"}}
	k.push("abE")
	if f := k.flush(); f != "E" || k.text() != "abE" {
		t.Errorf("flush %q", f)
	}
}

// TestErrors: every refusal is OpenAI's error shape with its status and
// the field at fault.
func TestErrors(t *testing.T) {
	_, ts := newServer(t, Options{APIKey: "sekret", MaxBodyBytes: 64 << 10})
	auth := []string{"Authorization", "Bearer sekret"}
	long := strings.Repeat("word ", 40000)
	cases := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		param, code, in          string
	}{
		{"no key", "POST", "/v1/chat/completions", `{}`, nil, 401, "", "invalid_api_key", "missing API key"},
		{"wrong key", "GET", "/v1/models", ``, []string{"Authorization", "Bearer nope"}, 401, "", "invalid_api_key", "incorrect"},
		{"bad json", "POST", "/v1/chat/completions", `{"model":`, auth, 400, "", "", "not valid JSON"},
		{"not an object", "POST", "/v1/chat/completions", `[1]`, auth, 400, "", "", "not a JSON object"},
		{"field type", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","messages":[],"max_tokens":"many"}`, auth, 400, "max_tokens", "", "max_tokens"},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, auth, 400, "model", "", "model is required"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, auth, 404, "model", "model_not_found", "gpt-9"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `"}`, auth, 400, "messages", "", "messages is required"},
		{"bad role", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","messages":[{"role":"function","content":"x"}]}`, auth, 400, "messages[0].role", "", "function"},
		{"image part", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, auth, 400, "messages[0].content[0]", "", "only text"},
		{"n=0", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","n":0,"messages":[{"role":"user","content":"x"}]}`, auth, 400, "n", "", "1 to 16"},
		{"max_tokens 0", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, auth, 400, "max_tokens", "integer_below_min_value", "at least 1"},
		{"messages type", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","messages":"hi"}`, auth, 400, "messages", "", "expected an array, got JSON string"},
		{"logprobs type", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","logprobs":3,"messages":[{"role":"user","content":"x"}]}`, auth, 400, "logprobs", "", "boolean"},
		{"top_logprobs alone", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","top_logprobs":3,"messages":[{"role":"user","content":"x"}]}`, auth, 400, "top_logprobs", "", "logprobs: true"},
		{"completion logprobs", "POST", "/v1/completions", `{"model":"` + llamaID + `","prompt":"x","logprobs":21}`, auth, 400, "logprobs", "", "0 to 20"},
		{"temperature", "POST", "/v1/chat/completions", `{"model":"` + llamaID + `","temperature":3,"messages":[{"role":"user","content":"x"}]}`, auth, 400, "temperature", "", "[0, 2]"},
		{"negative max", "POST", "/v1/completions", `{"model":"` + llamaID + `","prompt":"x","max_tokens":-1}`, auth, 400, "max_tokens", "integer_below_min_value", "at least 1"},
		{"bad token", "POST", "/v1/completions", `{"model":"` + llamaID + `","prompt":[1,99999999]}`, auth, 400, "prompt", "", "outside the vocabulary"},
		{"too long", "POST", "/v1/completions", `{"model":"` + llamaID + `","prompt":"` + long[:60000] + `"}`, auth, 400, "prompt", "context_length_exceeded", "context is"},
		{"too large", "POST", "/v1/completions", `{"model":"` + llamaID + `","prompt":"` + long + `"}`, auth, 413, "", "", "over 65536 bytes"},
		{"method", "GET", "/v1/chat/completions", ``, auth, 405, "", "", "use POST"},
		{"no such path", "GET", "/v2/things", ``, auth, 404, "", "unknown_url", "no endpoint"},
	}
	for _, c := range cases {
		r := do(t, c.method, ts.URL+c.path, c.body, c.header...)
		msg, _ := path(r.doc, "error", "message").(string)
		param, _ := path(r.doc, "error", "param").(string)
		code, _ := path(r.doc, "error", "code").(string)
		if r.status != c.status || param != c.param || code != c.code || !strings.Contains(msg, c.in) || path(r.doc, "error", "type") == nil {
			t.Errorf("%s: %d %s; want %d param %q code %q containing %q", c.name, r.status, clip(string(r.raw)), c.status, c.param, c.code, c.in)
		}
		// param and code are always there, null when empty, as OpenAI's;
		// no message names a Go type.
		e, _ := path(r.doc, "error").(map[string]any)
		if _, ok := e["param"]; !ok {
			t.Errorf("%s: no param in %s", c.name, r.raw)
		}
		if _, ok := e["code"]; !ok {
			t.Errorf("%s: no code in %s", c.name, r.raw)
		}
		if strings.Contains(msg, "serve.") || strings.Contains(msg, "[]") {
			t.Errorf("%s: a Go type in %q", c.name, msg)
		}
		if r.status == 401 && r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", c.name)
		}
	}
	// The Bearer scheme is case-insensitive.
	if r := do(t, "GET", ts.URL+"/v1/models", "", "Authorization", "bearer sekret"); r.status != 200 {
		t.Errorf("lower-case bearer: %d %s", r.status, r.raw)
	}
	// The context error gives the numbers.
	r := do(t, "POST", ts.URL+"/v1/completions", `{"model":"`+llamaID+`","prompt":"`+long[:60000]+`"}`, auth...)
	if msg := path(r.doc, "error", "message").(string); !strings.Contains(msg, "12000 tokens") && !strings.Contains(msg, "the prompt is") {
		t.Errorf("context error without numbers: %s", msg)
	}
}

// TestQueueLimit: with the model busy and its queue full, a request gets
// 429 with Retry-After; one that fits the queue waits its turn and is
// answered once the model is free.
func TestQueueLimit(t *testing.T) {
	s, ts := newServer(t, Options{QueueLimit: 1})
	e := s.byID[llamaID]
	e.queued.Add(1) // the model is busy: its turn is held
	e.turn <- struct{}{}
	waited := make(chan reply, 1)
	go func() { waited <- post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, user("queued"))) }()
	for deadline := time.Now().Add(10 * time.Second); e.queued.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first request never queued")
		}
	}
	r := post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, user("refused")))
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); r.status != 429 || ra < 1 || path(r.doc, "error", "code") != "rate_limit_exceeded" {
		t.Errorf("full queue: %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.raw)
	}
	select {
	case r := <-waited:
		t.Fatalf("answered while the model was busy: %d", r.status)
	case <-time.After(50 * time.Millisecond):
	}
	<-e.turn
	e.queued.Add(-1)
	if r := <-waited; r.status != 200 || num(path(r.doc, "usage", "completion_tokens")) != 4 {
		t.Errorf("queued request: %d %s", r.status, r.raw)
	}
	if n := e.queued.Load(); n != 0 {
		t.Errorf("%d left in the queue", n)
	}
}

func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), t.TempDir()+"/etchat.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitRuns polls the store until n api runs are there.
func waitRuns(t *testing.T, db *store.DB, n int) []store.Run {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		runs, err := db.ListRuns(context.Background(), store.RunFilter{Kind: store.RunAPI})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) >= n || time.Now().After(deadline) {
			return runs
		}
	}
}

// TestRunsStored: each request is a run of kind api with the stats and
// the cached-token count; the body only with LogRequests.
func TestRunsStored(t *testing.T) {
	for _, logReq := range []bool{false, true} {
		db := openStore(t)
		_, ts := newServer(t, Options{Store: db, LogRequests: logReq})
		post(t, ts.URL+"/v1/chat/completions", chatBody(5, false, user("record me")))
		last := post(t, ts.URL+"/v1/chat/completions", chatBody(5, false, user("record me")))
		runs := waitRuns(t, db, 2)
		if len(runs) != 2 {
			t.Fatalf("%d runs", len(runs))
		}
		r := runs[0] // newest first: the repeat, which found its prompt cached
		var cfg map[string]any
		json.Unmarshal(r.Config, &cfg)
		if r.Kind != store.RunAPI || r.ModelName != llamaID || r.Engine != "cpu" || r.Stats.NumGeneratedTokens != 5 ||
			r.Stats.NumPromptTokens == 0 || num(cfg["cached_tokens"]) != int(r.Stats.NumPromptTokens)-1 || cfg["endpoint"] != "/v1/chat/completions" ||
			r.ModelSHA256 == "" || r.Error != "" || r.Stats.FirstTokenMs == 0 {
			t.Errorf("run %+v config %s", r, r.Config)
		}
		if _, has := cfg["request"]; has != logReq {
			t.Errorf("LogRequests %v: request stored %v", logReq, has)
		}
		if reply, _ := cfg["reply"].(string); logReq && (reply == "" || reply != path(last.doc, "choices", 0, "message", "content")) || !logReq && reply != "" {
			t.Errorf("LogRequests %v: reply %q stored, answered %q", logReq, reply, path(last.doc, "choices", 0, "message", "content"))
		}
	}
}

// TestSeedStored: a run without a seed records the one its sampler drew
// from the clock, not 0; sending it back reproduces the reply.
func TestSeedStored(t *testing.T) {
	db := openStore(t)
	_, ts := newServer(t, Options{Store: db})
	body := chatBody(8, false, user("surprise me"))
	body["temperature"] = 1.0
	first := post(t, ts.URL+"/v1/chat/completions", body)
	runs := waitRuns(t, db, 1)
	var cfg struct{ Seed uint64 }
	json.Unmarshal(runs[0].Config, &cfg)
	if cfg.Seed == 0 {
		t.Fatalf("seed 0 stored: %s", runs[0].Config)
	}
	body["seed"] = int64(cfg.Seed)
	again := post(t, ts.URL+"/v1/chat/completions", body)
	if a, b := ints(path(first.doc, "choices", 0, "token_ids")), ints(path(again.doc, "choices", 0, "token_ids")); !slices.Equal(a, b) {
		t.Errorf("the stored seed %d gives %v, the first reply was %v", cfg.Seed, b, a)
	}
}

// TestStoreConversations: with StoreConversations, two turns of one chat
// (the second resending the first with the reply) are one conversation
// of four messages, as the app reopens it; another chat is another
// conversation, and a completion is none.
func TestStoreConversations(t *testing.T) {
	db := openStore(t)
	_, ts := newServer(t, Options{Store: db, StoreConversations: true})
	sys := inference.Message{Role: inference.RoleSystem, Text: "Be brief."}
	a1 := post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, sys, user("First question")))
	reply := inference.Message{Role: inference.RoleAssistant, Text: path(a1.doc, "choices", 0, "message", "content").(string)}
	a2 := post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, sys, user("First question"), reply, user("Second question")))
	post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, user("Another chat")))
	post(t, ts.URL+"/v1/completions", map[string]any{"model": llamaID, "prompt": "not a chat", "max_tokens": 2})
	waitRuns(t, db, 4)
	convs, err := db.ListConversations(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 2 {
		t.Fatalf("%d conversations: %+v", len(convs), convs)
	}
	var first store.Conversation
	for _, c := range convs {
		if c.Title == "First question" {
			first = c
		}
	}
	_, msgs, err := db.CurrentPath(context.Background(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+": "+m.Text)
	}
	want := []string{"system: Be brief.", "user: First question", "assistant: " + reply.Text, "user: Second question",
		"assistant: " + path(a2.doc, "choices", 0, "message", "content").(string)}
	if !slices.Equal(got, want) {
		t.Errorf("conversation %q: %q, want %q", first.Title, got, want)
	}
}

// TestDisconnectStopsGeneration: a client that goes away mid-stream stops
// its generation at the next token; the run is stored as canceled and the
// model is free for the next request.
func TestDisconnectStopsGeneration(t *testing.T) {
	db := openStore(t)
	s, ts := newServer(t, Options{Store: db})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(chatBody(100000, true, user("talk forever"))))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	runs := waitRuns(t, db, 1)
	if len(runs) != 1 || !strings.Contains(runs[0].Error, "client disconnected") || runs[0].Stats.NumGeneratedTokens >= int64(s.byID[llamaID].prep.Capacity()) {
		t.Fatalf("runs %+v", runs)
	}
	if r := post(t, ts.URL+"/v1/chat/completions", chatBody(3, false, user("next"))); r.status != 200 {
		t.Errorf("after a disconnect: %d %s", r.status, r.raw)
	}
}

// TestShutdownCancelsAndStores: Shutdown with a short grace period cancels
// a stream still running, which stores its run first; new requests are
// refused.
func TestShutdownCancelsAndStores(t *testing.T) {
	db := openStore(t)
	s, ts := newServer(t, Options{Store: db})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(chatBody(100000, true, user("long one"))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 256)
	resp.Body.Read(buf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	runs := waitRuns(t, db, 1)
	if len(runs) != 1 || !strings.Contains(runs[0].Error, "shut down") {
		t.Errorf("runs after shutdown %+v", runs)
	}
	if r := post(t, ts.URL+"/v1/chat/completions", chatBody(3, false, user("late"))); r.status != 503 {
		t.Errorf("after shutdown: %d %s", r.status, r.raw)
	}
}

func TestLoopbackRule(t *testing.T) {
	for _, c := range []struct {
		host, key string
		ok, warn  bool
	}{
		{"127.0.0.1", "", true, false}, {"localhost", "", true, false}, {"::1", "", true, false}, {"[::1]", "", true, false},
		{"0.0.0.0", "", false, false}, {"192.168.1.5", "", false, false}, {"0.0.0.0", "k", true, true},
	} {
		w, err := CheckHost(c.host, c.key)
		if (err == nil) != c.ok || (w != "") != c.warn {
			t.Errorf("%s key %q: warning %q, error %v", c.host, c.key, w, err)
		}
	}
}

// TestMaxModels: with two models and room for one, requests alternating
// between them each load theirs (closing the idle other) and answer as
// the model alone does; the second model's id is its folder's name.
func TestMaxModels(t *testing.T) {
	qwen := filepath.Join(fixtures.Unpacked(t, fixtures.Qwen3), "model.pte")
	s, ts := newServer(t, Options{Models: []string{llamaPTE(t), qwen}, MaxModels: 1})
	if got := s.Models(); !slices.Equal(got, []string{llamaID, "qwen3-tiny-offgraph"}) {
		t.Fatalf("models %v", got)
	}
	_, want := greedy(t, 4, user("swap"))
	for i := 0; i < 2; i++ {
		r := post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, user("swap")))
		if r.status != 200 || !slices.Equal(ints(path(r.doc, "choices", 0, "token_ids")), want) {
			t.Errorf("llama3, round %d: %d %s", i, r.status, r.raw)
		}
		body := chatBody(4, false, user("swap"))
		body["model"] = "qwen3-tiny-offgraph"
		if r := post(t, ts.URL+"/v1/chat/completions", body); r.status != 200 || num(path(r.doc, "usage", "completion_tokens")) != 4 {
			t.Errorf("qwen3, round %d: %d %s", i, r.status, r.raw)
		}
		loaded := 0
		for _, e := range s.models {
			if e.loaded != nil {
				loaded++
			}
		}
		if loaded != 1 {
			t.Errorf("%d models loaded, the limit is 1", loaded)
		}
	}
}

// failingSession is a real session whose forwards fail, as an engine
// that has lost its device does.
type failingSession struct{ engine.Session }

func (failingSession) Forward(context.Context, []int64, []int64) ([]float32, error) {
	return nil, errors.New("device lost: the engine says so")
}

// TestEngineFailure: an engine error is a 500 carrying the engine's
// message; mid-stream it is an error event before [DONE]. The model stays
// usable for the next request.
func TestEngineFailure(t *testing.T) {
	s, ts := newServer(t, Options{Slots: 1})
	if r := post(t, ts.URL+"/v1/chat/completions", chatBody(2, false, user("warm up"))); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	e := s.byID[llamaID]
	good := e.slots[0].pc
	bad, err := inference.NewPrefixCache(failingSession{e.loaded.Session}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.slots[0].pc = bad
	r := post(t, ts.URL+"/v1/chat/completions", chatBody(2, false, user("fail")))
	if msg, _ := path(r.doc, "error", "message").(string); r.status != 500 || !strings.Contains(msg, "device lost") || path(r.doc, "error", "type") != "server_error" {
		t.Errorf("engine failure: %d %s", r.status, r.raw)
	}
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(chatBody(2, true, user("fail"))))
	if err != nil {
		t.Fatal(err)
	}
	docs, done := events(t, resp.Body)
	resp.Body.Close()
	last := docs[len(docs)-1]
	if msg, _ := path(last, "error", "message").(string); !done || !strings.Contains(msg, "device lost") {
		t.Errorf("streamed engine failure: %v (done %v)", last, done)
	}
	e.slots[0].pc = good
	if err := good.Reset(); err != nil {
		t.Fatal(err)
	}
	if r := post(t, ts.URL+"/v1/chat/completions", chatBody(2, false, user("again"))); r.status != 200 {
		t.Errorf("after the failure: %d %s", r.status, r.raw)
	}
}
