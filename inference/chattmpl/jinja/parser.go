package jinja

import (
	"fmt"
)

// ---- AST ----

type node interface{}

type (
	textNode   struct{ s string }
	outputNode struct {
		e    expr
		line int
	}
	ifNode struct {
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		targets []string // one name, or several to unpack
		iter    expr
		cond    expr
		body    []node
		els     []node
		line    int
	}
	setNode struct {
		targets []string // one name or several to unpack
		nsAttr  string   // for {% set ns.attr = ... %}: targets[0] is ns
		e       expr
		line    int
	}
	setBlockNode struct {
		name    string
		filters []*filterExpr // applied to the body, innermost first
		body    []node
		line    int
	}
	macroNode struct {
		name     string
		params   []string
		defaults []expr // aligned with params; nil where none
		body     []node
	}
	filterBlockNode struct {
		filters []*filterExpr
		body    []node
		line    int
	}
	withNode struct {
		names []string
		vals  []expr
		body  []node
	}
	breakNode    struct{ line int }
	continueNode struct{ line int }
	doNode       struct {
		e    expr
		line int
	}
)

type expr interface{}

type (
	constExpr struct{ v any }
	nameExpr  struct {
		name string
		line int
	}
	attrExpr struct {
		obj  expr
		name string
		line int
	}
	itemExpr struct {
		obj, key expr
		line     int
	}
	sliceExpr struct {
		obj, lo, hi, step expr
		line              int
	}
	callExpr struct {
		fn     expr
		args   []expr
		kwName []string
		kwVal  []expr
		line   int
	}
	filterExpr struct {
		obj    expr // nil inside a filter block / set block chain
		name   string
		args   []expr
		kwName []string
		kwVal  []expr
		line   int
	}
	testExpr struct {
		obj    expr
		name   string
		args   []expr
		negate bool
		line   int
	}
	binExpr struct {
		op   string
		l, r expr
		line int
	}
	unaryExpr struct {
		op   string
		x    expr
		line int
	}
	compareExpr struct {
		first expr
		ops   []string
		rest  []expr
		line  int
	}
	andExpr  struct{ l, r expr }
	orExpr   struct{ l, r expr }
	notExpr  struct{ x expr }
	condExpr struct {
		cond, then, els expr
	}
	listExpr struct {
		items   []expr
		isTuple bool
	}
	dictExpr struct {
		keys, vals []expr
	}
)

// ---- parser ----

type parser struct {
	toks  []token
	pos   int
	depth int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tkEOF {
		p.pos++
	}
	return t
}

func (p *parser) errf(t token, format string, a ...any) error {
	return &SyntaxError{Line: t.line, Msg: fmt.Sprintf(format, a...)}
}

func (p *parser) isOp(v string) bool {
	t := p.peek()
	return t.kind == tkOp && t.val == v
}
func (p *parser) isName(v string) bool {
	t := p.peek()
	return t.kind == tkName && t.val == v
}

func (p *parser) expectOp(v string) error {
	t := p.next()
	if t.kind != tkOp || t.val != v {
		return p.errf(t, "expected '%s', got %s", v, t)
	}
	return nil
}

func (p *parser) expectName() (string, error) {
	t := p.next()
	if t.kind != tkName {
		return "", p.errf(t, "expected a name, got %s", t)
	}
	return t.val, nil
}

func (p *parser) expectBlockEnd() error {
	t := p.next()
	if t.kind != tkBlockEnd {
		return p.errf(t, "expected end of statement block, got %s", t)
	}
	return nil
}

func parse(toks []token) ([]node, error) {
	p := &parser{toks: toks}
	body, end, err := p.parseBody(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errf(p.peek(), "unexpected '%s'", end)
	}
	return body, nil
}

// parseBody parses nodes until a block tag whose keyword is in ends (the
// keyword is consumed, the rest of the tag is not) or the end of input.
func (p *parser) parseBody(ends []string) ([]node, string, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNesting {
		return nil, "", p.errf(p.peek(), "blocks nested too deeply")
	}
	var out []node
	for {
		t := p.next()
		switch t.kind {
		case tkEOF:
			if len(ends) > 0 {
				return nil, "", p.errf(t, "unexpected end of template, expected '%s'", ends[len(ends)-1])
			}
			return out, "", nil
		case tkText:
			out = append(out, &textNode{t.val})
		case tkVarBegin:
			e, err := p.parseExpr(true)
			if err != nil {
				return nil, "", err
			}
			if et := p.next(); et.kind != tkVarEnd {
				return nil, "", p.errf(et, "expected end of print statement, got %s", et)
			}
			out = append(out, &outputNode{e: e, line: t.line})
		case tkBlockBegin:
			kw := p.peek()
			if kw.kind != tkName {
				return nil, "", p.errf(kw, "expected a statement name, got %s", kw)
			}
			for _, e := range ends {
				if kw.val == e {
					p.next()
					return out, e, nil
				}
			}
			n, err := p.parseStatement()
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				out = append(out, n)
			}
		default:
			return nil, "", p.errf(t, "unexpected %s", t)
		}
	}
}

func (p *parser) parseStatement() (node, error) {
	kw := p.next()
	switch kw.val {
	case "if":
		return p.parseIf()
	case "for":
		return p.parseFor(kw.line)
	case "set":
		return p.parseSet(kw.line)
	case "macro":
		return p.parseMacro()
	case "filter":
		fs, err := p.parseFilterChain(kw.line)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.parseBody([]string{"endfilter"})
		if err != nil {
			return nil, err
		}
		return &filterBlockNode{filters: fs, body: body, line: kw.line}, p.expectBlockEnd()
	case "with":
		w := &withNode{}
		for !p.isBlockEnd() {
			if len(w.names) > 0 {
				if err := p.expectOp(","); err != nil {
					return nil, err
				}
			}
			n, err := p.expectName()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("="); err != nil {
				return nil, err
			}
			e, err := p.parseExpr(true)
			if err != nil {
				return nil, err
			}
			w.names, w.vals = append(w.names, n), append(w.vals, e)
		}
		p.next()
		body, _, err := p.parseBody([]string{"endwith"})
		if err != nil {
			return nil, err
		}
		w.body = body
		return w, p.expectBlockEnd()
	case "generation":
		// transformers' {% generation %} marks assistant text for masks; it
		// renders its body unchanged.
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.parseBody([]string{"endgeneration"})
		if err != nil {
			return nil, err
		}
		return &withNode{body: body}, p.expectBlockEnd()
	case "break":
		return &breakNode{kw.line}, p.expectBlockEnd()
	case "continue":
		return &continueNode{kw.line}, p.expectBlockEnd()
	case "do":
		e, err := p.parseExpr(true)
		if err != nil {
			return nil, err
		}
		return &doNode{e, kw.line}, p.expectBlockEnd()
	case "include", "import", "from", "extends", "block", "call":
		return nil, p.errf(kw, "'%s' is not supported in chat templates", kw.val)
	}
	return nil, p.errf(kw, "unknown tag '%s'", kw.val)
}

func (p *parser) isBlockEnd() bool { return p.peek().kind == tkBlockEnd }

func (p *parser) parseIf() (node, error) {
	n := &ifNode{}
	for {
		c, err := p.parseExpr(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.parseBody([]string{"elif", "else", "endif"})
		if err != nil {
			return nil, err
		}
		n.conds, n.bodies = append(n.conds, c), append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.expectBlockEnd(); err != nil {
				return nil, err
			}
			els, _, err := p.parseBody([]string{"endif"})
			if err != nil {
				return nil, err
			}
			n.els = els
		}
		return n, p.expectBlockEnd()
	}
}

func (p *parser) parseTargets() ([]string, error) {
	var names []string
	paren := p.isOp("(")
	if paren {
		p.next()
	}
	for {
		n, err := p.expectName()
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		if !p.isOp(",") {
			break
		}
		p.next()
		if paren && p.isOp(")") {
			break
		}
	}
	if paren {
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func (p *parser) parseFor(line int) (node, error) {
	targets, err := p.parseTargets()
	if err != nil {
		return nil, err
	}
	if t := p.next(); t.kind != tkName || t.val != "in" {
		return nil, p.errf(t, "expected 'in', got %s", t)
	}
	iter, err := p.parseTupleOrExpr(false)
	if err != nil {
		return nil, err
	}
	n := &forNode{targets: targets, iter: iter, line: line}
	if p.isName("if") {
		p.next()
		if n.cond, err = p.parseExpr(false); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.errf(p.peek(), "recursive loops are not supported")
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, end, err := p.parseBody([]string{"else", "endfor"})
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if n.els, _, err = p.parseBody([]string{"endfor"}); err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd()
}

func (p *parser) parseSet(line int) (node, error) {
	first, err := p.expectName()
	if err != nil {
		return nil, err
	}
	if p.isOp(".") {
		p.next()
		attr, err := p.expectName()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		e, err := p.parseTupleOrExpr(true)
		if err != nil {
			return nil, err
		}
		return &setNode{targets: []string{first}, nsAttr: attr, e: e, line: line}, p.expectBlockEnd()
	}
	targets := []string{first}
	for p.isOp(",") {
		p.next()
		n, err := p.expectName()
		if err != nil {
			return nil, err
		}
		targets = append(targets, n)
	}
	if p.isOp("=") {
		p.next()
		e, err := p.parseTupleOrExpr(true)
		if err != nil {
			return nil, err
		}
		return &setNode{targets: targets, e: e, line: line}, p.expectBlockEnd()
	}
	if len(targets) > 1 {
		return nil, p.errf(p.peek(), "expected '='")
	}
	// Block set: {% set name %}...{% endset %}, optionally with filters.
	var fs []*filterExpr
	if p.isOp("|") {
		if fs, err = p.parseFilterChain(line); err != nil {
			return nil, err
		}
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody([]string{"endset"})
	if err != nil {
		return nil, err
	}
	return &setBlockNode{name: first, filters: fs, body: body, line: line}, p.expectBlockEnd()
}

// parseFilterChain parses "name(args) | name ..." (the leading '|' optional).
func (p *parser) parseFilterChain(line int) ([]*filterExpr, error) {
	var fs []*filterExpr
	for {
		if p.isOp("|") {
			p.next()
		} else if len(fs) > 0 {
			return fs, nil
		}
		f, err := p.parseFilter(nil)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
}

func (p *parser) parseMacro() (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	m := &macroNode{name: name}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for !p.isOp(")") {
		if len(m.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		pn, err := p.expectName()
		if err != nil {
			return nil, err
		}
		var def expr
		if p.isOp("=") {
			p.next()
			if def, err = p.parseExpr(true); err != nil {
				return nil, err
			}
		} else if len(m.defaults) > 0 && m.defaults[len(m.defaults)-1] != nil {
			return nil, p.errf(p.peek(), "non-default argument follows default argument")
		}
		m.params, m.defaults = append(m.params, pn), append(m.defaults, def)
	}
	p.next()
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody([]string{"endmacro"})
	if err != nil {
		return nil, err
	}
	m.body = body
	if p.peek().kind == tkName {
		p.next() // {% endmacro name %}
	}
	return m, p.expectBlockEnd()
}

// ---- expressions ----

// parseTupleOrExpr parses an expression, or a tuple of them separated by
// commas (as in "for x in a, b" or "set t = 1, 2").
func (p *parser) parseTupleOrExpr(withCond bool) (expr, error) {
	e, err := p.parseExpr(withCond)
	if err != nil {
		return nil, err
	}
	if !p.isOp(",") {
		return e, nil
	}
	items := []expr{e}
	for p.isOp(",") {
		p.next()
		if p.peek().kind == tkBlockEnd || p.peek().kind == tkVarEnd {
			break
		}
		e, err := p.parseExpr(withCond)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return &listExpr{items: items, isTuple: true}, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting*2 {
		return p.errf(p.peek(), "expression nested too deeply")
	}
	return nil
}

func (p *parser) parseExpr(withCond bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if !withCond {
		return e, nil
	}
	for p.isName("if") {
		p.next()
		c, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var els expr
		if p.isName("else") {
			p.next()
			if els, err = p.parseExpr(true); err != nil {
				return nil, err
			}
		}
		e = &condExpr{cond: c, then: e, els: els}
	}
	return e, nil
}

func (p *parser) parseOr() (expr, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isName("or") {
		p.next()
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &orExpr{l, r}
	}
	return l, nil
}

func (p *parser) parseAnd() (expr, error) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.isName("and") {
		p.next()
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &andExpr{l, r}
	}
	return l, nil
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &notExpr{x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	line := p.peek().line
	first, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{first: first, line: line}
	for {
		t := p.peek()
		var op string
		switch {
		case t.kind == tkOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case t.kind == tkName && t.val == "in":
			op = "in"
			p.next()
		case t.kind == tkName && t.val == "not" && p.toks[p.pos+1].kind == tkName && p.toks[p.pos+1].val == "in":
			op = "not in"
			p.next()
			p.next()
		}
		if op == "" {
			break
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		c.ops, c.rest = append(c.ops, op), append(c.rest, r)
	}
	if len(c.ops) == 0 {
		return first, nil
	}
	return c, nil
}

func (p *parser) parseMath1() (expr, error) {
	l, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op: t.val, l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) parseConcat() (expr, error) {
	l, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	for p.isOp("~") {
		t := p.next()
		r, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op: "~", l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) parseMath2() (expr, error) {
	l, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		t := p.next()
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op: t.val, l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) parsePow() (expr, error) {
	l, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.isOp("**") {
		t := p.next()
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		l = &binExpr{op: "**", l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	var e expr
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		x, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		e = &unaryExpr{op: t.val, x: x, line: t.line}
	} else {
		prim, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if e, err = p.parsePostfix(prim); err != nil {
			return nil, err
		}
	}
	if withFilter {
		return p.parseFilterExpr(e)
	}
	return e, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tkName:
		switch t.val {
		case "true", "True":
			return &constExpr{true}, nil
		case "false", "False":
			return &constExpr{false}, nil
		case "none", "None":
			return &constExpr{nil}, nil
		}
		return &nameExpr{name: t.val, line: t.line}, nil
	case tkString:
		s := t.val
		for p.peek().kind == tkString {
			s += p.next().val
		}
		return &constExpr{s}, nil
	case tkInt, tkFloat:
		return &constExpr{t.num}, nil
	case tkOp:
		switch t.val {
		case "(":
			if p.isOp(")") {
				p.next()
				return &listExpr{isTuple: true}, nil
			}
			e, err := p.parseExpr(true)
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				items := []expr{e}
				for p.isOp(",") {
					p.next()
					if p.isOp(")") {
						break
					}
					x, err := p.parseExpr(true)
					if err != nil {
						return nil, err
					}
					items = append(items, x)
				}
				e = &listExpr{items: items, isTuple: true}
			}
			return e, p.expectOp(")")
		case "[":
			l := &listExpr{}
			for !p.isOp("]") {
				if len(l.items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("]") {
						break
					}
				}
				x, err := p.parseExpr(true)
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, x)
			}
			p.next()
			return l, nil
		case "{":
			d := &dictExpr{}
			for !p.isOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("}") {
						break
					}
				}
				k, err := p.parseExpr(true)
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.parseExpr(true)
				if err != nil {
					return nil, err
				}
				d.keys, d.vals = append(d.keys, k), append(d.vals, v)
			}
			p.next()
			return d, nil
		}
	}
	return nil, p.errf(t, "unexpected %s", t)
}

func (p *parser) parsePostfix(e expr) (expr, error) {
	for {
		t := p.peek()
		if t.kind != tkOp {
			return e, nil
		}
		switch t.val {
		case ".":
			p.next()
			n := p.next()
			switch n.kind {
			case tkName:
				e = &attrExpr{obj: e, name: n.val, line: n.line}
			case tkInt:
				e = &itemExpr{obj: e, key: &constExpr{n.num}, line: n.line}
			default:
				return nil, p.errf(n, "expected an attribute name, got %s", n)
			}
		case "[":
			p.next()
			var err error
			if e, err = p.parseSubscript(e, t.line); err != nil {
				return nil, err
			}
		case "(":
			p.next()
			c := &callExpr{fn: e, line: t.line}
			if err := p.parseCallArgs(&c.args, &c.kwName, &c.kwVal); err != nil {
				return nil, err
			}
			e = c
		default:
			return e, nil
		}
	}
}

func (p *parser) parseSubscript(obj expr, line int) (expr, error) {
	var parts [3]expr
	n := 0
	isSlice := false
	for {
		if p.isOp(":") {
			isSlice = true
			p.next()
			n++
			if n > 2 {
				return nil, p.errf(p.peek(), "too many ':' in subscript")
			}
			continue
		}
		if p.isOp("]") {
			p.next()
			break
		}
		if parts[n] != nil {
			return nil, p.errf(p.peek(), "expected ']', got %s", p.peek())
		}
		x, err := p.parseExpr(true)
		if err != nil {
			return nil, err
		}
		if n == 0 && p.isOp(",") {
			// Tuple subscripts have no meaning for our values.
			return nil, p.errf(p.peek(), "tuple subscripts are not supported")
		}
		parts[n] = x
	}
	if !isSlice {
		if parts[0] == nil {
			return nil, p.errf(p.peek(), "empty subscript")
		}
		return &itemExpr{obj: obj, key: parts[0], line: line}, nil
	}
	return &sliceExpr{obj: obj, lo: parts[0], hi: parts[1], step: parts[2], line: line}, nil
}

func (p *parser) parseCallArgs(args *[]expr, kwName *[]string, kwVal *[]expr) error {
	first := true
	for !p.isOp(")") {
		if !first {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.isOp(")") {
				break
			}
		}
		first = false
		if p.peek().kind == tkName && p.toks[p.pos+1].kind == tkOp && p.toks[p.pos+1].val == "=" {
			name := p.next().val
			p.next()
			v, err := p.parseExpr(true)
			if err != nil {
				return err
			}
			*kwName, *kwVal = append(*kwName, name), append(*kwVal, v)
			continue
		}
		if p.isOp("*") || p.isOp("**") {
			return p.errf(p.peek(), "argument unpacking is not supported")
		}
		if len(*kwName) > 0 {
			return p.errf(p.peek(), "positional argument follows keyword argument")
		}
		v, err := p.parseExpr(true)
		if err != nil {
			return err
		}
		*args = append(*args, v)
	}
	p.next()
	return nil
}

func (p *parser) parseFilter(obj expr) (*filterExpr, error) {
	t := p.peek()
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	for p.isOp(".") {
		p.next()
		n, err := p.expectName()
		if err != nil {
			return nil, err
		}
		name += "." + n
	}
	f := &filterExpr{obj: obj, name: name, line: t.line}
	if p.isOp("(") {
		p.next()
		if err := p.parseCallArgs(&f.args, &f.kwName, &f.kwVal); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) parseFilterExpr(e expr) (expr, error) {
	for {
		switch {
		case p.isOp("|"):
			p.next()
			f, err := p.parseFilter(e)
			if err != nil {
				return nil, err
			}
			e = f
		case p.isName("is"):
			t := p.next()
			te := &testExpr{obj: e, line: t.line}
			if p.isName("not") {
				p.next()
				te.negate = true
			}
			name, err := p.expectName()
			if err != nil {
				return nil, err
			}
			te.name = name
			nt := p.peek()
			switch {
			case nt.kind == tkOp && nt.val == "(":
				p.next()
				var kn []string
				var kv []expr
				if err := p.parseCallArgs(&te.args, &kn, &kv); err != nil {
					return nil, err
				}
				if len(kn) > 0 {
					return nil, p.errf(nt, "tests take no keyword arguments")
				}
			case (nt.kind == tkName || nt.kind == tkString || nt.kind == tkInt || nt.kind == tkFloat ||
				nt.kind == tkOp && (nt.val == "[" || nt.val == "{")) &&
				!(nt.kind == tkName && (nt.val == "else" || nt.val == "or" || nt.val == "and" || nt.val == "if")):
				if nt.kind == tkName && nt.val == "is" {
					return nil, p.errf(nt, "you cannot chain multiple tests with is")
				}
				arg, err := p.parsePrimary()
				if err != nil {
					return nil, err
				}
				if arg, err = p.parsePostfix(arg); err != nil {
					return nil, err
				}
				te.args = []expr{arg}
			}
			e = te
		case p.isOp("("):
			t := p.next()
			c := &callExpr{fn: e, line: t.line}
			if err := p.parseCallArgs(&c.args, &c.kwName, &c.kwVal); err != nil {
				return nil, err
			}
			e = c
		default:
			return e, nil
		}
	}
}
