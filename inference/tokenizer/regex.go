package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A small backtracking regular-expression engine for the Split patterns of
// tokenizer.json files. Hugging Face compiles those with Oniguruma, whose
// Perl-like features (lookahead, possessive quantifiers, Unicode property
// classes) Go's regexp lacks. Supported: alternation, groups (?:) (?i:) (?i)
// (?=) (?!) (?>) and capturing groups (treated as plain groups), classes
// with ranges, negation and escapes, \p{..} \P{..} (general categories,
// scripts), \s \S \d \D \w \W \h \H, \b \B, . ^ $ \A \z \Z, and the
// quantifiers * + ? {n} {n,} {n,m} in greedy, lazy (?) and possessive (+)
// forms. Semantics are leftmost-first, as in Oniguruma.

type reKind uint8

const (
	reEmpty reKind = iota
	reChar
	reClass
	reAny // any rune but \n
	reConcat
	reAlt
	reRepeat
	reLookahead
	reAtomic
	reLineStart
	reLineEnd
	reTextStart
	reTextEnd
	reTextEndNL // \Z
	reWordB
	reNotWordB
)

type reNode struct {
	kind       reKind
	r          rune
	fold       bool
	cls        *charClass
	subs       []*reNode
	min, max   int // max < 0: unbounded
	lazy       bool
	possessive bool
	neg        bool
}

type classItem struct {
	lo, hi rune
	table  *unicode.RangeTable // when non-nil, a property
	pred   func(rune) bool     // when non-nil, a predicate
	neg    bool                // negated property / predicate
}

type charClass struct {
	items []classItem
	neg   bool
	fold  bool
}

func (c *charClass) matchOne(r rune) bool {
	for i := range c.items {
		it := &c.items[i]
		var in bool
		switch {
		case it.table != nil:
			in = unicode.Is(it.table, r) != it.neg
		case it.pred != nil:
			in = it.pred(r) != it.neg
		default:
			in = r >= it.lo && r <= it.hi
		}
		if in {
			return true
		}
	}
	return false
}

func (c *charClass) match(r rune) bool {
	in := c.matchOne(r)
	if !in && c.fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if c.matchOne(f) {
				in = true
				break
			}
		}
	}
	return in != c.neg
}

// Regexp is a compiled pattern.
type Regexp struct {
	src  string
	root *reNode
}

type reParser struct {
	src  string
	pos  int
	fold bool
}

func (p *reParser) errorf(format string, a ...any) error {
	return fmt.Errorf("regex %q: at offset %d: %s", p.src, p.pos, fmt.Sprintf(format, a...))
}

// compileRegex parses pattern.
func compileRegex(pattern string) (*Regexp, error) {
	p := &reParser{src: pattern}
	n, err := p.parseAlt()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errorf("unexpected %q", p.src[p.pos])
	}
	return &Regexp{src: pattern, root: n}, nil
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

func (p *reParser) next() rune {
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

func (p *reParser) parseAlt() (*reNode, error) {
	saved := p.fold
	defer func() { p.fold = saved }()
	var alts []*reNode
	for {
		c, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if p.more() && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reNode{kind: reAlt, subs: alts}, nil
}

func (p *reParser) parseConcat() (*reNode, error) {
	var items []*reNode
	for p.more() {
		c := p.src[p.pos]
		if c == '|' || c == ')' {
			break
		}
		atom, err := p.parseAtom()
		if err != nil {
			return nil, err
		}
		if atom == nil { // a flag group like (?i)
			continue
		}
		atom, err = p.parseQuant(atom)
		if err != nil {
			return nil, err
		}
		items = append(items, atom)
	}
	switch len(items) {
	case 0:
		return &reNode{kind: reEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &reNode{kind: reConcat, subs: items}, nil
}

func (p *reParser) parseQuant(atom *reNode) (*reNode, error) {
	for p.more() {
		min, max := -1, -1
		start := p.pos
		switch p.src[p.pos] {
		case '*':
			min, max = 0, -1
			p.pos++
		case '+':
			min, max = 1, -1
			p.pos++
		case '?':
			min, max = 0, 1
			p.pos++
		case '{':
			lo, hi, ok := p.parseBraces()
			if !ok {
				return atom, nil // a literal '{', as Oniguruma reads it
			}
			min, max = lo, hi
		default:
			return atom, nil
		}
		switch atom.kind {
		case reLineStart, reLineEnd, reTextStart, reTextEnd, reTextEndNL, reWordB, reNotWordB, reLookahead:
			p.pos = start
			return nil, p.errorf("quantifier after an assertion")
		}
		n := &reNode{kind: reRepeat, subs: []*reNode{atom}, min: min, max: max}
		if p.more() {
			switch p.src[p.pos] {
			case '?':
				n.lazy = true
				p.pos++
			case '+':
				if p.src[start] != '{' {
					n.possessive = true
					p.pos++
				}
			}
		}
		atom = n
	}
	return atom, nil
}

func (p *reParser) parseBraces() (int, int, bool) {
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, false
	}
	body := p.src[p.pos+1 : p.pos+end]
	lo, hi := body, body
	if i := strings.IndexByte(body, ','); i >= 0 {
		lo, hi = body[:i], body[i+1:]
	}
	a, err := strconv.Atoi(lo)
	if err != nil || a < 0 {
		return 0, 0, false
	}
	b := a
	if hi != lo {
		if hi == "" {
			b = -1
		} else if b, err = strconv.Atoi(hi); err != nil || b < a {
			return 0, 0, false
		}
	}
	if a > 1000 || b > 1000 {
		return 0, 0, false
	}
	p.pos += end + 1
	return a, b, true
}

func (p *reParser) parseAtom() (*reNode, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		return p.parseGroup()
	case '[':
		cls, err := p.parseClass()
		if err != nil {
			return nil, err
		}
		return &reNode{kind: reClass, cls: cls}, nil
	case '.':
		p.pos++
		return &reNode{kind: reAny}, nil
	case '^':
		p.pos++
		return &reNode{kind: reLineStart}, nil
	case '$':
		p.pos++
		return &reNode{kind: reLineEnd}, nil
	case '\\':
		return p.parseEscape()
	case '*', '+', '?':
		return nil, p.errorf("nothing to repeat")
	}
	r := p.next()
	return &reNode{kind: reChar, r: r, fold: p.fold}, nil
}

func (p *reParser) parseGroup() (*reNode, error) {
	p.pos++ // (
	kind := reConcat
	neg := false
	if strings.HasPrefix(p.src[p.pos:], "?") {
		p.pos++
		if !p.more() {
			return nil, p.errorf("unterminated group")
		}
		switch p.src[p.pos] {
		case ':':
			p.pos++
		case '=':
			p.pos++
			kind = reLookahead
		case '!':
			p.pos++
			kind, neg = reLookahead, true
		case '>':
			p.pos++
			kind = reAtomic
		case '<', 'P':
			if strings.HasPrefix(p.src[p.pos:], "<=") || strings.HasPrefix(p.src[p.pos:], "<!") {
				return nil, p.errorf("lookbehind is not supported")
			}
			if p.src[p.pos] == 'P' {
				p.pos++
			}
			if !strings.HasPrefix(p.src[p.pos:], "<") {
				return nil, p.errorf("unsupported group syntax")
			}
			end := strings.IndexByte(p.src[p.pos:], '>')
			if end < 0 {
				return nil, p.errorf("unterminated group name")
			}
			p.pos += end + 1
		default:
			// Flags: (?i) (?-i) (?i:...) and friends; only i matters here.
			on := true
			fold := p.fold
			for p.more() {
				f := p.src[p.pos]
				switch f {
				case 'i':
					fold = on
				case 'm', 's', 'x':
					if f == 'x' && on {
						return nil, p.errorf("extended mode (?x) is not supported")
					}
				case '-':
					on = false
				case ')':
					p.pos++
					p.fold = fold // for the rest of the enclosing group
					return nil, nil
				case ':':
					p.pos++
					saved := p.fold
					p.fold = fold
					n, err := p.parseAlt()
					p.fold = saved
					if err != nil {
						return nil, err
					}
					if !p.more() || p.src[p.pos] != ')' {
						return nil, p.errorf("missing ')'")
					}
					p.pos++
					return n, nil
				default:
					return nil, p.errorf("unsupported group flag %q", f)
				}
				p.pos++
			}
			return nil, p.errorf("unterminated group")
		}
	}
	n, err := p.parseAlt()
	if err != nil {
		return nil, err
	}
	if !p.more() || p.src[p.pos] != ')' {
		return nil, p.errorf("missing ')'")
	}
	p.pos++
	switch kind {
	case reLookahead, reAtomic:
		return &reNode{kind: kind, subs: []*reNode{n}, neg: neg}, nil
	}
	return n, nil
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) ||
		unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Pc, r)
}

func isHexRune(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}

// escapeItem parses an escape that stands for a set of runes or one rune
// (after the backslash). It returns either an item or a rune.
func (p *reParser) escapeItem() (classItem, rune, bool, error) {
	if !p.more() {
		return classItem{}, 0, false, p.errorf("trailing backslash")
	}
	c := p.next()
	switch c {
	case 'd', 'D':
		return classItem{table: unicode.Nd, neg: c == 'D'}, 0, true, nil
	case 's', 'S':
		return classItem{pred: unicode.IsSpace, neg: c == 'S'}, 0, true, nil
	case 'w', 'W':
		return classItem{pred: isWordRune, neg: c == 'W'}, 0, true, nil
	case 'h', 'H':
		return classItem{pred: isHexRune, neg: c == 'H'}, 0, true, nil
	case 'p', 'P':
		neg := c == 'P'
		var name string
		if p.more() && p.src[p.pos] == '{' {
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return classItem{}, 0, false, p.errorf("unterminated \\p{")
			}
			name = p.src[p.pos+1 : p.pos+end]
			p.pos += end + 1
		} else if p.more() {
			name = string(p.next())
		}
		if strings.HasPrefix(name, "^") {
			name, neg = name[1:], !neg
		}
		t, pred := unicodeTable(name)
		if t == nil && pred == nil {
			return classItem{}, 0, false, p.errorf("unknown Unicode property %q", name)
		}
		return classItem{table: t, pred: pred, neg: neg}, 0, true, nil
	case 'n':
		return classItem{}, '\n', false, nil
	case 'r':
		return classItem{}, '\r', false, nil
	case 't':
		return classItem{}, '\t', false, nil
	case 'f':
		return classItem{}, '\f', false, nil
	case 'v':
		return classItem{}, '\v', false, nil
	case 'a':
		return classItem{}, '\a', false, nil
	case 'e':
		return classItem{}, 0x1b, false, nil
	case '0':
		return classItem{}, 0, false, nil
	case 'x':
		if p.more() && p.src[p.pos] == '{' {
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return classItem{}, 0, false, p.errorf("unterminated \\x{")
			}
			v, err := strconv.ParseUint(p.src[p.pos+1:p.pos+end], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return classItem{}, 0, false, p.errorf("bad \\x{...}")
			}
			p.pos += end + 1
			return classItem{}, rune(v), false, nil
		}
		if p.pos+2 > len(p.src) {
			return classItem{}, 0, false, p.errorf("bad \\x escape")
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+2], 16, 8)
		if err != nil {
			return classItem{}, 0, false, p.errorf("bad \\x escape")
		}
		p.pos += 2
		return classItem{}, rune(v), false, nil
	case 'u':
		if p.pos+4 > len(p.src) {
			return classItem{}, 0, false, p.errorf("bad \\u escape")
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32)
		if err != nil {
			return classItem{}, 0, false, p.errorf("bad \\u escape")
		}
		p.pos += 4
		return classItem{}, rune(v), false, nil
	}
	if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '1' && c <= '9') {
		return classItem{}, 0, false, p.errorf("unsupported escape \\%c", c)
	}
	return classItem{}, c, false, nil
}

func (p *reParser) parseEscape() (*reNode, error) {
	p.pos++ // backslash
	if p.more() {
		switch p.src[p.pos] {
		case 'A':
			p.pos++
			return &reNode{kind: reTextStart}, nil
		case 'z':
			p.pos++
			return &reNode{kind: reTextEnd}, nil
		case 'Z':
			p.pos++
			return &reNode{kind: reTextEndNL}, nil
		case 'b':
			p.pos++
			return &reNode{kind: reWordB}, nil
		case 'B':
			p.pos++
			return &reNode{kind: reNotWordB}, nil
		}
	}
	it, r, isSet, err := p.escapeItem()
	if err != nil {
		return nil, err
	}
	if isSet {
		return &reNode{kind: reClass, cls: &charClass{items: []classItem{it}, fold: p.fold}}, nil
	}
	return &reNode{kind: reChar, r: r, fold: p.fold}, nil
}

func (p *reParser) parseClass() (*charClass, error) {
	start := p.pos
	p.pos++ // [
	cls := &charClass{fold: p.fold}
	if p.more() && p.src[p.pos] == '^' {
		cls.neg = true
		p.pos++
	}
	first := true
	for {
		if !p.more() {
			p.pos = start
			return nil, p.errorf("unterminated character class")
		}
		c := p.src[p.pos]
		if c == ']' && !first {
			p.pos++
			return cls, nil
		}
		first = false
		if c == '[' {
			return nil, p.errorf("nested character classes are not supported")
		}
		if strings.HasPrefix(p.src[p.pos:], "&&") {
			return nil, p.errorf("class intersection is not supported")
		}
		var lo rune
		if c == '\\' {
			p.pos++
			it, r, isSet, err := p.escapeItem()
			if err != nil {
				return nil, err
			}
			if isSet {
				cls.items = append(cls.items, it)
				continue
			}
			lo = r
		} else {
			lo = p.next()
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if p.src[p.pos] == '\\' {
				p.pos++
				_, r, isSet, err := p.escapeItem()
				if err != nil {
					return nil, err
				}
				if isSet {
					return nil, p.errorf("bad class range")
				}
				hi = r
			} else {
				hi = p.next()
			}
			if hi < lo {
				return nil, p.errorf("bad class range %q-%q", lo, hi)
			}
		}
		cls.items = append(cls.items, classItem{lo: lo, hi: hi})
	}
}

var propAliases = map[string]string{
	"Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
	"Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M",
	"Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N",
	"Decimal_Number": "Nd", "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P",
	"Symbol": "S", "Separator": "Z", "Other": "C", "Control": "Cc", "Format": "Cf",
	"Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps",
	"Close_Punctuation": "Pe", "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf",
	"Other_Punctuation": "Po", "Math_Symbol": "Sm", "Currency_Symbol": "Sc",
	"Modifier_Symbol": "Sk", "Other_Symbol": "So", "Space_Separator": "Zs",
	"Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Private_Use": "Co",
	"Surrogate": "Cs", "Unassigned": "Cn",
}

func unicodeTable(name string) (*unicode.RangeTable, func(rune) bool) {
	if a, ok := propAliases[name]; ok {
		name = a
	}
	if t, ok := unicode.Categories[name]; ok {
		return t, nil
	}
	if t, ok := unicode.Scripts[name]; ok {
		return t, nil
	}
	if t, ok := unicode.Properties[name]; ok {
		return t, nil
	}
	switch strings.ToLower(name) {
	case "alpha", "alphabetic":
		return nil, isAlphabetic
	case "any":
		return nil, func(rune) bool { return true }
	}
	return nil, nil
}

func isAlphabetic(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r)
}

// ---- matching

type reMatcher struct {
	s     string
	steps int
	depth int
}

// maxDepth bounds the recursion of one match attempt (a group repeated
// over a long text recurses once per repetition): past it the attempt
// fails instead of exhausting the stack.
const maxDepth = 20000

// maxSteps bounds the work of one match attempt against catastrophic
// backtracking; past it the attempt fails (a split then falls back to
// single runes) rather than hanging.
const maxSteps = 1 << 22

func (m *reMatcher) runeAt(i int) (rune, int) {
	if i >= len(m.s) {
		return -1, 0
	}
	c := m.s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(m.s[i:])
}

func (m *reMatcher) runeBefore(i int) rune {
	if i <= 0 {
		return -1
	}
	r, _ := utf8.DecodeLastRuneInString(m.s[:i])
	return r
}

func foldEq(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// single reports whether n matches exactly one rune, and if so whether
// r matches.
func single(n *reNode, r rune) (isSingle, ok bool) {
	switch n.kind {
	case reChar:
		if r < 0 {
			return true, false
		}
		if n.fold {
			return true, foldEq(n.r, r)
		}
		return true, n.r == r
	case reClass:
		return true, r >= 0 && n.cls.match(r)
	case reAny:
		return true, r >= 0 && r != '\n'
	}
	return false, false
}

func (m *reMatcher) match(n *reNode, i int, k func(int) bool) bool {
	m.steps++
	if m.steps > maxSteps || m.depth > maxDepth {
		return false
	}
	m.depth++
	ok := m.matchNode(n, i, k)
	m.depth--
	return ok
}

func (m *reMatcher) matchNode(n *reNode, i int, k func(int) bool) bool {
	switch n.kind {
	case reEmpty:
		return k(i)
	case reChar, reClass, reAny:
		r, w := m.runeAt(i)
		if _, ok := single(n, r); ok {
			return k(i + w)
		}
		return false
	case reConcat:
		return m.matchSeq(n.subs, i, k)
	case reAlt:
		for _, a := range n.subs {
			if m.match(a, i, k) {
				return true
			}
		}
		return false
	case reRepeat:
		return m.matchRepeat(n, i, k)
	case reLookahead:
		ok := m.match(n.subs[0], i, func(int) bool { return true })
		if ok != n.neg {
			return k(i)
		}
		return false
	case reAtomic:
		end := -1
		if m.match(n.subs[0], i, func(j int) bool { end = j; return true }) {
			return k(end)
		}
		return false
	case reLineStart:
		if i == 0 || m.s[i-1] == '\n' {
			return k(i)
		}
		return false
	case reLineEnd:
		if i == len(m.s) || m.s[i] == '\n' {
			return k(i)
		}
		return false
	case reTextStart:
		if i == 0 {
			return k(i)
		}
		return false
	case reTextEnd:
		if i == len(m.s) {
			return k(i)
		}
		return false
	case reTextEndNL:
		if i == len(m.s) || (i == len(m.s)-1 && m.s[i] == '\n') {
			return k(i)
		}
		return false
	case reWordB, reNotWordB:
		r1, _ := m.runeAt(i)
		b := (r1 >= 0 && isWordRune(r1)) != (i > 0 && isWordRune(m.runeBefore(i)))
		if b == (n.kind == reWordB) {
			return k(i)
		}
		return false
	}
	return false
}

func (m *reMatcher) matchSeq(subs []*reNode, i int, k func(int) bool) bool {
	if len(subs) == 0 {
		return k(i)
	}
	if len(subs) == 1 {
		return m.match(subs[0], i, k)
	}
	// Runs of single-rune nodes need no continuation closures.
	if isSingleKind(subs[0]) {
		r, w := m.runeAt(i)
		if _, ok := single(subs[0], r); !ok {
			return false
		}
		return m.matchSeq(subs[1:], i+w, k)
	}
	return m.match(subs[0], i, func(j int) bool { return m.matchSeq(subs[1:], j, k) })
}

func isSingleKind(n *reNode) bool {
	return n.kind == reChar || n.kind == reClass || n.kind == reAny
}

func (m *reMatcher) matchRepeat(n *reNode, i int, k func(int) bool) bool {
	sub := n.subs[0]
	if isSingleKind(sub) {
		// Collect the end of each possible count, then try them.
		ends := []int{i}
		j := i
		for n.max < 0 || len(ends)-1 < n.max {
			r, w := m.runeAt(j)
			if _, ok := single(sub, r); !ok {
				break
			}
			j += w
			ends = append(ends, j)
		}
		if len(ends)-1 < n.min {
			return false
		}
		if n.possessive {
			return k(ends[len(ends)-1])
		}
		if n.lazy {
			for c := n.min; c < len(ends); c++ {
				if k(ends[c]) {
					return true
				}
			}
			return false
		}
		for c := len(ends) - 1; c >= n.min; c-- {
			m.steps++
			if m.steps > maxSteps {
				return false
			}
			if k(ends[c]) {
				return true
			}
		}
		return false
	}
	if n.possessive {
		end := -1
		inner := &reNode{kind: reRepeat, subs: n.subs, min: n.min, max: n.max}
		if m.matchRepeat(inner, i, func(j int) bool { end = j; return true }) {
			return k(end)
		}
		return false
	}
	var rep func(i, count int) bool
	rep = func(i, count int) bool {
		tryMore := func() bool {
			if n.max >= 0 && count >= n.max {
				return false
			}
			return m.match(sub, i, func(j int) bool {
				if j == i && count >= n.min {
					return false // an empty iteration cannot help
				}
				return rep(j, count+1)
			})
		}
		if n.lazy {
			if count >= n.min && k(i) {
				return true
			}
			return tryMore()
		}
		if tryMore() {
			return true
		}
		return count >= n.min && k(i)
	}
	return rep(i, 0)
}

// matchAt returns the end of the leftmost-first match starting at i.
func (re *Regexp) matchAt(s string, i int) (int, bool) {
	m := reMatcher{s: s}
	end := -1
	if m.match(re.root, i, func(j int) bool { end = j; return true }) {
		return end, true
	}
	return 0, false
}

// findAll calls fn for each successive non-overlapping match in s.
func (re *Regexp) findAll(s string, fn func(start, end int)) {
	i := 0
	for i <= len(s) {
		found := false
		for j := i; j <= len(s); {
			if e, ok := re.matchAt(s, j); ok {
				fn(j, e)
				if e == j { // empty match: step over one rune
					if j >= len(s) {
						return
					}
					_, w := utf8.DecodeRuneInString(s[j:])
					i = j + w
				} else {
					i = e
				}
				found = true
				break
			}
			if j >= len(s) {
				break
			}
			_, w := utf8.DecodeRuneInString(s[j:])
			j += w
		}
		if !found {
			return
		}
	}
}
