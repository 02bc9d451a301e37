package serve

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"etchat/inference"
)

// refLogSoftmax is the float64 log-softmax of the reference engine's
// logits after prompt (a fresh cache).
func refLogSoftmax(t *testing.T, prompt []int) []float64 {
	t.Helper()
	m := refModel(t)
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if err := m.Session.Clear(); err != nil {
		t.Fatal(err)
	}
	row, err := inference.Prefill(context.Background(), m.Session, prompt, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	mx := math.Inf(-1)
	for _, x := range row {
		mx = math.Max(mx, float64(x))
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x) - mx)
	}
	out := make([]float64, len(row))
	for i, x := range row {
		out[i] = float64(x) - mx - math.Log(sum)
	}
	return out
}

// TestChatLogprobs: logprobs and top_logprobs of a greedy chat reply are
// one entry per token, the token first among its top ones, and the first
// token's value the float64 log-softmax of the engine's logits; without
// logprobs the field is null.
func TestChatLogprobs(t *testing.T) {
	_, ts := newServer(t, Options{})
	prompt, want := greedy(t, 6, user("Hello there"))
	body := chatBody(6, false, user("Hello there"))
	body["logprobs"], body["top_logprobs"] = true, 3
	r := post(t, ts.URL+"/v1/chat/completions", body)
	content, _ := path(r.doc, "choices", 0, "logprobs", "content").([]any)
	if r.status != 200 || len(content) != len(want) {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	m := refModel(t)
	for i, c := range content {
		lp, _ := path(c, "logprob").(float64)
		tok, _ := path(c, "token").(string)
		if tok != m.Chat.Tokenizer.Decode([]int{want[i]}, false) || path(c, "top_logprobs", 0, "token") != tok ||
			path(c, "top_logprobs", 0, "logprob") != lp || len(path(c, "top_logprobs").([]any)) != 3 || lp > 0 {
			t.Errorf("token %d: %v", i, c)
		}
		if b := ints(path(c, "bytes")); string(toBytes(b)) != tok {
			t.Errorf("token %d: bytes %v for %q", i, b, tok)
		}
	}
	ref := refLogSoftmax(t, prompt)
	if lp := path(content[0], "logprob").(float64); math.Abs(lp-ref[want[0]]) > 1e-4 {
		t.Errorf("first logprob %v, float64 log-softmax of the logits %v", lp, ref[want[0]])
	}
	plain := post(t, ts.URL+"/v1/chat/completions", chatBody(2, false, user("Hello there")))
	if v, ok := path(plain.doc, "choices", 0).(map[string]any)["logprobs"]; !ok || v != nil {
		t.Errorf("logprobs without asking: %s", plain.raw)
	}
}

func toBytes(b []int) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = byte(x)
	}
	return out
}

// TestCompletionLogprobsAndN: a completion with logprobs 2 and n 3 at
// temperature 0 answers three equal choices, indexed, each with tokens,
// token_logprobs, top_logprobs and text offsets that add up to its text;
// the usage counts the prompt once and every choice's tokens.
func TestCompletionLogprobsAndN(t *testing.T) {
	_, ts := newServer(t, Options{})
	r := post(t, ts.URL+"/v1/completions", map[string]any{"model": llamaID, "prompt": "Once upon a time", "max_tokens": 5,
		"temperature": 0, "n": 3, "logprobs": 2, "return_token_ids": true})
	if r.status != 200 || len(path(r.doc, "choices").([]any)) != 3 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	first := ints(path(r.doc, "choices", 0, "token_ids"))
	for i := range 3 {
		c := path(r.doc, "choices", i)
		if num(path(c, "index")) != i || !slices.Equal(ints(path(c, "token_ids")), first) {
			t.Errorf("choice %d: %v", i, c)
		}
		lp := path(c, "logprobs")
		toks, _ := path(lp, "tokens").([]any)
		offs := ints(path(lp, "text_offset"))
		if len(toks) != 5 || len(path(lp, "token_logprobs").([]any)) != 5 || len(path(lp, "top_logprobs").([]any)) != 5 || len(offs) != 5 {
			t.Fatalf("choice %d logprobs %v", i, lp)
		}
		var text strings.Builder
		for j, tk := range toks {
			if offs[j] != text.Len() {
				t.Errorf("choice %d token %d: offset %d, want %d", i, j, offs[j], text.Len())
			}
			text.WriteString(tk.(string))
			if top, _ := path(lp, "top_logprobs", j).(map[string]any); len(top) == 0 || len(top) > 2 {
				t.Errorf("choice %d token %d: top %v", i, j, top)
			}
		}
		if text.String() != path(c, "text") {
			t.Errorf("choice %d: tokens %q, text %q", i, text.String(), path(c, "text"))
		}
	}
	u := path(r.doc, "usage")
	p := num(path(u, "prompt_tokens"))
	if num(path(u, "completion_tokens")) != 15 || num(path(u, "total_tokens")) != p+15 {
		t.Errorf("usage %v", u)
	}
}

// TestStreamN: a streamed chat with n 2 sends each choice in turn under
// its index (role first, finish last), and each choice's deltas are the
// non-streaming choice's content; temperature 1 with a seed gives the
// choices different samples, the same ones as without streaming.
func TestStreamN(t *testing.T) {
	_, ts := newServer(t, Options{})
	body := chatBody(8, false, user("Stream twice"))
	body["n"], body["temperature"], body["seed"] = 2, 1.0, 7
	whole := post(t, ts.URL+"/v1/chat/completions", body)
	body["stream"] = true
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	docs, done := events(t, resp.Body)
	if !done {
		t.Fatal("no [DONE]")
	}
	texts := make([]strings.Builder, 2)
	var order []int
	finishes := 0
	for _, d := range docs {
		i := num(path(d, "choices", 0, "index"))
		if len(order) == 0 || order[len(order)-1] != i {
			order = append(order, i)
			if path(d, "choices", 0, "delta", "role") != "assistant" {
				t.Errorf("choice %d opens without the role: %v", i, d)
			}
		}
		s, _ := path(d, "choices", 0, "delta", "content").(string)
		texts[i].WriteString(s)
		if path(d, "choices", 0, "finish_reason") != nil {
			finishes++
		}
	}
	if !slices.Equal(order, []int{0, 1}) || finishes != 2 {
		t.Errorf("choices in order %v, %d finish reasons", order, finishes)
	}
	for i := range 2 {
		if want := path(whole.doc, "choices", i, "message", "content"); texts[i].String() != want {
			t.Errorf("choice %d streamed %q, answered %q", i, texts[i].String(), want)
		}
	}
	if slices.Equal(ints(path(whole.doc, "choices", 0, "token_ids")), ints(path(whole.doc, "choices", 1, "token_ids"))) {
		t.Errorf("two samples at temperature 1 are the same: %s", whole.raw)
	}
}

// TestTokenizeDetokenize: /tokenize gives the tokenizer's ids for a
// model's text (with pieces when asked), /detokenize its text back; both
// need the key and name a served model.
func TestTokenizeDetokenize(t *testing.T) {
	_, ts := newServer(t, Options{APIKey: "k"})
	auth := []string{"Authorization", "Bearer k"}
	m := refModel(t)
	want, _ := m.Chat.Tokenizer.Encode("Hello there, world", true)
	r := post(t, ts.URL+"/tokenize", map[string]any{"model": llamaID, "content": "Hello there, world", "add_special": true}, auth...)
	if r.status != 200 || !slices.Equal(ints(path(r.doc, "tokens")), want) {
		t.Fatalf("/tokenize: %d %s, want %v", r.status, r.raw, want)
	}
	r = post(t, ts.URL+"/tokenize", map[string]any{"model": llamaID, "content": "Hello there", "with_pieces": true}, auth...)
	if r.status != 200 || path(r.doc, "tokens", 0, "piece") != "Hello" || path(r.doc, "tokens", 1, "piece") != " there" {
		t.Errorf("/tokenize with pieces: %d %s", r.status, r.raw)
	}
	r = post(t, ts.URL+"/detokenize", map[string]any{"model": llamaID, "tokens": want}, auth...)
	if r.status != 200 || path(r.doc, "content") != m.Chat.Tokenizer.Decode(want, false) {
		t.Errorf("/detokenize: %d %s", r.status, r.raw)
	}
	for _, c := range []struct {
		url  string
		body any
		code int
		hdr  []string
	}{
		{"/tokenize", map[string]any{"model": llamaID, "content": "x"}, 401, nil},
		{"/tokenize", map[string]any{"model": "nope", "content": "x"}, 404, auth},
		{"/tokenize", map[string]any{"model": llamaID}, 400, auth},
		{"/detokenize", map[string]any{"model": llamaID, "tokens": []int{1, 99999999}}, 400, auth},
		{"/detokenize", map[string]any{"model": llamaID, "tokens": "x"}, 400, auth},
	} {
		if r := post(t, ts.URL+c.url, c.body, c.hdr...); r.status != c.code {
			t.Errorf("%s %v: %d %s, want %d", c.url, c.body, r.status, r.raw, c.code)
		}
	}
}

// TestMetrics: /metrics is Prometheus text counting the requests, their
// tokens (cached ones too) and times to first token, with the queue and
// slots; it needs the key, /health does not.
func TestMetrics(t *testing.T) {
	_, ts := newServer(t, Options{APIKey: "k", Slots: 2})
	auth := []string{"Authorization", "Bearer k"}
	a := post(t, ts.URL+"/v1/chat/completions", chatBody(3, false, user("count me")), auth...)
	b := post(t, ts.URL+"/v1/chat/completions", chatBody(3, false, user("count me")), auth...)
	post(t, ts.URL+"/v1/chat/completions", map[string]any{"model": "nope", "messages": []any{}}, auth...)
	if r := do(t, "GET", ts.URL+"/metrics", ""); r.status != 401 {
		t.Errorf("/metrics without the key: %d", r.status)
	}
	if r := do(t, "GET", ts.URL+"/health", ""); r.status != 200 {
		t.Errorf("/health without the key: %d", r.status)
	}
	r := do(t, "GET", ts.URL+"/metrics", "", auth...)
	text := string(r.raw)
	prompt := num(path(a.doc, "usage", "prompt_tokens"))
	cached := num(path(b.doc, "usage", "prompt_tokens_details", "cached_tokens"))
	for _, line := range []string{
		`etchat_requests_total{endpoint="/v1/chat/completions",model="` + llamaID + `",status="200"} 2`,
		`etchat_requests_total{endpoint="/v1/chat/completions",model="",status="400"} 1`,
		`etchat_tokens_total{model="` + llamaID + `",kind="prompt"} ` + strconv.Itoa(2*prompt),
		`etchat_tokens_total{model="` + llamaID + `",kind="completion"} 6`,
		`etchat_tokens_total{model="` + llamaID + `",kind="cached"} ` + strconv.Itoa(cached),
		`etchat_time_to_first_token_seconds_count{model="` + llamaID + `"} 2`,
		`etchat_time_to_first_token_seconds_bucket{model="` + llamaID + `",le="+Inf"} 2`,
		`etchat_queue_depth{model="` + llamaID + `"} 0`,
		`etchat_slots{model="` + llamaID + `",state="open"} 1`,
		`etchat_slots{model="` + llamaID + `",state="max"} 2`,
		"# TYPE etchat_time_to_first_token_seconds histogram",
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("no %q in\n%s", line, text)
		}
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
}
