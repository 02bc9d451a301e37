package jinja

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLimits: hostile templates fail fast with an error wrapping ErrLimit.
func TestLimits(t *testing.T) {
	cases := map[string]string{
		"nested huge loops":   `{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}`,
		"range too big":       `{{ range(1000000000)|length }}`,
		"unbounded recursion": `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
		"output flood":        `{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}`,
		"huge repetition":     `{{ 'abc' * 10000000000 }}`,
		"doubling string":     `{% set ns = namespace(v='x') %}{% for i in range(100) %}{% set ns.v = ns.v ~ ns.v %}{% endfor %}{{ ns.v|length }}`,
		"doubling list":       `{% set ns = namespace(v=[1]) %}{% for i in range(100) %}{% set ns.v = ns.v + ns.v %}{% endfor %}{{ ns.v|length }}`,
		"huge replace":        `{% set ns = namespace(v='xx') %}{% for i in range(60) %}{% set ns.v = ns.v|replace('x', 'xx') %}{% endfor %}`,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			tm, err := Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			// Default step and depth budgets; a 1 MiB output budget keeps
			// the memory-flooding cases quick under -race.
			out, err := tm.Render(nil, &Options{Limits: Limits{MaxOutput: 1 << 20}})
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("got %d bytes, err %v; want ErrLimit", len(out), err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

func TestCustomLimits(t *testing.T) {
	tm, err := Parse(`{% for i in range(100) %}{{ i }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Render(nil, &Options{Limits: Limits{MaxSteps: 50}}); !errors.Is(err, ErrLimit) {
		t.Fatalf("MaxSteps 50: %v", err)
	}
	if _, err := tm.Render(nil, &Options{Limits: Limits{MaxOutput: 20}}); !errors.Is(err, ErrLimit) {
		t.Fatalf("MaxOutput 20: %v", err)
	}
	out, err := tm.Render(nil, &Options{Limits: Limits{MaxSteps: 10000, MaxOutput: 1000}})
	if err != nil || !strings.HasPrefix(out, "0123") || len(out) != 190 {
		t.Fatalf("within limits: %q, %v", out, err)
	}
}

func TestDeepNestingIsASyntaxError(t *testing.T) {
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + " }}",
		"{{ " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + " }}",
		"{{ " + strings.Repeat("not ", 5000) + "1 }}",
		"{{ " + strings.Repeat("-", 5000) + "1 }}",
		strings.Repeat("{% if true %}", 5000) + strings.Repeat("{% endif %}", 5000),
	} {
		_, err := Parse(src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%.30s...: %v", src, err)
		}
	}
}

// TestSandbox: templates reach no Go internals and no Python dunders.
func TestSandbox(t *testing.T) {
	vars := map[string]any{"s": "x", "d": map[string]any{"k": 1}, "l": []any{1}}
	for _, src := range []string{
		`{{ s.__class__ }}`, `{{ d.__class__ }}`, `{{ l.__len__ }}`, `{{ s.Len }}`, `{{ d._private }}`,
		`{{ range.__globals__ }}`, `{{ namespace.__init__ }}`,
	} {
		out, err := render(src, vars)
		if err == nil && out != "" {
			t.Errorf("%s rendered %q", src, out)
		}
	}
	// Go values that are not data are refused.
	tm, _ := Parse(`{{ f }}`)
	if _, err := tm.Render(map[string]any{"f": func() {}}, nil); err == nil {
		t.Fatal("a Go func was accepted as template data")
	}
}

func TestStrftimeNowUsesClock(t *testing.T) {
	tm, err := Parse(`{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%-d %B %Y, %A %H:%M:%S %j %y %m %p %I %%") }}`)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Date(2024, time.July, 5, 14, 3, 9, 0, time.UTC) }
	out, err := tm.Render(nil, &Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if want := "05 Jul 2024|5 July 2024, Friday 14:03:09 187 24 07 PM 02 %"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

// TestLongConversationFitsTheDefaultBudget: a 4,000-message chat through
// a Qwen-style template takes under a tenth of the default step budget.
func TestLongConversationFitsTheDefaultBudget(t *testing.T) {
	src := `{%- for m in messages %}{%- if m.role == "user" and not (m.content.startswith('<tool_response>') and m.content.endswith('</tool_response>')) %}{{ '<|im_start|>' + m.role + '\n' + m.content | trim + '<|im_end|>\n' }}{%- elif m.role == "assistant" %}{%- set content = m.content.split('</think>')[-1].lstrip('\n') %}{{ '<|im_start|>assistant\n' + content + '<|im_end|>\n' }}{%- endif %}{%- endfor %}`
	var msgs []any
	for i := 0; i < 2000; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": "question"}, map[string]any{"role": "assistant", "content": "<think>x</think>answer"})
	}
	tm, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Render(map[string]any{"messages": msgs}, &Options{Limits: Limits{MaxSteps: 200_000}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "<|im_start|>assistant\nanswer<|im_end|>"); n != 2000 {
		t.Fatalf("%d assistant turns rendered", n)
	}
}
