package jinja

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// semanticsVars are the variables every table case renders with.
func semanticsVars(t *testing.T) map[string]any {
	t.Helper()
	v, err := DecodeJSON([]byte(`{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "meta": {"z": 1, "a": [1.0, 2]}}], "flag": false, "n": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*Dict)
	out := map[string]any{}
	for _, k := range d.Keys() {
		out[k.(string)], _ = d.Get(k)
	}
	return out
}

// semanticsCases are small templates with the output Jinja2 3.1 gives
// them under transformers' settings (trim_blocks, lstrip_blocks, loop
// controls, json.dumps-style tojson), or a fragment of the error they
// must fail with.
var semanticsCases = []struct {
	name, tmpl, want, wantErr string
}{
	{"int and float printing", `{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1e20 }} {{ 0.1+0.2 }} {{ 10/4 }} {{ 3/1 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ 1/3 }}`, `1 1.0 1500.0 1e+20 0.30000000000000004 2.5 3.0 1e+16 1000000000000000.0 0.0001 1e-05 -0.0 0.3333333333333333`, ""},
	{"floor division and modulo", `{{ 10//4 }} {{ -7//2 }} {{ -7%3 }} {{ 7%-3 }} {{ 7.0//2 }} {{ 7.5%2 }}`, `2 -4 2 -2 3.0 1.5`, ""},
	{"power", `{{ 2**10 }} {{ 2**-1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}`, `1024 0.5 64 4`, ""},
	{"none and booleans", `{{ none }} {{ None }} {{ true }} {{ False }} {{ true + 1 }} {{ 1 == 1.0 }} {{ true == 1 }}`, `None None True False 2 True True`, ""},
	{"containers print as Python repr", `{{ [1,'a',none,true,1.5] }} {{ {'a':1,'b':[2]} }} {{ ['it\'s', "q\""] }}`, `[1, 'a', None, True, 1.5] {'a': 1, 'b': [2]} ["it's", 'q"']`, ""},
	{"string escapes", `{{ 'it\'s' }}|{{ "a\nb" }}|{{ 'x\ty' }}|{{ '\u00e9\x41' }}|{{ 'back\\slash' }}|{{ 'keep\q' }}`, `it's|a
b|x	y|éA|back\slash|keep\q`, ""},
	{"adjacent string literals", `{{ 'a' 'b' }}{{ "c" 'd' }}`, `abcd`, ""},
	{"loop variables", `{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}`, `10TrueFalse332;21FalseFalse321;32FalseTrue310;`, ""},
	{"previtem nextitem cycle", `{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a','b') }};{% endfor %}`, `-2-a;1-3-b;2--a;`, ""},
	{"previtem undefined on first", `{% for x in [1,2] %}{{ loop.previtem is defined }}{{ loop.nextitem is defined }}{% endfor %}`, `FalseTrueTrueFalse`, ""},
	{"for else", `{% for x in [] %}no{% else %}empty{% endfor %}{% for x in [1] %}one{% else %}empty{% endfor %}`, `emptyone`, ""},
	{"loop filter counts filtered items", `{% for x in [1,2,3,4,5,6] if x is even %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}`, `2:1/3 4:2/3 6:3/3 `, ""},
	{"unpacking dict items", `{% for k, v in {'b':1,'a':2}.items() %}{{k}}={{v}},{% endfor %}`, `b=1,a=2,`, ""},
	{"iterating a dict yields keys in order", `{% for k in {'b':1,'a':2} %}{{ k }}{% endfor %}`, `ba`, ""},
	{"iterating a string", `{% for x in 'abc' %}{{x}}.{% endfor %}`, `a.b.c.`, ""},
	{"nested loops shadow loop", `{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}`, `113 214 1|123 224 2|`, ""},
	{"break and continue", `{% for i in range(10) %}{% if i == 7 %}{% break %}{% endif %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}`, `0246`, ""},
	{"set in loop does not leak", `{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}`, `12121`, ""},
	{"set in if leaks", `{% if true %}{% set y = 5 %}{% endif %}{{ y }}`, `5`, ""},
	{"namespace carries across iterations", `{% set ns = namespace(a=0, s='') %}{% for i in [1,2,3] %}{% set ns.a = ns.a + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.a }} {{ ns.s }}`, `6 123`, ""},
	{"block set", `{% set x %}hello {{ 1+1 }}{% endset %}[{{ x }}]`, `[hello 2]`, ""},
	{"block set with filter", `{% set x | upper %}hello{% endset %}[{{ x }}]`, `[HELLO]`, ""},
	{"tuple set", `{% set a, b = 1, 2 %}{{ a }}{{ b }}`, `12`, ""},
	{"macro with defaults and keywords", `{% macro f(a, b='B') %}<{{a}}{{b}}>{% endmacro %}{{ f(1) }}{{ f(1, 2) }}{{ f(b=4, a=3) }}{{ f() }}`, `<1B><12><34><B>`, ""},
	{"recursive macro", `{% macro m(x) %}{{ x }}{% if x > 0 %}{{ m(x - 1) }}{% endif %}{% endmacro %}{{ m(3) }}`, `3210`, ""},
	{"macro sees template variables", `{% set g = 'G' %}{% macro f() %}{{ g }}{{ n }}{% endmacro %}{{ f() }}`, `G3`, ""},
	{"inline if", `{{ 'a' if true else 'b' }}{{ 'a' if false else 'b' }}[{{ 'a' if false }}]{{ (1 if true else 2) + 1 }}`, `ab[]2`, ""},
	{"if elif else", `{% for v in [1, 2, 3] %}{% if v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %} {% endfor %}`, `one two many `, ""},
	{"slicing", `{{ [1,2,3][::-1] }}{{ [1,2,3][1:] }}{{ 'hello'[1:3] }}{{ 'hello'[::-1] }}{{ [1,2,3,4,5][::2] }}{{ [1,2,3][-1] }}{{ [1,2,3][:-1] }}{{ [1,2,3][5:] }}{{ 'héllo'[1] }}`, `[3, 2, 1][2, 3]elolleh[1, 3, 5]3[1, 2][]é`, ""},
	{"trim_blocks and lstrip_blocks", `a
  {% if true %}
  b
  {% endif %}
c`, `a
  b
c`, ""},
	{"dash strips both sides", `a  {%- if true -%}  b  {%- endif -%}  c`, `abc`, ""},
	{"dash on expressions", `a
  {{- 'x' -}}
  b`, `axb`, ""},
	{"plus disables lstrip", `  {%+ if true %}x{% endif %}`, `  x`, ""},
	{"plus disables trim", `{% if true +%}
x{% endif %}`, `
x`, ""},
	{"comments follow block rules", `a {# comment #}
b
  {# c2 #}
c`, `a b
c`, ""},
	{"expressions keep their newline", `{{ 'x' }}
{{ 'y' }}
`, `x
y`, ""},
	{"one trailing newline dropped", `x
{% if true %}
  y
{% endif %}

`, `x
  y
`, ""},
	{"indented loop", `  {% for x in [1,2] %}
    {{ x }}
  {% endfor %}
`, `    1
    2
`, ""},
	{"lstrip only at line start", `x {% if true %}y{% endif %}`, `x y`, ""},
	{"raw block", `{% raw %}{{ not evaluated }}{% endraw %}`, `{{ not evaluated }}`, ""},
	{"with block", `{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]`, `3[]`, ""},
	{"filter block", `{% filter upper %}hi {{ 'x' }}{% endfilter %}`, `HI X`, ""},
	{"generation tag renders its body", `{% generation %}kept{% endgeneration %}`, `kept`, ""},
	{"string filters", `{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'aBc'|lower }}{{ 'aBc'|upper }}|{{ 'hello wORLD'|title }}|{{ 'hELLO'|capitalize }}`, `x|a|abcABC|Hello World|Hello`, ""},
	{"length and count", `{{ [1,2]|length }}{{ 'héllo'|count }}{{ {'a':1}|length }}{{ undefined_thing|length }}`, `2510`, ""},
	{"first last join", `{{ [1,2,3]|first }}{{ [1,2,3]|last }}{{ [1,2,3]|join(',') }}{{ [1,2,3]|join }}{{ [{'a':'x'},{'a':'y'}]|join('+', attribute='a') }}`, `131,2,3123x+y`, ""},
	{"default", `{{ nothing|default('d') }}{{ none|default('d') }}{{ ''|default('d', true) }}{{ nothing|d('e') }}{{ 0|default(5) }}`, `dNonede0`, ""},
	{"conversions", `{{ 'abc'|list }} {{ 1|string }} {{ '42'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '3.5'|float }} {{ 3.9|int }} {{ 10|float }} {{ '0x1A'|int(0, 16) }}`, `['a', 'b', 'c'] 1 42 0 7 3.5 3 10.0 26`, ""},
	{"abs and round", `{{ -3|abs }} {{ -2.5|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 3.14159|round(2) }} {{ 2.7|round(0,'floor') }} {{ 2.1|round(0,'ceil') }} {{ 3|round }}`, `3 2.5 2.0 4.0 3.14 2.0 3.0 3`, ""},
	{"replace", `{{ 'aaa'|replace('a','b') }} {{ 'aaa'|replace('a','b',2) }}`, `bbb bba`, ""},
	{"items and dictsort", `{% for k, v in {'b':1,'a':2}|items %}{{ k }}{{ v }}{% endfor %} {% for k, v in {'b':1,'a':2,'C':0}|dictsort %}{{ k }}{% endfor %} {% for k, v in {'a':1,'b':2}|dictsort(by='value', reverse=true) %}{{ k }}{% endfor %}`, `b1a2 abC ba`, ""},
	{"select and reject", `{{ [{'a':1},{'a':2},{'b':3}]|selectattr('a')|list }} {{ [{'a':1},{'a':2}]|selectattr('a','equalto',2)|list }} {{ [{'a':1},{'b':2}]|rejectattr('a')|list }} {{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3]|reject('odd')|list }} {{ [0,1,'',2]|select|list }}`, `[{'a': 1}, {'a': 2}] [{'a': 2}] [{'b': 2}] [1, 3] [2] [1, 2]`, ""},
	{"map and unique", `{{ [{'a':1},{'a':2}]|map(attribute='a')|list }} {{ ['a','b']|map('upper')|list }} {{ [{'a':1},{}]|map(attribute='a', default=0)|list }} {{ [1,1,2,'A','a']|unique|list }}`, `[1, 2] ['A', 'B'] [1, 0] [1, 2, 'A']`, ""},
	{"escape and safe", `{{ '<a href="x">&\'</a>'|e }} {{ '<b>'|escape }} {{ '<a>'|safe }}`, `&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; <a>`, ""},
	{"indent and wordcount and batch", `{{ 'a
b

c'|indent }}|{{ 'a
b'|indent(2, true) }}|{{ 'hello big world'|wordcount }}|{{ [1,2,3,4,5]|batch(2)|list }}`, `a
    b

    c|  a
  b|3|[[1, 2], [3, 4], [5]]`, ""},
	{"sum sort min max reverse", `{{ [1,2,3]|sum }} {{ [3,1,2]|sort }} {{ [3,1,2]|sort(reverse=true) }} {{ [3,1,2]|max }} {{ [3,1,2]|min }} {{ [1,2]|reverse|list }} {{ 'abc'|reverse }} {{ [{'n':'b'},{'n':'A'}]|sort(attribute='n')|map(attribute='n')|join }}`, `6 [1, 2, 3] [3, 2, 1] 3 1 [2, 1] cba Ab`, ""},
	{"tojson like json.dumps", `{{ {'b':[1,2.5,'x',none,true],'a':{}}|tojson }}|{{ 'é"<>&\n\u0001'|tojson }}|{{ []|tojson(indent=2) }}|{{ 1.0|tojson }}`, `{"b": [1, 2.5, "x", null, true], "a": {}}|"é\"<>&\n\u0001"|[]|1.0`, ""},
	{"tojson indent", `{{ {'a':1,'b':{'c':[2,3]}}|tojson(indent=2) }}`, `{
  "a": 1,
  "b": {
    "c": [
      2,
      3
    ]
  }
}`, ""},
	{"tojson separators and sort_keys", `{{ [1, [2, 3]]|tojson(separators=(',', ':')) }}{{ {'b':1,'a':2}|tojson(sort_keys=true) }}`, `[1,[2,3]]{"a": 2, "b": 1}`, ""},
	{"tojson keeps message order", `{{ messages[1]|tojson }}`, `{"role": "assistant", "content": "yo", "meta": {"z": 1, "a": [1.0, 2]}}`, ""},
	{"tests", `{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ 1 is integer }}{{ 1.0 is float }}{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}{{ true is boolean }}{{ true is true }}{{ false is false }}{{ 2 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 1 is in [1,2] }}{{ 1 is eq 1 }}{{ true is number }}{{ true is integer }}{{ 'a' is iterable }}{{ 1 is iterable }}`, `FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueFalse`, ""},
	{"comparison tests", `{{ 5 is gt 3 }}{{ 5 is lt 3 }}{{ 'a' is ne 'b' }}{{ 3 is ge 3 }}{{ 2 is le 1 }}{{ none is sameas none }}{{ 'abc' is lower }}{{ 'ABC' is upper }}`, `TrueFalseTrueTrueFalseTrueTrueTrue`, ""},
	{"operators", `{{ 'a' ~ 1 ~ none }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ 3 * 'ab' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }} {{ 'x' not in ['y'] }} {{ not 1 }} {{ 1 and 2 }} {{ 0 or 'z' }} {{ none is not none }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }}`, `a1None ab [1, 2] ababab ababab True False True True False 2 z False True True`, ""},
	{"not binds looser than in and is", `{{ not 'a' in 'b' }}{{ not x is defined }}{{ -1|abs }}{{ 1 - - 1 }}`, `TrueTrue12`, ""},
	{"string methods", `{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ '\n\nx\n'.lstrip('\n') }}|{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x','c')) }}|{{ 'aXa'.replace('a','b') }}{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'ab cd'.title() }}{{ 'aB'.capitalize() }}|{{ 'abc'.find('c') }}{{ 'abc'.find('z') }}{{ 'aaa'.count('a') }}{{ '-'.join(['a','b']) }}`, `a b|a|a|a|x
|TrueTrue|bXbABabAb CdAb|2-13a-b`, ""},
	{"split", `{{ 'a,b,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}{{ ' a  b '.split() }}{{ 'a b c'.split(none, 1) }}{{ 'x</think>y</think>z'.split('</think>')[-1] }}{{ 'ab'.rsplit('b', 1) }}{{ 'a\nb'.splitlines() }}`, `['a', 'b', 'c']['a', 'b,c']['a', 'b']['a', 'b c']z['a', '']['a', 'b']`, ""},
	{"format", `{{ '{} and {}'.format(1, 'x') }}|{{ '{0}{0}'.format('y') }}|{{ 'hi {name}'.format(name='bob') }}|{{ '%s-%d' % ('a', 3) }}|{{ 'x%sy' % 'z' }}|{{ '%.2f'|format(3.14159) }}|{{ '%s=%s'|format('a', 1) }}`, `1 and x|yy|hi bob|a-3|xzy|3.14|a=1`, ""},
	{"dict methods", `{{ {'a':1}.items()|list|length }}{{ {'a':1}.keys()|list }}{{ {'a':1}.values()|list }}{{ {'a':1}.get('a') }}{{ {'a':1}.get('b') }}{{ {'a':1}.get('b', 5) }}`, `1['a'][1]1None5`, ""},
	{"attribute and item lookup", `{{ messages[0]['content'] }}{{ messages[0].content }}{{ messages|length }}{{ messages[-1].role }}{{ messages[1].meta.a[0] }}{{ messages[0].missing is defined }}{{ messages[0]['missing'] is defined }}[{{ messages[0].missing }}]`, `hihi2assistant1.0FalseFalse[]`, ""},
	{"range", `{% for i in range(3) %}{{ i }}{% endfor %}{{ range(1,10,3)|list }}{{ range(5,0,-2)|list }}`, `012[1, 4, 7][5, 3, 1]`, ""},
	{"undefined prints empty and is falsy", `[{{ nothing }}]{% if nothing %}t{% else %}f{% endif %}{% for x in nothing %}x{% endfor %}`, `[]f`, ""},
	{"dict and namespace functions", `{{ dict(a=1, b=2) }} {% set ns = namespace({'x': 1}, y=2) %}{{ ns.x }}{{ ns.y }}`, `{'a': 1, 'b': 2} 12`, ""},
	{"whitespace control in a chat-like loop", `{%- for m in messages -%}
  {{- m.role }}: {{ m.content }}
{% endfor -%}
END`, `user: hi
assistant: yo
END`, ""},
	{"title filter starts words after brackets and dashes", `{{ "[{'role': 'user'}] x-ray (bOB)"|title }}|{{ 'ab cd'.title() }}`, `[{'role': 'user'}] X-Ray (Bob)|Ab Cd`, ""},
	{"even and odd on floats", `{{ 4.0 is even }}{{ 3.0 is odd }}{{ 0.5 is odd }}{{ 0.5 is even }}`, `TrueTrueFalseFalse`, ""},
	{"lower and upper tests need cased characters", `{{ '7' is lower }}{{ '7' is upper }}{{ 'a1' is lower }}{{ 'A1' is upper }}`, `FalseFalseTrueTrue`, ""},
	{"select and map of a false value are empty", `{{ none|map('string')|list }}{{ false|select|list }}{{ 0|selectattr('a')|list }}`, `[][][]`, ""},
	{"aggregates of undefined", `{{ nothing|sum }}{{ nothing|max is defined }}{{ nothing|list }}`, `0False[]`, ""},
	{"error: leftover % argument", `{{ 'ab' % 'x' }}`, "", `not all arguments converted`},
	{"error: indent of a number", `{{ 1|indent }}`, "", `unsupported operand type(s) for +=: 'int' and 'str'`},
	{"error: int of undefined", `{{ nothing|int }}`, "", `'nothing' is undefined`},
	{"tuples print as Python tuples", `{{ (1, 2) }}{{ (1,) }}{{ () }}{{ {'a':1}.items()|list }}{{ {'b':1,'a':2}|dictsort }}{{ (1,2) == [1,2] }}{{ (1,2) + (3,) }}{{ (1,2)[1:] }}{{ (1,2)|tojson }}{{ '%s-%s' % (1, 2) }}{{ '%s' % [1, 2] }}`, `(1, 2)(1,)()[('a', 1)][('a', 2), ('b', 1)]False(1, 2, 3)(2,)[1, 2]1-2[1, 2]`, ""},
	{"error: raise_exception", `{{ raise_exception('boom: ' ~ n) }}`, "", `boom: 3`},
	{"error: attribute of undefined", `{{ x.y }}`, "", `'x' is undefined`},
	{"error: attribute of missing attribute", `{{ messages[0].missing.x }}`, "", `'dict object' has no attribute 'missing'`},
	{"error: str plus int", `{{ 1 + 'a' }}`, "", `unsupported operand type(s) for +: 'int' and 'str'`},
	{"error: division by zero", `{{ 5 // 0 }}`, "", `integer division or modulo by zero`},
	{"error: ordering mixed types", `{{ 1 < 'a' }}`, "", `'<' not supported between instances of 'int' and 'str'`},
	{"error: iterating an int", `{% for x in 5 %}{% endfor %}`, "", `'int' object is not iterable`},
	{"error: list append is unsafe", `{{ [1,2].append(3) }}`, "", `access to attribute 'append' of 'list' object is unsafe`},
	{"error: unknown filter", `{{ 1|nosuchfilter }}`, "", `no filter named 'nosuchfilter'`},
	{"error: unknown test", `{{ 1 is nosuchtest }}`, "", `no test named 'nosuchtest'`},
	{"error: undefined plus string", `{{ nothing + 'a' }}`, "", `'nothing' is undefined`},
	{"error: unclosed block", `{% if true %}x`, "", `unexpected end of template, expected 'endif'`},
	{"error: unknown tag", `{% frobnicate %}`, "", `unknown tag 'frobnicate'`},
	{"error: unterminated string", `{{ 'abc }}`, "", `unterminated string`},
	{"error: unexpected endfor", `{% endfor %}`, "", `unknown tag 'endfor'`},
	{"error: missing end of comment", `{# abc`, "", `missing end of comment tag`},
	{"error: unclosed expression", `{{ 1 + }}`, "", `unexpected end of print statement`},
}

func TestSemantics(t *testing.T) {
	vars := semanticsVars(t)
	for _, c := range semanticsCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(c.tmpl, vars)
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("rendered %q, want an error containing %q", got, c.wantErr)
				}
				if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.wantErr)) {
					t.Fatalf("error %q, want it to contain %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != c.want {
				t.Fatalf("\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func render(src string, vars map[string]any) (string, error) {
	tm, err := Parse(src)
	if err != nil {
		return "", err
	}
	return tm.Render(vars, nil)
}

func TestRaiseExceptionMessageIsExact(t *testing.T) {
	_, err := render(`{{ raise_exception("Conversation roles must alternate") }}`, nil)
	var re *RaisedError
	if !errors.As(err, &re) || err.Error() != "Conversation roles must alternate" {
		t.Fatalf("got %v (%T)", err, err)
	}
}

// TestWhitespaceControl replays random mixes of text, tags, '-' and '+'
// markers, comments and raw blocks against Jinja2's own renderings.
func TestWhitespaceControl(t *testing.T) {
	b, err := os.ReadFile("testdata/whitespace.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Template string  `json:"template"`
			Rendered *string `json:"rendered"`
			Error    bool    `json:"error"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 100 {
		t.Fatalf("only %d cases", len(g.Cases))
	}
	for i, c := range g.Cases {
		got, err := render(c.Template, nil)
		switch {
		case c.Error && err == nil:
			t.Errorf("case %d %q: rendered %q, want an error", i, c.Template, got)
		case !c.Error && err != nil:
			t.Errorf("case %d %q: %v", i, c.Template, err)
		case !c.Error && got != *c.Rendered:
			t.Errorf("case %d %q:\n got %q\nwant %q", i, c.Template, got, *c.Rendered)
		}
	}
}
