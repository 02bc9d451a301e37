package chattmpl

import (
	"encoding/json"
	"runtime"
	"testing"

	"etchat/inference/chattmpl/jinja"
	"etchat/internal/fuzzing"
)

// FuzzConfigAndMessages: any tokenizer_config.json and messages JSON is
// parsed, and any template in it rendered under tight limits, without a
// panic; ParseConfig's allocation is bounded by the config's size.
func FuzzConfigAndMessages(f *testing.F) {
	f.Add([]byte(`{"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}{{ m.content }}{% endfor %}", "bos_token": {"content": "<s>"}}`),
		[]byte(`[{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"b": 1, "a": [1.5]}}}]}]`))
	f.Add([]byte(`{"chat_template": [{"name": "default", "template": "{{ messages|tojson(indent=1) }}"}], "eos_token": "</s>"}`),
		[]byte(`[{"role": "user", "content": [{"type": "text", "text": "x"}]}]`))
	f.Add([]byte(`{"chat_template": 3}`), []byte(`{"role": 1}`))
	f.Add([]byte(`{"chat_template": [{"name": "default", "template": "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"}, {"name": "tool_use", "template": "{% for t in tools %}{{ t|tojson }}{% endfor %}"}], "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false}, "eos_token": {"content": "<|im_end|>"}, "added_tokens_decoder": {"0": {"content": "<s>", "special": true}}}`),
		[]byte(`[{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "<think>\nx</think>4"}]`))
	f.Add([]byte(`{"chat_template": "{{ raise_exception('no') if messages|length > 1 }}{{ messages[-1].content }}", "pad_token": null, "unk_token": "<unk>"}`),
		[]byte(`[{"role": "tool", "content": "{\"a\": 1}", "tool_call_id": "c1"}]`))
	f.Fuzz(func(t *testing.T, cfgJSON, msgJSON []byte) {
		defer fuzzing.Time(len(cfgJSON) + len(msgJSON))()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		cfg, err := ParseConfig(cfgJSON)
		runtime.ReadMemStats(&ms)
		if used, bound := ms.TotalAlloc-before, 64<<10+64*uint64(len(cfgJSON)); used > bound {
			t.Fatalf("ParseConfig of %d bytes allocated %d bytes (bound %d)", len(cfgJSON), used, bound)
		}
		if err != nil {
			return
		}
		var msgs []Message
		if json.Unmarshal(msgJSON, &msgs) != nil {
			msgs = []Message{{Role: "user", Content: "hi"}}
		}
		for _, name := range cfg.TemplateNames() {
			tmpl, err := cfg.Template(name)
			if err != nil {
				continue
			}
			tmpl.Limits = jinja.Limits{MaxSteps: 20000, MaxOutput: 1 << 16, MaxDepth: 20}
			_, _ = tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true})
			_ = tmpl.TurnEnd()
		}
	})
}

// TestMain bounds the fuzzer's minimisation when fuzzing (see
// fuzzing.MinimizeTime).
func TestMain(m *testing.M) { fuzzing.Main(m) }

// FuzzToolCalls: any reply, in each format, parses without a panic into
// text and calls that each have a name; a streamed reply is never sent
// past where HoldFrom says a call may start, and a Llama reply that
// parses into calls was held whole from its first byte (no part of a
// call is ever sent as text).
func FuzzToolCalls(f *testing.F) {
	f.Add("hermes", "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	f.Add(ToolFormatLlama3JSON, " <|python_tag|>{\"name\": \"now\", \"parameters\": {}}; {\"name\": \"x\", \"arguments\": \"{}\"}")
	f.Add(ToolFormatLlama3JSON, "It is {sunny}")
	f.Add(ToolFormatLlama3JSON, "\v{\"name\": \"a\"}")
	f.Fuzz(func(t *testing.T, format, reply string) {
		defer fuzzing.Time(len(reply))()
		if format != ToolFormatHermes {
			format = ToolFormatLlama3JSON
		}
		_, calls, err := ParseToolCalls(format, reply)
		for _, c := range calls {
			if err == nil && c.Name == "" {
				t.Fatalf("a call without a name: %+v", calls)
			}
		}
		sent := 0 // what a stream of one byte at a time sends (serve's toolHold)
		for n := 0; n <= len(reply) && n <= 256; n++ {
			h := HoldFrom(format, reply[:n])
			if h < 0 || h > n {
				t.Fatalf("HoldFrom(%q) = %d", reply[:n], h)
			}
			sent = max(sent, h)
		}
		if format == ToolFormatLlama3JSON && err == nil && len(calls) > 0 && sent != 0 {
			t.Fatalf("%q: %d bytes sent as text before its calls", reply, sent)
		}
	})
}
