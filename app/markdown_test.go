package app

import (
	"reflect"
	"strings"
	"testing"
)

// What a reply's Markdown renders as, block by block (issue 36 item 7).
func TestParseMarkdown(t *testing.T) {
	b := func(s string) mdSpan { return mdSpan{Text: s, Bold: true} }
	i := func(s string) mdSpan { return mdSpan{Text: s, Italic: true} }
	p := func(s string) mdSpan { return mdSpan{Text: s} }
	cases := []struct {
		name, src string
		want      []mdBlock
	}{
		{"paragraph with emphasis", "Plain **bold** and *it* and `x := 1`.",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("Plain "), b("bold"), p(" and "), i("it"), p(" and "), {Text: "x := 1", Code: true}, p(".")}}}},
		{"soft and hard breaks", "one\ntwo  \nthree",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("one two\nthree")}}}},
		{"headings", "# Title\n\n### Small *one*",
			[]mdBlock{{Kind: mdHeading, Level: 1, Spans: []mdSpan{p("Title")}}, {Kind: mdHeading, Level: 3, Spans: []mdSpan{p("Small "), i("one")}}}},
		{"links", "See [the docs](https://example.com/d) or https://go.dev.",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("See "), {Text: "the docs", URL: "https://example.com/d"}, p(" or "), {Text: "https://go.dev", URL: "https://go.dev"}, p(".")}}}},
		{"nested lists", "- a\n- b\n  1. c\n  2. d\n\n3. e\n4. f",
			[]mdBlock{
				{Kind: mdItem, Marker: "•", Spans: []mdSpan{p("a")}},
				{Kind: mdItem, Marker: "•", Spans: []mdSpan{p("b")}},
				{Kind: mdItem, Level: 1, Marker: "1.", Spans: []mdSpan{p("c")}},
				{Kind: mdItem, Level: 1, Marker: "2.", Spans: []mdSpan{p("d")}},
				{Kind: mdItem, Marker: "3.", Spans: []mdSpan{p("e")}},
				{Kind: mdItem, Marker: "4.", Spans: []mdSpan{p("f")}},
			}},
		{"quote and rule", "> quoted **x**\n\n---\n\nafter",
			[]mdBlock{{Kind: mdQuote, Spans: []mdSpan{p("quoted "), b("x")}}, {Kind: mdRule}, {Kind: mdPara, Spans: []mdSpan{p("after")}}}},
		{"fenced code", "Run:\n\n```go\nfmt.Println(\"a*b*c\")\n\tx := 1\n```\n",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("Run:")}}, {Kind: mdCode, Lang: "go", Code: "fmt.Println(\"a*b*c\")\n\tx := 1"}}},
		{"indented code", "    a\n    b\n",
			[]mdBlock{{Kind: mdCode, Code: "a\nb"}}},
		{"table", "| Name | **Size** |\n|:-----|-----:|\n| a | 1 |\n| `b` |\n",
			[]mdBlock{{Kind: mdTable, Align: []string{"left", "right"},
				Header: [][]mdSpan{{p("Name")}, {b("Size")}},
				Rows:   [][][]mdSpan{{{p("a")}, {p("1")}}, {{{Text: "b", Code: true}}, nil}}}}},
		{"escapes and entities", `a \*b\* &amp; ~~c~~`,
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("a *b* & "), {Text: "c", Strike: true}}}}},
		// Mid-stream: a fence not closed yet is a code block to the end;
		// a table before its delimiter row is text; an empty item is one.
		{"open fence", "Here:\n```python\ndef f():\n    return 1",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("Here:")}}, {Kind: mdCode, Lang: "python", Code: "def f():\n    return 1"}}},
		{"fence closing", "```\nx\n``",
			[]mdBlock{{Kind: mdCode, Code: "x\n``"}}},
		{"table head only", "| a | b |\n| -",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("| a | b | | -")}}}},
		{"table half a row", "| a | b |\n|---|---|\n| 1",
			[]mdBlock{{Kind: mdTable, Align: []string{"", ""}, Header: [][]mdSpan{{p("a")}, {p("b")}}, Rows: [][][]mdSpan{{{p("1")}, nil}}}}},
		{"empty item", "- a\n- ",
			[]mdBlock{{Kind: mdItem, Marker: "•", Spans: []mdSpan{p("a")}}, {Kind: mdItem, Marker: "•"}}},
		{"item starting with a list", "- - a\n- b",
			[]mdBlock{{Kind: mdItem, Marker: "•"}, {Kind: mdItem, Level: 1, Marker: "•", Spans: []mdSpan{p("a")}}, {Kind: mdItem, Marker: "•", Spans: []mdSpan{p("b")}}}},
		{"unclosed emphasis", "some **bold",
			[]mdBlock{{Kind: mdPara, Spans: []mdSpan{p("some **bold")}}}},
		{"empty", "", nil},
	}
	for _, c := range cases {
		got := parseMarkdown(c.src)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q\n got %+v\nwant %+v", c.name, c.src, got, c.want)
		}
	}
}

// Every prefix of a reply (as it streams, byte by byte) parses without a
// panic, and the last word that came is drawn — except a code fence's
// language while its line is being written (goldmark reads the info
// word at the line's end).
func TestParseMarkdownEveryPrefix(t *testing.T) {
	src := "# Plan\n\nA *list*:\n\n1. one\n2. **two**\n\n| k | v |\n|---|---|\n| a | `1` |\n\n```go\nfunc main() {}\n```\n\n> done [see x.org](http://x.org)\n"
	for n := 0; n <= len(src); n++ {
		blocks := parseMarkdown(src[:n])
		var sb strings.Builder
		for _, b := range blocks {
			sb.WriteString(mdText(b.Spans))
			sb.WriteString(b.Code + b.Lang)
			for _, h := range b.Header {
				sb.WriteString(mdText(h))
			}
			for _, r := range b.Rows {
				for _, c := range r {
					sb.WriteString(mdText(c))
				}
			}
		}
		// The last word of the prefix is drawn (markup characters aside).
		if i := strings.LastIndex(src[:n], "\n"); strings.HasPrefix(src[i+1:n], "```") {
			continue
		}
		words := strings.FieldsFunc(src[:n], func(r rune) bool { return !('a' <= r && r <= 'z') })
		if len(words) > 0 && !strings.Contains(sb.String(), words[len(words)-1]) {
			t.Fatalf("prefix %q: last word %q not drawn in %q", src[:n], words[len(words)-1], sb.String())
		}
	}
}
