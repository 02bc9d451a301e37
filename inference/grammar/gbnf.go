// Package grammar constrains generation to a context-free grammar: the
// output so far is kept a prefix of a sentence of the grammar, and the set
// of vocabulary ids that keep it so (the mask) is computed before each
// token is sampled. Grammars are written in GBNF, llama.cpp's notation
// (rules "name ::= alternatives", "literals", [character classes], ( groups ),
// the repetitions * + ? {m} {m,} {m,n}, # comments; the start rule is root),
// and JSON Schemas are compiled to it (FromJSONSchema).
//
// The grammar runs on bytes, not characters: a character class is compiled
// to the UTF-8 byte sequences of its code points, so a byte-level BPE token
// that ends inside a character advances the state by the bytes it has, and
// the next token must finish the character. The state is a set of stacks of
// grammar positions (a pushdown automaton); stacks and states are interned,
// and each state's transitions by a byte and its mask are computed once and
// kept, so a state seen again (every character inside a string) costs a
// lookup. The mask walks the vocabulary's byte trie in one pass, skipping
// the subtree of every byte the state refuses.
//
// The package imports nothing of etchat's: a Vocab is built from any
// tokenizer with TokenBytes.
package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SyntaxError is a grammar text that does not parse, with the line and
// column of the problem.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// nodeKind is the type of one node of a parsed expression.
type nodeKind uint8

const (
	nLit   nodeKind = iota // bytes, in order
	nClass                 // one character from ranges (negated: any other)
	nRef                   // a rule by name
	nSeq                   // kids in order
	nAlt                   // one of kids
	nRep                   // kid repeated min..max times (max -1: unbounded)
)

type node struct {
	kind     nodeKind
	lit      string
	ranges   []rng
	negated  bool
	name     string
	kids     []*node
	min, max int
	line     int // where a reference is, for errors
	col      int
}

// rng is an inclusive range of code points.
type rng struct{ lo, hi rune }

type rule struct {
	name string
	body *node
	line int
}

type parser struct {
	src  string
	pos  int
	line int
	lpos int // offset where the current line starts
}

func (p *parser) errf(format string, a ...any) error {
	return &SyntaxError{Line: p.line, Col: p.pos - p.lpos + 1, Msg: fmt.Sprintf(format, a...)}
}

// space skips blanks and comments; newlines too when nested (inside
// parentheses, or after ::= and |, where an expression must go on).
func (p *parser) space(nested bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '\n' && nested:
			p.pos++
			p.line, p.lpos = p.line+1, p.pos
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *parser) name() string {
	s := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[s:p.pos]
}

// parseGBNF reads the rules of a grammar text.
func parseGBNF(src string) ([]rule, error) {
	if !utf8.ValidString(src) {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: "the grammar is not valid UTF-8"}
	}
	p := &parser{src: src, line: 1}
	var rules []rule
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			break
		}
		line := p.line
		n := p.name()
		if n == "" {
			return nil, p.errf("expected a rule name, found %q", p.peekText())
		}
		p.space(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return nil, p.errf("expected ::= after rule name %q", n)
		}
		p.pos += 3
		p.space(true)
		body, err := p.alternatives(false)
		if err != nil {
			return nil, err
		}
		rules = append(rules, rule{name: n, body: body, line: line})
		p.space(false)
		if p.pos < len(p.src) && p.src[p.pos] != '\n' {
			return nil, p.errf("unexpected %q", p.peekText())
		}
	}
	if len(rules) == 0 {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: "the grammar has no rules"}
	}
	return rules, nil
}

func (p *parser) peekText() string {
	e := min(p.pos+12, len(p.src))
	return p.src[p.pos:e]
}

func (p *parser) alternatives(nested bool) (*node, error) {
	var alts []*node
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		p.space(nested)
		if p.pos >= len(p.src) || p.src[p.pos] != '|' {
			break
		}
		p.pos++
		p.space(true)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &node{kind: nAlt, kids: alts}, nil
}

func (p *parser) sequence(nested bool) (*node, error) {
	seq := &node{kind: nSeq}
	for {
		p.space(nested)
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '|' || c == ')' || c == '\n' {
			break
		}
		item, err := p.item()
		if err != nil {
			return nil, err
		}
		if item, err = p.repetition(item); err != nil {
			return nil, err
		}
		seq.kids = append(seq.kids, item)
	}
	if len(seq.kids) == 1 {
		return seq.kids[0], nil
	}
	return seq, nil
}

func (p *parser) item() (*node, error) {
	c := p.src[p.pos]
	switch {
	case c == '"':
		p.pos++
		var b strings.Builder
		for {
			if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
				return nil, p.errf("unterminated literal")
			}
			if p.src[p.pos] == '"' {
				p.pos++
				break
			}
			r, err := p.char()
			if err != nil {
				return nil, err
			}
			b.WriteRune(r)
		}
		return &node{kind: nLit, lit: b.String()}, nil
	case c == '[':
		return p.class()
	case c == '.':
		p.pos++
		return &node{kind: nClass, negated: true}, nil // no excluded range: any character
	case c == '(':
		p.pos++
		p.space(true)
		inner, err := p.alternatives(true)
		if err != nil {
			return nil, err
		}
		p.space(true)
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, p.errf("expected )")
		}
		p.pos++
		return inner, nil
	case isNameByte(c):
		line, col := p.line, p.pos-p.lpos+1
		return &node{kind: nRef, name: p.name(), line: line, col: col}, nil
	}
	return nil, p.errf("unexpected %q", p.peekText())
}

func (p *parser) class() (*node, error) {
	p.pos++ // [
	n := &node{kind: nClass}
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		n.negated = true
		p.pos++
	}
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return n, nil
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errf("range %q-%q is reversed", lo, hi)
			}
		}
		n.ranges = append(n.ranges, rng{lo, hi})
	}
}

// char reads one character of a literal or class, escapes included.
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, w := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += w
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errf("escape at the end of the grammar")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/':
		return rune(c), nil
	case 'x', 'u', 'U':
		w := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+w > len(p.src) {
			return 0, p.errf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+w], 16, 32)
		if err != nil || v > utf8.MaxRune || v >= 0xD800 && v <= 0xDFFF {
			return 0, p.errf("bad \\%c escape %q", c, p.src[p.pos:p.pos+w])
		}
		p.pos += w
		return rune(v), nil
	}
	return 0, p.errf("unknown escape \\%c", c)
}

// maxRepeat bounds {m,n}: each repetition is a copy in the compiled grammar.
const maxRepeat = 10000

func (p *parser) repetition(item *node) (*node, error) {
	for p.pos < len(p.src) {
		lo, hi := 0, 0
		switch p.src[p.pos] {
		case '*':
			lo, hi = 0, -1
			p.pos++
		case '+':
			lo, hi = 1, -1
			p.pos++
		case '?':
			lo, hi = 0, 1
			p.pos++
		case '{':
			var err error
			if lo, hi, err = p.braces(); err != nil {
				return nil, err
			}
		default:
			return item, nil
		}
		item = &node{kind: nRep, kids: []*node{item}, min: lo, max: hi}
	}
	return item, nil
}

func (p *parser) braces() (lo, hi int, err error) {
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, p.errf("unterminated {")
	}
	body := strings.ReplaceAll(p.src[p.pos+1:p.pos+end], " ", "")
	a, b, comma := strings.Cut(body, ",")
	num := func(s string) (int, error) {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > maxRepeat {
			return 0, p.errf("bad repetition count %q (0 to %d)", s, maxRepeat)
		}
		return v, nil
	}
	if lo, err = num(a); err != nil {
		return 0, 0, err
	}
	switch {
	case !comma:
		hi = lo
	case b == "":
		hi = -1
	default:
		if hi, err = num(b); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, p.errf("repetition {%d,%d} is reversed", lo, hi)
		}
	}
	p.pos += end + 1
	return lo, hi, nil
}
