package jinja

import (
	"errors"
	"runtime"
	"testing"

	"etchat/internal/fuzzing"
)

// chatTemplates are small chat templates in the styles the fixture
// families use (Llama 3, Gemma, ChatML/Qwen with tools and thinking,
// Mistral with raise_exception), under 600 bytes each; the real ones are
// regression tests in package chattmpl.
var chatTemplates = []string{
	`{{- bos_token }}{%- for m in messages %}{{- '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}`,
	`{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + '\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages = messages %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('roles must alternate') }}{% endif %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}{{ '<start_of_turn>' + role + '\n' + (first if loop.first else '') + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}`,
	`{%- if tools %}{{- '<|im_start|>system\n# Tools\n<tools>' }}{%- for tool in tools %}{{- '\n' }}{{- tool | tojson }}{%- endfor %}{{- '\n</tools><|im_end|>\n' }}{%- endif %}{%- for message in messages %}{%- if message.role == 'assistant' and message.tool_calls is defined %}{%- for tc in message.tool_calls %}{{- '<tool_call>\n' + tc.function | tojson + '\n</tool_call>' }}{%- endfor %}{%- elif message.content is string %}{{- '<|im_start|>' + message.role + '\n' + message.content.split('</think>')[-1].lstrip('\n') + '<|im_end|>\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n<think>\n\n</think>\n\n' }}{%- endif %}`,
	`{%- for message in messages %}{%- if message['role'] == 'user' %}{{- '[INST] ' + message['content'] + ' [/INST]' }}{%- elif message['role'] == 'assistant' %}{{- ' ' + message['content'] + eos_token }}{%- else %}{{- raise_exception('Only user and assistant roles are supported!') }}{%- endif %}{%- endfor %}{{ strftime_now('%Y-%m-%d') }}{% macro m(x, y=2) %}{{ x ~ y ~ caller() if caller is defined else x }}{% endmacro %}{{ m(1) }}{% filter upper %}{{ namespace(a=1).a }}{% endfilter %}`,
}

// parseBound is the most Parse may allocate for an n-byte template. The
// lexer makes up to one 48-byte token per byte ("<<<<…"), and the token
// slice's growth allocates up to 5× its final size (append grows large
// slices by 1.25×): 240 B per byte, plus the tree. Linear, as it must be;
// the fuzzer found 171 B/byte at 2.8 KB (testdata/fuzz/FuzzRender).
func parseBound(n int) uint64 { return 64<<10 + 512*uint64(n) }

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzRender: any template text, rendered over a small conversation,
// either renders or fails with an error; it never panics or hangs (the
// tight limits bound the work).
func FuzzRender(f *testing.F) {
	for _, c := range semanticsCases {
		f.Add(c.tmpl)
	}
	for _, s := range chatTemplates {
		f.Add(s)
	}
	for _, s := range []string{
		"", "{", "{{", "{%", "{#", "}}", "%}", "{{}}", "{%%}", "{% for %}", "{% set %}", "{{ a[ }}", "{{ 'a }}",
		"{% raw %}", "{% raw %}{% endraw", "{{ (1, }}", "{{ {1: } }}", "{{ x|map(attribute=1) }}", "{{ [1][::0] }}",
		"{% macro m(a=1, b) %}{% endmacro %}", "{{ loop.cycle() }}", "{% for a, b in [1] %}{% endfor %}",
		"{{ '%' % 1 }}", "{{ '{' .format() }}", "{{ 1 is divisibleby 0 }}", "{{ -9223372036854775807 - 2 }}",
		"{{ 9223372036854775807 + 1 }}", "{{ (-9223372036854775807 - 1) // -1 }}", "{{ 2 ** 100 }}", "{{ 1e308 * 10 }}",
		"{{ messages[0].content[::-1] }}", "{{ messages|tojson(indent='\\t') }}", "{{ range(-5) }}", "{{ 'x'|indent(-1) }}",
		"{{ 'ab'|batch(0) }}", "{{ 'ab'|batch(9999999999999, 'x') }}", "{{ [] * 99999999999999 }}",
		"{{ range(-9223372036854775807, 9223372036854775807) }}", "{{ [1,2,3][1:3:9223372036854775807] }}",
		"{{ [1,2,3][-1:-9:-9223372036854775807] }}", "{{ '%999999999d' % 1 }}", "{{ []|first }}", "{{ none|length }}", "{{ 'a'|center(-3) }}", "{{ 'abc'.split('') }}",
	} {
		f.Add(s)
	}
	vars := map[string]any{
		"messages":              []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "yo"}},
		"tools":                 []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{}}}},
		"add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
	}
	f.Fuzz(func(t *testing.T, src string) {
		defer fuzzing.Time(len(src))()
		before := allocated()
		tm, err := Parse(src)
		if used := allocated() - before; used > parseBound(len(src)) {
			t.Fatalf("Parse of %d bytes allocated %d bytes (bound %d)", len(src), used, parseBound(len(src)))
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse error of type %T: %v", err, err)
			}
			return
		}
		_, _ = tm.Render(vars, &Options{Limits: Limits{MaxSteps: 20000, MaxOutput: 1 << 16, MaxDepth: 20}})
	})
}

// The chat-template seeds must render, or the fuzzer starts from errors.
func TestChatTemplateSeedsRender(t *testing.T) {
	vars := map[string]any{
		"messages":              []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "yo"}},
		"tools":                 []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}},
		"add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
	}
	for i, src := range chatTemplates {
		tm, err := Parse(src)
		if err != nil {
			t.Fatalf("template %d: %v", i, err)
		}
		out, err := tm.Render(vars, nil)
		if err != nil || out == "" {
			t.Errorf("template %d: %q, %v", i, out, err)
		}
	}
}

// TestMain bounds the fuzzer's minimisation when fuzzing (see
// fuzzing.MinimizeTime).
func TestMain(m *testing.M) { fuzzing.Main(m) }
