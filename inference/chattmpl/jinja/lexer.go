package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind int

const (
	tkText tokKind = iota
	tkVarBegin
	tkVarEnd
	tkBlockBegin
	tkBlockEnd
	tkName
	tkString
	tkInt
	tkFloat
	tkOp
	tkEOF
)

type token struct {
	kind tokKind
	val  string // text, name, operator, or decoded string literal
	num  any    // int64 or float64 for number tokens
	line int
}

func (t token) String() string {
	switch t.kind {
	case tkText:
		return "template data"
	case tkVarBegin:
		return "'{{'"
	case tkVarEnd:
		return "end of print statement"
	case tkBlockBegin:
		return "'{%'"
	case tkBlockEnd:
		return "end of statement block"
	case tkString:
		return "string " + strRepr(t.val)
	case tkEOF:
		return "end of template"
	}
	return "'" + t.val + "'"
}

// SyntaxError is a template that does not parse.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template syntax error, line %d: %s", e.Line, e.Msg)
}

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x1f, 0x85:
		return true
	}
	return r > 0x7f && unicode.IsSpace(r)
}

func rstripSpace(s string) string { return strings.TrimRightFunc(s, pyIsSpace) }

func allSpace(s string) bool {
	for _, r := range s {
		if !pyIsSpace(r) {
			return false
		}
	}
	return true
}

// lexer turns template source into tokens, applying Jinja's whitespace
// control as transformers configures it: trim_blocks (drop the newline
// after a block or comment tag), lstrip_blocks (drop the whitespace before
// a block or comment tag that starts a line), '-' markers that strip all
// whitespace on their side, and '+' markers that turn the two options off
// for one tag.
type lexer struct {
	src          string
	pos          int
	line         int
	toks         []token
	lineStarting bool
}

func lex(src string) ([]token, error) {
	// Jinja normalises newlines and drops one trailing newline
	// (keep_trailing_newline is off).
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")
	lx := &lexer{src: src, line: 1, lineStarting: true}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tkEOF, line: lx.line})
	return lx.toks, nil
}

func (lx *lexer) errf(format string, a ...any) error {
	return &SyntaxError{Line: lx.line, Msg: fmt.Sprintf(format, a...)}
}

func (lx *lexer) emitText(s string) {
	if s != "" {
		lx.toks = append(lx.toks, token{kind: tkText, val: s, line: lx.line})
	}
	lx.line += strings.Count(s, "\n")
}

// advance moves pos to p, counting lines.
func (lx *lexer) advance(p int) {
	lx.line += strings.Count(lx.src[lx.pos:p], "\n")
	lx.pos = p
}

func nextTagStart(s string, from int) int {
	for i := from; i+1 < len(s); i++ {
		if s[i] == '{' && (s[i+1] == '{' || s[i+1] == '%' || s[i+1] == '#') {
			return i
		}
	}
	return -1
}

// afterTagEnd handles what follows a closing delimiter: strip all
// whitespace after a '-' marker, or one newline under trim_blocks.
func (lx *lexer) afterTagEnd(p int, sign byte, trim bool) {
	start := p
	if sign == '-' {
		for p < len(lx.src) {
			r, n := utf8.DecodeRuneInString(lx.src[p:])
			if !pyIsSpace(r) {
				break
			}
			p += n
		}
	} else if trim && sign != '+' && p < len(lx.src) && lx.src[p] == '\n' {
		p++
	}
	lx.lineStarting = p > start && lx.src[p-1] == '\n'
	lx.line += strings.Count(lx.src[start:p], "\n")
	lx.pos = p
}

func (lx *lexer) run() error {
	for lx.pos < len(lx.src) {
		i := nextTagStart(lx.src, lx.pos)
		if i < 0 {
			lx.emitText(lx.src[lx.pos:])
			lx.pos = len(lx.src)
			return nil
		}
		text := lx.src[lx.pos:i]
		kind := lx.src[i+1]
		var sign byte
		if i+2 < len(lx.src) && (lx.src[i+2] == '-' || lx.src[i+2] == '+') {
			sign = lx.src[i+2]
		}
		if sign == '-' {
			text = rstripSpace(text)
		} else if sign != '+' && kind != '{' {
			lpos := strings.LastIndexByte(text, '\n') + 1
			if (lpos > 0 || lx.lineStarting) && lpos < len(text) && allSpace(text[lpos:]) {
				text = text[:lpos]
			}
		}
		lineBefore := lx.line
		lx.emitText(text)
		lx.line = lineBefore + strings.Count(lx.src[lx.pos:i], "\n")
		lx.pos = i + 2
		if sign != 0 {
			lx.pos++
		}
		lx.lineStarting = false
		switch kind {
		case '#':
			j := strings.Index(lx.src[lx.pos:], "#}")
			if j < 0 {
				return lx.errf("missing end of comment tag")
			}
			end := lx.pos + j
			var esign byte
			if j > 0 && (lx.src[end-1] == '-' || lx.src[end-1] == '+') {
				esign = lx.src[end-1]
			}
			lx.advance(end)
			lx.afterTagEnd(end+2, esign, true)
		case '%':
			if ok, err := lx.tryRaw(); err != nil {
				return err
			} else if ok {
				continue
			}
			lx.toks = append(lx.toks, token{kind: tkBlockBegin, line: lx.line})
			if err := lx.lexExpr('%'); err != nil {
				return err
			}
		case '{':
			lx.toks = append(lx.toks, token{kind: tkVarBegin, line: lx.line})
			if err := lx.lexExpr('}'); err != nil {
				return err
			}
		}
	}
	return nil
}

// tryRaw handles {% raw %}...{% endraw %}, whose body is plain text.
func (lx *lexer) tryRaw() (bool, error) {
	p := lx.pos
	for p < len(lx.src) && pyIsSpace(rune(lx.src[p])) {
		p++
	}
	if !strings.HasPrefix(lx.src[p:], "raw") {
		return false, nil
	}
	p += 3
	for p < len(lx.src) && pyIsSpace(rune(lx.src[p])) {
		p++
	}
	var sign byte
	if p < len(lx.src) && lx.src[p] == '-' {
		sign = lx.src[p]
		p++
	}
	// Jinja takes no '+' before the closing %} of raw and endraw.
	if !strings.HasPrefix(lx.src[p:], "%}") {
		return false, nil
	}
	p += 2
	lx.advance(p - 2)
	lx.afterTagEnd(p, sign, true)
	// Find {%[-+]? endraw [-+]?%}.
	q := lx.pos
	for {
		k := strings.Index(lx.src[q:], "{%")
		if k < 0 {
			return false, lx.errf("missing end of raw directive")
		}
		start := q + k
		r := start + 2
		var bsign byte
		if r < len(lx.src) && (lx.src[r] == '-' || lx.src[r] == '+') {
			bsign = lx.src[r]
			r++
		}
		for r < len(lx.src) && pyIsSpace(rune(lx.src[r])) {
			r++
		}
		if !strings.HasPrefix(lx.src[r:], "endraw") {
			q = start + 2
			continue
		}
		r += 6
		for r < len(lx.src) && pyIsSpace(rune(lx.src[r])) {
			r++
		}
		var esign byte
		if r < len(lx.src) && lx.src[r] == '-' {
			esign = lx.src[r]
			r++
		}
		if !strings.HasPrefix(lx.src[r:], "%}") {
			q = start + 2
			continue
		}
		body := lx.src[lx.pos:start]
		if bsign == '-' {
			body = rstripSpace(body)
		}
		lx.emitText(body)
		lx.line = lx.line - strings.Count(body, "\n") + strings.Count(lx.src[lx.pos:start], "\n")
		lx.pos = start
		lx.advance(r)
		lx.afterTagEnd(r+2, esign, true)
		return true, nil
	}
}

const maxNesting = 200

// lexExpr lexes the inside of a {{ }} (end '}') or {% %} (end '%') tag.
func (lx *lexer) lexExpr(end byte) error {
	depth := 0
	var stack []byte
	for {
		// Skip whitespace.
		for lx.pos < len(lx.src) {
			c := lx.src[lx.pos]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
				if c == '\n' {
					lx.line++
				}
				lx.pos++
				continue
			}
			break
		}
		if lx.pos >= len(lx.src) {
			if end == '}' {
				return lx.errf("unexpected end of template, expected end of print statement")
			}
			return lx.errf("unexpected end of template, expected end of statement block")
		}
		s := lx.src[lx.pos:]
		if depth == 0 {
			for _, sign := range []string{"-", "+", ""} {
				closing := sign + string(end) + "}"
				if sign == "+" && end == '}' {
					continue
				}
				if strings.HasPrefix(s, closing) {
					kind := tkBlockEnd
					if end == '}' {
						kind = tkVarEnd
					}
					lx.toks = append(lx.toks, token{kind: kind, line: lx.line})
					var sg byte
					if sign != "" {
						sg = sign[0]
					}
					lx.afterTagEnd(lx.pos+len(closing), sg, end == '%')
					return nil
				}
			}
		}
		c := s[0]
		switch {
		case c == '_' || c < 0x80 && unicode.IsLetter(rune(c)):
			n := 1
			for n < len(s) && (s[n] == '_' || s[n] < 0x80 && (unicode.IsLetter(rune(s[n])) || unicode.IsDigit(rune(s[n])))) {
				n++
			}
			lx.toks = append(lx.toks, token{kind: tkName, val: s[:n], line: lx.line})
			lx.pos += n
		case c >= '0' && c <= '9':
			if err := lx.lexNumber(); err != nil {
				return err
			}
		case c == '\'' || c == '"':
			if err := lx.lexString(c); err != nil {
				return err
			}
		default:
			op := ""
			for _, cand := range []string{"//", "**", "==", "!=", "<=", ">="} {
				if strings.HasPrefix(s, cand) {
					op = cand
					break
				}
			}
			if op == "" {
				if strings.IndexByte("+-*/%~<>=()[]{},.:|", c) < 0 {
					r, _ := utf8.DecodeRuneInString(s)
					return lx.errf("unexpected char %s", strRepr(string(r)))
				}
				op = string(c)
			}
			switch op {
			case "(", "[", "{":
				depth++
				if depth > maxNesting {
					return lx.errf("expression nested too deeply")
				}
				stack = append(stack, map[string]byte{"(": ')', "[": ']', "{": '}'}[op])
			case ")", "]", "}":
				if depth == 0 || stack[len(stack)-1] != op[0] {
					return lx.errf("unexpected '%s'", op)
				}
				depth--
				stack = stack[:len(stack)-1]
			}
			lx.toks = append(lx.toks, token{kind: tkOp, val: op, line: lx.line})
			lx.pos += len(op)
		}
	}
}

func (lx *lexer) lexNumber() error {
	s := lx.src[lx.pos:]
	n := 0
	digits := func() {
		for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '_' && n+1 < len(s) && s[n+1] >= '0' && s[n+1] <= '9') {
			n++
		}
	}
	digits()
	isFloat := false
	if n+1 < len(s) && s[n] == '.' && s[n+1] >= '0' && s[n+1] <= '9' {
		isFloat = true
		n++
		digits()
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if m < len(s) && s[m] >= '0' && s[m] <= '9' {
			isFloat = true
			n = m
			digits()
		}
	}
	text := strings.ReplaceAll(s[:n], "_", "")
	tok := token{kind: tkInt, val: s[:n], line: lx.line}
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return lx.errf("bad number %q", s[:n])
		}
		tok.kind, tok.num = tkFloat, f
	} else {
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return lx.errf("integer %q out of range", s[:n])
		}
		tok.num = i
	}
	lx.toks = append(lx.toks, tok)
	lx.pos += n
	return nil
}

// lexString reads a quoted literal, decoding Python's backslash escapes.
func (lx *lexer) lexString(q byte) error {
	s := lx.src[lx.pos:]
	var b strings.Builder
	i := 1
	for {
		if i >= len(s) {
			return lx.errf("unterminated string")
		}
		c := s[i]
		if c == q {
			i++
			break
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return lx.errf("unterminated string")
		}
		e := s[i+1]
		i += 2
		switch e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return lx.errf("truncated \\%c escape in string", e)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return lx.errf("bad \\%c escape in string", e)
			}
			b.WriteRune(rune(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				v = v*8 + int(s[i]-'0')
				i++
			}
			b.WriteRune(rune(v))
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	raw := s[:i]
	lx.toks = append(lx.toks, token{kind: tkString, val: b.String(), line: lx.line})
	lx.line += strings.Count(raw, "\n")
	lx.pos += i
	return nil
}
