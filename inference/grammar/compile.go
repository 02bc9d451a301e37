package grammar

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Grammar is a compiled grammar: rules of alternatives of elements, each a
// set of bytes or a reference to a rule. It is immutable and safe for
// concurrent use; a Matcher follows one generation through it.
type Grammar struct {
	elems []elem    // every alternative's elements, each followed by an end
	rules [][]int32 // each rule's alternatives' first positions
	root  int32
	names []string // rule names, generated ones included (for errors)
}

type elemKind uint8

const (
	eEnd  elemKind = iota // the end of an alternative
	eByte                 // one byte of set
	eRef                  // rule ref
)

type elem struct {
	kind elemKind
	ref  int32
	set  byteSet
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// Parse compiles a GBNF grammar text whose start rule is root.
func Parse(src string) (*Grammar, error) {
	rules, err := parseGBNF(src)
	if err != nil {
		return nil, err
	}
	return compile(rules, "root")
}

// compiler builds the flat form: each source rule keeps its index, groups,
// repetitions and character classes become generated rules after them.
type compiler struct {
	g     *Grammar
	index map[string]int32
	alts  [][][]elem // per rule, its alternatives (flattened at the end)
	class map[string]int32
	cur   string // the source rule being compiled, to name generated ones
	size  int    // elements made so far, bounded by maxElems
}

// maxElems bounds a compiled grammar: {m,n} copies what it repeats, so a
// short text could otherwise ask for billions of elements.
const maxElems = 1 << 20

func compile(rules []rule, start string) (*Grammar, error) {
	c := &compiler{g: &Grammar{}, index: map[string]int32{}, class: map[string]int32{}}
	for _, r := range rules {
		if _, dup := c.index[r.name]; dup {
			return nil, &SyntaxError{Line: r.line, Col: 1, Msg: fmt.Sprintf("rule %q is defined twice", r.name)}
		}
		c.newRule(r.name)
	}
	root, ok := c.index[start]
	if !ok {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: fmt.Sprintf("the grammar has no %q rule", start)}
	}
	for _, r := range rules {
		c.cur = r.name
		alts, err := c.alternatives(r.body)
		if err != nil {
			return nil, err
		}
		c.alts[c.index[r.name]] = alts
		if c.size > maxElems {
			return nil, fmt.Errorf("grammar: more than %d elements once repetitions are expanded", maxElems)
		}
	}
	g := c.g
	g.root = root
	g.rules = make([][]int32, len(c.alts))
	for i, alts := range c.alts {
		for _, a := range alts {
			g.rules[i] = append(g.rules[i], int32(len(g.elems)))
			g.elems = append(append(g.elems, a...), elem{kind: eEnd})
		}
	}
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}

func (c *compiler) newRule(name string) int32 {
	i := int32(len(c.alts))
	c.alts = append(c.alts, nil)
	c.g.names = append(c.g.names, name)
	c.index[name] = i
	return i
}

// generated adds a rule made of alts and returns a reference to it.
func (c *compiler) generated(alts [][]elem) elem {
	i := int32(len(c.alts))
	c.alts = append(c.alts, alts)
	c.g.names = append(c.g.names, fmt.Sprintf("%s-%d", c.cur, i))
	return elem{kind: eRef, ref: i}
}

func (c *compiler) alternatives(n *node) ([][]elem, error) {
	if n.kind != nAlt {
		seq, err := c.sequence(n, nil)
		return [][]elem{seq}, err
	}
	var out [][]elem
	for _, k := range n.kids {
		seq, err := c.sequence(k, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, seq)
	}
	return out, nil
}

// sequence appends n's elements to seq.
func (c *compiler) sequence(n *node, seq []elem) ([]elem, error) {
	switch n.kind {
	case nSeq:
		for _, k := range n.kids {
			var err error
			if seq, err = c.sequence(k, seq); err != nil {
				return nil, err
			}
		}
		return seq, nil
	case nLit:
		for i := 0; i < len(n.lit); i++ {
			var s byteSet
			s.add(n.lit[i], n.lit[i])
			seq = append(seq, elem{kind: eByte, set: s})
		}
		return seq, nil
	case nRef:
		i, ok := c.index[n.name]
		if !ok {
			return nil, &SyntaxError{Line: n.line, Col: n.col, Msg: fmt.Sprintf("undefined rule %q", n.name)}
		}
		return append(seq, elem{kind: eRef, ref: i}), nil
	case nClass:
		return append(seq, c.charClass(n)), nil
	case nAlt:
		alts, err := c.alternatives(n)
		if err != nil {
			return nil, err
		}
		return append(seq, c.generated(alts)), nil
	case nRep:
		return c.repeat(n, seq)
	}
	return nil, fmt.Errorf("grammar: unknown node kind %d", n.kind)
}

// repeat expands kid{min,max}: min copies, then for an unbounded max a
// right-recursive rule r ::= kid r | (empty), else max-min nested optional
// copies r_k ::= kid r_(k-1) | (empty). Right recursion keeps the stack
// flat: the reference is the last element, so it pushes nothing.
func (c *compiler) repeat(n *node, seq []elem) ([]elem, error) {
	kid := n.kids[0]
	one, err := c.sequence(kid, nil)
	if err != nil {
		return nil, err
	}
	if c.size += len(one) * max(n.min, n.max); c.size > maxElems {
		return nil, fmt.Errorf("grammar: more than %d elements once repetitions are expanded", maxElems)
	}
	for i := 0; i < n.min; i++ {
		seq = append(seq, one...)
	}
	switch {
	case n.max < 0:
		i := int32(len(c.alts))
		ref := c.generated(nil)
		c.alts[i] = [][]elem{append(slices.Clone(one), ref), {}}
		seq = append(seq, ref)
	case n.max > n.min:
		var tail []elem // the optional copies, innermost first
		for k := 0; k < n.max-n.min; k++ {
			alt := append(slices.Clone(one), tail...)
			tail = []elem{c.generated([][]elem{alt, {}})}
		}
		seq = append(seq, tail...)
	}
	return seq, nil
}

// charClass compiles a class of code points to a rule of UTF-8 byte
// sequences (one alternative per sequence, the one-byte ones merged), or
// to one byte element when all are ASCII. Identical classes share a rule.
func (c *compiler) charClass(n *node) elem {
	ranges := normalize(n.ranges)
	if n.negated {
		ranges = complement(ranges)
	}
	key := fmt.Sprint(ranges)
	if i, ok := c.class[key]; ok {
		return elem{kind: eRef, ref: i}
	}
	var ascii byteSet
	var multi [][]elem
	for _, r := range ranges {
		for _, sq := range utf8Sequences(r.lo, r.hi) {
			if len(sq) == 1 {
				ascii.add(sq[0].lo, sq[0].hi)
				continue
			}
			var alt []elem
			for _, br := range sq {
				var s byteSet
				s.add(br.lo, br.hi)
				alt = append(alt, elem{kind: eByte, set: s})
			}
			multi = append(multi, alt)
		}
	}
	if len(multi) == 0 {
		return elem{kind: eByte, set: ascii}
	}
	alts := multi
	if ascii != (byteSet{}) {
		alts = append([][]elem{{{kind: eByte, set: ascii}}}, multi...)
	}
	e := c.generated(alts)
	c.class[key] = e.ref
	return e
}

// normalize sorts and merges ranges and drops the surrogates, which UTF-8
// cannot encode.
func normalize(in []rng) []rng {
	rs := slices.Clone(in)
	slices.SortFunc(rs, func(a, b rng) int { return int(a.lo - b.lo) })
	var out []rng
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	var res []rng
	for _, r := range out {
		if r.lo < 0xD800 && r.hi > 0xDFFF {
			res = append(res, rng{r.lo, 0xD7FF}, rng{0xE000, r.hi})
			continue
		}
		if r.lo >= 0xD800 && r.hi <= 0xDFFF {
			continue
		}
		if r.lo >= 0xD800 && r.lo <= 0xDFFF {
			r.lo = 0xE000
		}
		if r.hi >= 0xD800 && r.hi <= 0xDFFF {
			r.hi = 0xD7FF
		}
		res = append(res, r)
	}
	return res
}

// complement is every scalar value not in rs (sorted, merged).
func complement(rs []rng) []rng {
	var out []rng
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, rng{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rng{next, utf8.MaxRune})
	}
	return normalize(out)
}

type byteRange struct{ lo, hi byte }

// utf8Sequences splits the code points lo..hi (no surrogates) into runs
// whose UTF-8 encodings are the same length and vary independently in each
// byte, so that each run is a sequence of byte ranges.
func utf8Sequences(lo, hi rune) [][]byteRange {
	// Different lengths: split at the lengths' boundaries.
	for _, edge := range []rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= edge && hi > edge {
			return append(utf8Sequences(lo, edge), utf8Sequences(edge+1, hi)...)
		}
	}
	n := utf8.RuneLen(lo)
	if n == 1 {
		return [][]byteRange{{{byte(lo), byte(hi)}}}
	}
	// Continuation bytes carry 6 bits each: lo..hi must cover whole blocks
	// of the lower bits, else split off the partial blocks at either end.
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				return append(utf8Sequences(lo, lo|m), utf8Sequences((lo|m)+1, hi)...)
			}
			if hi&m != m {
				return append(utf8Sequences(lo, (hi&^m)-1), utf8Sequences(hi&^m, hi)...)
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	sq := make([]byteRange, n)
	for i := range sq {
		sq[i] = byteRange{a[i], b[i]}
	}
	return [][]byteRange{sq}
}

// checkLeftRecursion refuses a rule that can reach itself without
// consuming a byte (left recursion, or a repetition of something that can
// be empty): following it would never end.
func (g *Grammar) checkLeftRecursion() error {
	nullable := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for r, alts := range g.rules {
			if nullable[r] {
				continue
			}
			for _, a := range alts {
				if g.nullableFrom(a, nullable) {
					nullable[r], changed = true, true
					break
				}
			}
		}
	}
	// Edges: r -> s where s is referenced after only nullable elements.
	state := make([]uint8, len(g.rules)) // 0 new, 1 on the path, 2 done
	var visit func(r int32) error
	visit = func(r int32) error {
		state[r] = 1
		for _, a := range g.rules[r] {
			for p := a; g.elems[p].kind == eRef; p++ {
				s := g.elems[p].ref
				if state[s] == 1 {
					return fmt.Errorf("grammar: rule %q can reach itself without consuming input (left recursion, or a repetition of something that may be empty)", g.names[s])
				}
				if state[s] == 0 {
					if err := visit(s); err != nil {
						return err
					}
				}
				if !nullable[s] {
					break
				}
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.rules {
		if state[r] == 0 {
			if err := visit(int32(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *Grammar) nullableFrom(p int32, nullable []bool) bool {
	for ; ; p++ {
		switch e := g.elems[p]; e.kind {
		case eEnd:
			return true
		case eByte:
			return false
		case eRef:
			if !nullable[e.ref] {
				return false
			}
		}
	}
}

// Match reports whether text is a whole sentence of g, and whether it is
// at least the beginning of one.
func (g *Grammar) Match(text []byte) (whole, prefix bool) {
	m := newMachine(g)
	s := m.start()
	for _, c := range text {
		if s = m.step(s, c); s < 0 {
			return false, false
		}
	}
	return m.states[s].accept, true
}
