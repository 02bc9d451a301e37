package jinja

import (
	"errors"
	"testing"
)

// FuzzRender: any template text, rendered over a small conversation,
// either renders or fails with an error; it never panics or hangs (the
// tight limits bound the work).
func FuzzRender(f *testing.F) {
	for _, c := range semanticsCases {
		f.Add(c.tmpl)
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
		"messages": []any{map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "yo"}},
		"tools":    nil, "add_generation_prompt": true, "bos_token": "<s>",
	}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := Parse(src)
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
