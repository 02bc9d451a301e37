package serve

import (
	"testing"
	"unicode/utf8"

	"etchat/inference"
	"etchat/internal/fuzzing"
)

// FuzzDecodeRequest: no body makes the request decoders panic, and
// whatever they accept is a request the generation can take (a model, a
// non-empty prompt, limits within range); a refusal is a 4xx naming what
// is wrong.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"developer","content":null},{"role":"user","content":"x"}],"max_completion_tokens":3,"stop":["a","b"],"seed":-5,"top_k":4,"top_p":0.5,"temperature":0}`,
		`{"model":"m","prompt":"once","max_tokens":0,"stop":"x"}`,
		`{"model":"m","prompt":[1,2,3],"n":1,"logprobs":null,"echo":false}`,
		`{"model":"m","prompt":[[1,2]],"suffix":""}`,
		`{"model":"m","prompt":["a","b"]}`,
		`{"model":"m","messages":[{"role":"assistant","content":"x"}]}`,
		`{"model":1}`, `[]`, `{`, ``, `{"model":"m","messages":{}}`, `{"model":"m","stop":[1]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":5,"n":3}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"top_logprobs":2}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"logprobs":1,"n":0}`,
		`{"model":"m","prompt":"a","logprobs":3,"n":16,"max_tokens":1}`,
		`{"model":"m","prompt":"a","logprobs":true,"top_logprobs":1}`,
		`{"model":"m","prompt":"a","n":17,"max_tokens":0}`,
		`{"model":"m","content":"hello","add_special":true,"with_pieces":true}`,
		`{"model":"m","tokens":[1,2,-3]}`, `{"model":"m","tokens":"x"}`, `{"content":"x"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"1"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}],"tool_choice":"required"}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"maybe"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		defer fuzzing.Time(len(body))()
		checkTokenizeBodies(t, body)
		for _, chat := range []bool{true, false} {
			decode := decodeCompletion
			if chat {
				decode = decodeChat
			}
			r, e := decode(body)
			if (r == nil) == (e == nil) {
				t.Fatalf("chat %v: request %v and error %v", chat, r, e)
			}
			if e != nil {
				if e.Status < 400 || e.Status >= 500 || e.Message == "" || !utf8.ValidString(e.Message) && utf8.Valid(body) {
					t.Fatalf("chat %v: error %+v", chat, e)
				}
				continue
			}
			if r.Model == "" || r.MaxTokens < -1 || r.MaxTokens == 0 || len(r.Stop) > maxStops || r.IsChat != chat ||
				r.N < 1 || r.N > maxN || r.TopLogprobs < 0 || r.TopLogprobs > inference.MaxTopLogprobs || r.TopLogprobs > 0 && !r.Logprobs {
				t.Fatalf("chat %v: accepted %+v", chat, r)
			}
			if chat && (len(r.Messages) == 0 || r.Messages[len(r.Messages)-1].Role == "assistant") {
				t.Fatalf("accepted messages %+v", r.Messages)
			}
			if !chat && r.Prompt == "" && len(r.PromptID) == 0 {
				t.Fatalf("accepted an empty prompt %+v", r)
			}
			for _, id := range r.PromptID {
				if id < 0 {
					t.Fatalf("accepted token %d", id)
				}
			}
			if t := r.Sampling.Temperature; t < 0 || t > 2 {
				panic("temperature out of range")
			}
			if chat {
				checkTools(t, r, body)
			}
		}
	})
}

// checkTokenizeBodies: /tokenize and /detokenize bodies decode without a
// panic into a request with a model and what the endpoint needs, or a
// 4xx.
func checkTokenizeBodies(t *testing.T, body []byte) {
	for _, detok := range []bool{false, true} {
		tb, e := decodeTokenize(body, detok)
		if (tb == nil) == (e == nil) {
			t.Fatalf("detokenize %v: body %v and error %v", detok, tb, e)
		}
		if e != nil {
			if e.Status < 400 || e.Status >= 500 || e.Message == "" {
				t.Fatalf("detokenize %v: error %+v", detok, e)
			}
			continue
		}
		if tb.Model == nil || *tb.Model == "" || detok && tb.Tokens == nil || !detok && tb.Content == nil {
			t.Fatalf("detokenize %v: accepted %+v", detok, tb)
		}
		if detok {
			for _, id := range *tb.Tokens {
				if id < 0 {
					t.Fatalf("accepted token %d", id)
				}
			}
		}
	}
}

// checkTools: a chat body's tools decode without a panic into tools that
// each have a name and a tool_choice among them, or a 4xx naming a field.
func checkTools(t *testing.T, r *request, body []byte) {
	e := r.decodeTools(body)
	if e != nil {
		if e.Status != 400 || e.Param == "" || e.Message == "" {
			t.Fatalf("tools error %+v", e)
		}
		return
	}
	tr := r.Tools
	if tr == nil {
		return
	}
	named := tr.name == ""
	for _, tl := range tr.tools {
		if tl.Name == "" {
			t.Fatalf("accepted a tool without a name: %+v", tr.tools)
		}
		named = named || tl.Name == tr.name
	}
	if len(tr.tools) == 0 || len(tr.defs) != len(tr.tools) || !named || tr.choice == "" {
		t.Fatalf("accepted tools %+v", tr)
	}
}
