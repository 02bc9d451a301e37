package app

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A reply's Markdown as the transcript draws it: goldmark (CommonMark with
// GitHub's tables, strikethrough and bare links) parses the text into
// blocks of styled spans, which ui_message.go turns into widgets. The
// blocks are plain data, so what a reply renders as is tested without a
// window. A reply still streaming is parsed the same way at every redraw:
// an unclosed code fence is a code block up to the end, a table whose
// delimiter row has not come yet is a paragraph of its pipes.

// mdKind is what a block is.
type mdKind int

const (
	mdPara    mdKind = iota // a paragraph
	mdHeading               // a heading (Level 1–6)
	mdItem                  // a list item's paragraph (Level: nesting, 0 outermost)
	mdQuote                 // a paragraph inside a block quote
	mdCode                  // a code block (Code, Lang)
	mdTable                 // a table (Header, Rows, Align)
	mdRule                  // a thematic break
)

// mdSpan is a run of text with one style; URL is set on a link's text.
type mdSpan struct {
	Text                 string
	Bold, Italic, Strike bool
	Code                 bool // an inline code span
	URL                  string
}

// mdBlock is one block of a reply.
type mdBlock struct {
	Kind   mdKind
	Level  int      // heading level, or list nesting
	Marker string   // a list item's "•" or "3." ("" on its later paragraphs)
	Spans  []mdSpan // paragraph, heading, item and quote text
	Code   string   // a code block's text, without its last newline
	Lang   string   // a fenced code block's info word
	Header [][]mdSpan
	Rows   [][][]mdSpan // each row as many cells as the header
	Align  []string     // per column: "", "left", "center" or "right"
}

var mdParser = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify)).Parser()

// parseMarkdown is src's blocks, in order (nested lists and quotes
// flattened, their depth kept on the block).
func parseMarkdown(src string) []mdBlock {
	source := []byte(src)
	doc := mdParser.Parse(text.NewReader(source))
	c := mdConv{src: source}
	c.blocks(doc, 0, false)
	return c.out
}

type mdConv struct {
	src []byte
	out []mdBlock
}

// blocks converts n's children; depth is the list nesting, quoted whether
// they are inside a block quote.
func (c *mdConv) blocks(n ast.Node, depth int, quoted bool) {
	for b := n.FirstChild(); b != nil; b = b.NextSibling() {
		c.block(b, depth, quoted)
	}
}

func (c *mdConv) block(b ast.Node, depth int, quoted bool) {
	switch b := b.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		kind := mdPara
		if quoted {
			kind = mdQuote
		}
		c.out = append(c.out, mdBlock{Kind: kind, Spans: c.inlines(b)})
	case *ast.Heading:
		c.out = append(c.out, mdBlock{Kind: mdHeading, Level: b.Level, Spans: c.inlines(b)})
	case *ast.ThematicBreak:
		c.out = append(c.out, mdBlock{Kind: mdRule})
	case *ast.FencedCodeBlock:
		c.out = append(c.out, mdBlock{Kind: mdCode, Code: c.lines(b), Lang: string(b.Language(c.src))})
	case *ast.CodeBlock:
		c.out = append(c.out, mdBlock{Kind: mdCode, Code: c.lines(b)})
	case *ast.HTMLBlock:
		s := c.lines(b)
		if b.HasClosure() {
			s += "\n" + string(b.ClosureLine.Value(c.src))
		}
		c.out = append(c.out, mdBlock{Kind: mdPara, Spans: []mdSpan{{Text: strings.TrimRight(s, "\n")}}})
	case *ast.Blockquote:
		c.blocks(b, depth, true)
	case *ast.List:
		c.list(b, depth, quoted)
	case *east.Table:
		c.out = append(c.out, c.table(b))
	default:
		c.blocks(b, depth, quoted)
	}
}

// list converts a list's items: each item's first paragraph carries the
// marker, its later blocks follow at the same depth, nested lists one
// deeper.
func (c *mdConv) list(l *ast.List, depth int, quoted bool) {
	k := l.Start
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		marker := "•"
		if l.IsOrdered() {
			marker = strconv.Itoa(k) + "."
			k++
		}
		for b := it.FirstChild(); b != nil; b = b.NextSibling() {
			switch b := b.(type) {
			case *ast.Paragraph, *ast.TextBlock:
				c.out = append(c.out, mdBlock{Kind: mdItem, Level: depth, Marker: marker, Spans: c.inlines(b)})
				marker = ""
				continue
			}
			if marker != "" { // an item that starts with a list or code: its marker on a line of its own
				c.out = append(c.out, mdBlock{Kind: mdItem, Level: depth, Marker: marker})
				marker = ""
			}
			if l, ok := b.(*ast.List); ok {
				c.list(l, depth+1, quoted)
			} else {
				c.block(b, depth, quoted)
			}
		}
		if marker != "" { // an empty item ("- " while streaming)
			c.out = append(c.out, mdBlock{Kind: mdItem, Level: depth, Marker: marker})
		}
	}
}

// table converts a GitHub table: every row as many cells as the header
// (a short row is filled with empty cells, as GitHub draws it).
func (c *mdConv) table(t *east.Table) mdBlock {
	blk := mdBlock{Kind: mdTable}
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells [][]mdSpan
		for cell := r.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, c.inlines(cell))
			if _, head := r.(*east.TableHeader); head {
				blk.Align = append(blk.Align, alignName(cell.(*east.TableCell).Alignment))
			}
		}
		if _, head := r.(*east.TableHeader); head {
			blk.Header = cells
			continue
		}
		for len(cells) < len(blk.Header) {
			cells = append(cells, nil)
		}
		blk.Rows = append(blk.Rows, cells[:len(blk.Header)])
	}
	return blk
}

func alignName(a east.Alignment) string {
	if a == east.AlignNone {
		return ""
	}
	return a.String()
}

// lines is a leaf block's text, without the last newline.
func (c *mdConv) lines(b ast.Node) string {
	var sb strings.Builder
	ls := b.Lines()
	for i := 0; i < ls.Len(); i++ {
		seg := ls.At(i)
		sb.Write(seg.Value(c.src))
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// inlines are n's inline children as spans, adjacent spans of one style
// merged.
func (c *mdConv) inlines(n ast.Node) []mdSpan {
	var out []mdSpan
	c.inline(n, mdSpan{}, &out)
	return out
}

func (c *mdConv) inline(n ast.Node, style mdSpan, out *[]mdSpan) {
	for x := n.FirstChild(); x != nil; x = x.NextSibling() {
		switch x := x.(type) {
		case *ast.Text:
			s := string(x.Value(c.src))
			if !x.IsRaw() {
				s = unescape(s)
			}
			switch {
			case x.HardLineBreak():
				s += "\n"
			case x.SoftLineBreak():
				s += " "
			}
			emit(out, style, s)
		case *ast.String:
			emit(out, style, string(x.Value))
		case *ast.CodeSpan:
			st := style
			st.Code = true
			emit(out, st, c.rawText(x))
		case *ast.Emphasis:
			st := style
			if x.Level >= 2 {
				st.Bold = true
			} else {
				st.Italic = true
			}
			c.inline(x, st, out)
		case *east.Strikethrough:
			st := style
			st.Strike = true
			c.inline(x, st, out)
		case *ast.Link:
			st := style
			st.URL = string(x.Destination)
			c.inline(x, st, out)
		case *ast.AutoLink:
			st := style
			st.URL = string(x.URL(c.src))
			emit(out, st, string(x.Label(c.src)))
		case *ast.Image: // its alt text: the transcript draws no images
			c.inline(x, style, out)
		case *ast.RawHTML:
			emit(out, style, c.rawSegments(x.Segments))
		default:
			c.inline(x, style, out)
		}
	}
}

// rawText is a code span's text as written.
func (c *mdConv) rawText(n ast.Node) string {
	var sb strings.Builder
	for x := n.FirstChild(); x != nil; x = x.NextSibling() {
		switch x := x.(type) {
		case *ast.Text:
			sb.Write(x.Value(c.src))
		case *ast.String:
			sb.Write(x.Value)
		}
	}
	return sb.String()
}

func (c *mdConv) rawSegments(ss *text.Segments) string {
	var sb strings.Builder
	for i := 0; i < ss.Len(); i++ {
		seg := ss.At(i)
		sb.Write(seg.Value(c.src))
	}
	return sb.String()
}

// unescape resolves backslash escapes and entities ("\*", "&amp;") as an
// HTML renderer would.
func unescape(s string) string {
	if !strings.ContainsAny(s, "\\&") {
		return s
	}
	b := util.UnescapePunctuations([]byte(s))
	b = util.ResolveNumericReferences(b)
	return string(util.ResolveEntityNames(b))
}

// emit appends s in style, to the last span when it has the same style.
func emit(out *[]mdSpan, style mdSpan, s string) {
	if s == "" {
		return
	}
	if n := len(*out); n > 0 {
		last := &(*out)[n-1]
		t := *last
		t.Text = style.Text
		if t == style {
			last.Text += s
			return
		}
	}
	style.Text = s
	*out = append(*out, style)
}

// mdText is the text of spans, unstyled.
func mdText(spans []mdSpan) string {
	var sb strings.Builder
	for _, s := range spans {
		sb.WriteString(s.Text)
	}
	return sb.String()
}
