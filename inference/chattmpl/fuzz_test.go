package chattmpl

import (
	"encoding/json"
	"testing"

	"etchat/inference/chattmpl/jinja"
)

// FuzzConfigAndMessages: any tokenizer_config.json and messages JSON is
// parsed, and any template in it rendered under tight limits, without a
// panic.
func FuzzConfigAndMessages(f *testing.F) {
	f.Add([]byte(`{"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}{{ m.content }}{% endfor %}", "bos_token": {"content": "<s>"}}`),
		[]byte(`[{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"b": 1, "a": [1.5]}}}]}]`))
	f.Add([]byte(`{"chat_template": [{"name": "default", "template": "{{ messages|tojson(indent=1) }}"}], "eos_token": "</s>"}`),
		[]byte(`[{"role": "user", "content": [{"type": "text", "text": "x"}]}]`))
	f.Add([]byte(`{"chat_template": 3}`), []byte(`{"role": 1}`))
	f.Fuzz(func(t *testing.T, cfgJSON, msgJSON []byte) {
		cfg, err := ParseConfig(cfgJSON)
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
