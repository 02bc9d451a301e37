package jinja

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Template is a parsed template, safe for concurrent Render calls.
type Template struct {
	body []node
}

// Parse parses template source with the options transformers uses for
// chat templates (trim_blocks and lstrip_blocks on, loop controls, the
// {% generation %} tag).
func Parse(src string) (*Template, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	body, err := parse(toks)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// Limits bound what one rendering may cost, so a hostile template cannot
// hang or exhaust memory. Zero fields take the defaults.
type Limits struct {
	// MaxSteps bounds evaluation steps (expressions, statements, loop
	// iterations). Default 2,000,000: a 4,000-message chat
	// through a Qwen-style template takes under 200,000.
	MaxSteps int
	// MaxOutput bounds the bytes of output and of any one string value.
	// Default 32 MiB.
	MaxOutput int
	// MaxDepth bounds nested macro calls. Default 100.
	MaxDepth int
}

// Options configure one rendering.
type Options struct {
	Limits
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
}

// RaisedError is raised by the template itself through
// raise_exception(msg); its Error() is exactly msg.
type RaisedError struct{ Msg string }

func (e *RaisedError) Error() string { return e.Msg }

// RenderError is a failure while rendering: a type error, an undefined
// value used in an operation, a call of an unknown filter...
type RenderError struct {
	Line int
	Msg  string
}

func (e *RenderError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("template error, line %d: %s", e.Line, e.Msg)
	}
	return "template error: " + e.Msg
}

// ErrLimit is wrapped by errors from exceeding Limits.
var ErrLimit = errors.New("template exceeded its budget")

type limitError struct{ what string }

func (e *limitError) Error() string { return fmt.Sprintf("%v: %s", ErrLimit, e.what) }
func (e *limitError) Unwrap() error { return ErrLimit }

type frame struct {
	vars   map[string]any
	parent *frame
}

func (f *frame) lookup(name string) (any, bool) {
	for ; f != nil; f = f.parent {
		if v, ok := f.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type renderer struct {
	out      *strings.Builder
	steps    int
	maxSteps int
	maxOut   int
	maxDepth int
	depth    int
	now      func() time.Time
	line     int
}

// control-flow signals
type loopSignal struct{ brk bool }

func (loopSignal) Error() string { return "'break' or 'continue' outside a loop" }

type macro struct {
	name     string
	params   []string
	defaults []expr
	body     []node
	closure  *frame
}

// Render renders the template with the given variables (converted with
// FromGo unless already engine values).
func (t *Template) Render(vars map[string]any, opts *Options) (string, error) {
	if opts == nil {
		opts = &Options{}
	}
	r := &renderer{out: &strings.Builder{}, maxSteps: opts.MaxSteps, maxOut: opts.MaxOutput, maxDepth: opts.MaxDepth, now: opts.Now}
	if r.maxSteps <= 0 {
		r.maxSteps = 2_000_000
	}
	if r.maxOut <= 0 {
		r.maxOut = 32 << 20
	}
	if r.maxDepth <= 0 {
		r.maxDepth = 100
	}
	if r.now == nil {
		r.now = time.Now
	}
	g := &frame{vars: map[string]any{}}
	for k, v := range vars {
		c, err := FromGo(v)
		if err != nil {
			return "", fmt.Errorf("variable %q: %w", k, err)
		}
		g.vars[k] = c
	}
	top := &frame{vars: map[string]any{}, parent: g}
	err := r.execBody(t.body, top)
	if err != nil {
		var ls loopSignal
		if errors.As(err, &ls) {
			return "", &RenderError{Msg: ls.Error()}
		}
		return "", err
	}
	return r.out.String(), nil
}

func (r *renderer) step() error {
	r.steps++
	if r.steps > r.maxSteps {
		return &limitError{fmt.Sprintf("more than %d evaluation steps", r.maxSteps)}
	}
	return nil
}

func (r *renderer) errf(format string, a ...any) error {
	return &RenderError{Line: r.line, Msg: fmt.Sprintf(format, a...)}
}

func (r *renderer) checkLen(n int) error {
	if n > r.maxOut {
		return &limitError{fmt.Sprintf("a string longer than %d bytes", r.maxOut)}
	}
	return nil
}

// maxItems bounds the length of any one list a template builds.
func (r *renderer) maxItems() int { return max(r.maxOut/16, 1024) }

func (r *renderer) checkItems(n int) error {
	if n > r.maxItems() {
		return &limitError{fmt.Sprintf("a list longer than %d items", r.maxItems())}
	}
	return nil
}

func (r *renderer) write(s string) error {
	if r.out.Len()+len(s) > r.maxOut {
		return &limitError{fmt.Sprintf("more than %d bytes of output", r.maxOut)}
	}
	r.out.WriteString(s)
	return nil
}

func (r *renderer) execBody(body []node, f *frame) error {
	for _, n := range body {
		if err := r.exec(n, f); err != nil {
			return err
		}
	}
	return nil
}

// capture renders body into a string instead of the output.
func (r *renderer) capture(body []node, f *frame) (string, error) {
	saved := r.out
	r.out = &strings.Builder{}
	err := r.execBody(body, f)
	s := r.out.String()
	r.out = saved
	if err == nil {
		err = r.checkLen(saved.Len() + len(s))
	}
	return s, err
}

// assign sets a variable in frame f; loop frames keep their assignments
// local, as Jinja scopes them.
func assign(f *frame, targets []string, v any, r *renderer) error {
	if len(targets) == 1 {
		f.vars[targets[0]] = v
		return nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return err
	}
	if len(items) != len(targets) {
		return r.errf("cannot unpack %d values into %d names", len(items), len(targets))
	}
	for i, t := range targets {
		f.vars[t] = items[i]
	}
	return nil
}

func (r *renderer) exec(n node, f *frame) error {
	if err := r.step(); err != nil {
		return err
	}
	switch n := n.(type) {
	case *textNode:
		return r.write(n.s)
	case *outputNode:
		r.line = n.line
		v, err := r.eval(n.e, f)
		if err != nil {
			return err
		}
		return r.write(toStr(v))
	case *ifNode:
		for i, c := range n.conds {
			v, err := r.eval(c, f)
			if err != nil {
				return err
			}
			if truthy(v) {
				return r.execBody(n.bodies[i], f)
			}
		}
		return r.execBody(n.els, f)
	case *forNode:
		return r.execFor(n, f)
	case *setNode:
		r.line = n.line
		v, err := r.eval(n.e, f)
		if err != nil {
			return err
		}
		if n.nsAttr != "" {
			obj, ok := f.lookup(n.targets[0])
			ns, isNS := obj.(*namespace)
			if !ok || !isNS {
				return r.errf("cannot assign attribute on non-namespace object")
			}
			ns.d.Set(n.nsAttr, v)
			return nil
		}
		return assign(f, n.targets, v, r)
	case *setBlockNode:
		s, err := r.capture(n.body, f)
		if err != nil {
			return err
		}
		var v any = s
		for _, fl := range n.filters {
			if v, err = r.applyFilter(fl, v, f); err != nil {
				return err
			}
		}
		f.vars[n.name] = v
		return nil
	case *filterBlockNode:
		s, err := r.capture(n.body, f)
		if err != nil {
			return err
		}
		var v any = s
		for _, fl := range n.filters {
			if v, err = r.applyFilter(fl, v, f); err != nil {
				return err
			}
		}
		return r.write(toStr(v))
	case *macroNode:
		f.vars[n.name] = &macro{name: n.name, params: n.params, defaults: n.defaults, body: n.body, closure: f}
		return nil
	case *withNode:
		inner := &frame{vars: map[string]any{}, parent: f}
		for i, name := range n.names {
			v, err := r.eval(n.vals[i], f)
			if err != nil {
				return err
			}
			inner.vars[name] = v
		}
		return r.execBody(n.body, inner)
	case *breakNode:
		return loopSignal{brk: true}
	case *continueNode:
		return loopSignal{brk: false}
	case *doNode:
		r.line = n.line
		_, err := r.eval(n.e, f)
		return err
	}
	return r.errf("unknown node %T", n)
}

// loopObj is the "loop" variable of a for loop.
type loopObj struct {
	index0 int
	items  []any
	depth0 int
	last   any // for changed()
	hasLst bool
}

func (r *renderer) execFor(n *forNode, f *frame) error {
	r.line = n.line
	it, err := r.eval(n.iter, f)
	if err != nil {
		return err
	}
	items, err := r.iterate(it)
	if err != nil {
		return err
	}
	if n.cond != nil {
		var kept []any
		for _, x := range items {
			if err := r.step(); err != nil {
				return err
			}
			tmp := &frame{vars: map[string]any{}, parent: f}
			if err := assign(tmp, n.targets, x, r); err != nil {
				return err
			}
			c, err := r.eval(n.cond, tmp)
			if err != nil {
				return err
			}
			if truthy(c) {
				kept = append(kept, x)
			}
		}
		items = kept
	}
	// depth counts recursive loop levels, which are not supported: every
	// loop is at depth 1.
	lo := &loopObj{items: items}
	for i, x := range items {
		if err := r.step(); err != nil {
			return err
		}
		lo.index0 = i
		inner := &frame{vars: map[string]any{"loop": lo}, parent: f}
		if err := assign(inner, n.targets, x, r); err != nil {
			return err
		}
		err := r.execBody(n.body, inner)
		var ls loopSignal
		if errors.As(err, &ls) {
			if ls.brk {
				break
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	if len(items) == 0 {
		return r.execBody(n.els, f)
	}
	return nil
}

func (lo *loopObj) attr(name string) (any, bool) {
	n := len(lo.items)
	i := lo.index0
	switch name {
	case "index":
		return int64(i + 1), true
	case "index0":
		return int64(i), true
	case "revindex":
		return int64(n - i), true
	case "revindex0":
		return int64(n - i - 1), true
	case "first":
		return i == 0, true
	case "last":
		return i == n-1, true
	case "length":
		return int64(n), true
	case "depth":
		return int64(lo.depth0 + 1), true
	case "depth0":
		return int64(lo.depth0), true
	case "previtem":
		if i == 0 {
			return Undefined{Name: "previtem", Hint: "there is no previous item"}, true
		}
		return lo.items[i-1], true
	case "nextitem":
		if i+1 >= n {
			return Undefined{Name: "nextitem", Hint: "there is no next item"}, true
		}
		return lo.items[i+1], true
	case "cycle", "changed":
		return &boundMethod{recv: lo, name: name}, true
	}
	return nil, false
}

// iterate lists the items a for loop (or list()) sees.
func (r *renderer) iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case tuple:
		return x, nil
	case *Dict:
		return x.Keys(), nil
	case string:
		out := make([]any, 0, len(x))
		for _, c := range x {
			out = append(out, string(c))
		}
		return out, nil
	case Undefined:
		return nil, nil
	case *namespace:
		return nil, r.errf("'Namespace' object is not iterable")
	}
	return nil, r.errf("'%s' object is not iterable", typeName(v))
}

// ---- expressions ----

func (r *renderer) eval(e expr, f *frame) (any, error) {
	if err := r.step(); err != nil {
		return nil, err
	}
	switch e := e.(type) {
	case *constExpr:
		return e.v, nil
	case *nameExpr:
		if v, ok := f.lookup(e.name); ok {
			return v, nil
		}
		if g, ok := globals[e.name]; ok {
			return g, nil
		}
		return Undefined{Name: e.name}, nil
	case *attrExpr:
		obj, err := r.eval(e.obj, f)
		if err != nil {
			return nil, err
		}
		r.line = e.line
		return r.getAttr(obj, e.name)
	case *itemExpr:
		obj, err := r.eval(e.obj, f)
		if err != nil {
			return nil, err
		}
		key, err := r.eval(e.key, f)
		if err != nil {
			return nil, err
		}
		r.line = e.line
		return r.getItem(obj, key)
	case *sliceExpr:
		return r.evalSlice(e, f)
	case *callExpr:
		return r.evalCall(e, f)
	case *filterExpr:
		obj, err := r.eval(e.obj, f)
		if err != nil {
			return nil, err
		}
		return r.applyFilter(e, obj, f)
	case *testExpr:
		obj, err := r.eval(e.obj, f)
		if err != nil {
			return nil, err
		}
		args := make([]any, len(e.args))
		for i, a := range e.args {
			if args[i], err = r.eval(a, f); err != nil {
				return nil, err
			}
		}
		r.line = e.line
		ok, err := r.applyTest(e.name, obj, args)
		if err != nil {
			return nil, err
		}
		return ok != e.negate, nil
	case *binExpr:
		l, err := r.eval(e.l, f)
		if err != nil {
			return nil, err
		}
		rv, err := r.eval(e.r, f)
		if err != nil {
			return nil, err
		}
		r.line = e.line
		return r.binop(e.op, l, rv)
	case *unaryExpr:
		x, err := r.eval(e.x, f)
		if err != nil {
			return nil, err
		}
		r.line = e.line
		switch v := x.(type) {
		case bool:
			x = boolInt(v)
		}
		switch v := x.(type) {
		case int64:
			if e.op == "-" {
				return -v, nil
			}
			return v, nil
		case float64:
			if e.op == "-" {
				return -v, nil
			}
			return v, nil
		case Undefined:
			return nil, r.errf("%s", v.message())
		}
		return nil, r.errf("bad operand type for unary %s: '%s'", e.op, typeName(x))
	case *compareExpr:
		l, err := r.eval(e.first, f)
		if err != nil {
			return nil, err
		}
		for i, op := range e.ops {
			rv, err := r.eval(e.rest[i], f)
			if err != nil {
				return nil, err
			}
			r.line = e.line
			ok, err := r.compare(op, l, rv)
			if err != nil {
				return nil, err
			}
			if !ok {
				return false, nil
			}
			l = rv
		}
		return true, nil
	case *andExpr:
		l, err := r.eval(e.l, f)
		if err != nil || !truthy(l) {
			return l, err
		}
		return r.eval(e.r, f)
	case *orExpr:
		l, err := r.eval(e.l, f)
		if err != nil || truthy(l) {
			return l, err
		}
		return r.eval(e.r, f)
	case *notExpr:
		x, err := r.eval(e.x, f)
		if err != nil {
			return nil, err
		}
		return !truthy(x), nil
	case *condExpr:
		c, err := r.eval(e.cond, f)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return r.eval(e.then, f)
		}
		if e.els == nil {
			return Undefined{Hint: "the inline if-expression evaluated to false and no else section was defined"}, nil
		}
		return r.eval(e.els, f)
	case *listExpr:
		out := make([]any, len(e.items))
		for i, it := range e.items {
			v, err := r.eval(it, f)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		if e.isTuple {
			return tuple(out), nil
		}
		return out, nil
	case *dictExpr:
		d := NewDict()
		for i := range e.keys {
			k, err := r.eval(e.keys[i], f)
			if err != nil {
				return nil, err
			}
			if !hashable(k) {
				return nil, r.errf("unhashable type: '%s'", typeName(k))
			}
			v, err := r.eval(e.vals[i], f)
			if err != nil {
				return nil, err
			}
			d.Set(k, v)
		}
		return d, nil
	}
	return nil, r.errf("unknown expression %T", e)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var stringMethods = map[string]bool{
	"strip": true, "lstrip": true, "rstrip": true, "startswith": true, "endswith": true,
	"split": true, "rsplit": true, "replace": true, "upper": true, "lower": true, "title": true,
	"capitalize": true, "find": true, "rfind": true, "index": true, "count": true, "join": true,
	"format": true, "splitlines": true, "isdigit": true, "isalpha": true, "isalnum": true,
	"isspace": true, "isupper": true, "islower": true, "swapcase": true, "casefold": true,
	"removeprefix": true, "removesuffix": true, "center": true, "ljust": true, "rjust": true,
	"zfill": true, "partition": true, "rpartition": true, "isnumeric": true, "isdecimal": true,
	"istitle": true, "expandtabs": true,
}

var dictMethods = map[string]bool{"items": true, "keys": true, "values": true, "get": true, "copy": true}
var listMethods = map[string]bool{"index": true, "count": true, "copy": true}

// getAttr is obj.name: a method or attribute first, then an item, as
// Jinja's sandboxed getattr does. Names starting with '_' are never
// exposed.
func (r *renderer) getAttr(obj any, name string) (any, error) {
	switch x := obj.(type) {
	case Undefined:
		return nil, r.errf("%s", x.message())
	case string:
		if stringMethods[name] {
			return &boundMethod{recv: x, name: name}, nil
		}
	case *Dict:
		if dictMethods[name] {
			return &boundMethod{recv: x, name: name}, nil
		}
		if v, ok := x.Get(name); ok {
			return v, nil
		}
		return Undefined{Name: name, Hint: fmt.Sprintf("'dict object' has no attribute '%s'", name)}, nil
	case tuple:
		if name == "index" || name == "count" {
			return &boundMethod{recv: []any(x), name: name}, nil
		}
	case []any:
		if listMethods[name] {
			return &boundMethod{recv: x, name: name}, nil
		}
		switch name {
		case "append", "extend", "pop", "insert", "remove", "clear", "sort", "reverse":
			return nil, r.errf("access to attribute '%s' of 'list' object is unsafe", name)
		}
	case *namespace:
		if v, ok := x.d.Get(name); ok {
			return v, nil
		}
	case *loopObj:
		if v, ok := x.attr(name); ok {
			return v, nil
		}
	}
	return Undefined{Name: name, Hint: fmt.Sprintf("'%s object' has no attribute '%s'", typeName(obj), name)}, nil
}

// getItem is obj[key]: an item first, then an attribute.
func (r *renderer) getItem(obj, key any) (any, error) {
	switch x := obj.(type) {
	case Undefined:
		return nil, r.errf("%s", x.message())
	case *Dict:
		if v, ok := x.Get(key); ok {
			return v, nil
		}
	case []any, tuple:
		items, _ := seq(x)
		if i, ok := asInt(key); ok {
			if i < 0 {
				i += int64(len(items))
			}
			if i >= 0 && i < int64(len(items)) {
				return items[i], nil
			}
			return Undefined{Hint: fmt.Sprintf("%s object has no element %d", typeName(obj), i)}, nil
		}
	case string:
		if i, ok := asInt(key); ok {
			rs := []rune(x)
			if i < 0 {
				i += int64(len(rs))
			}
			if i >= 0 && i < int64(len(rs)) {
				return string(rs[i]), nil
			}
			return Undefined{Hint: fmt.Sprintf("str object has no element %d", i)}, nil
		}
	}
	if s, ok := key.(string); ok {
		if _, isDict := obj.(*Dict); !isDict {
			return r.getAttr(obj, s)
		}
		return Undefined{Name: s, Hint: fmt.Sprintf("'dict object' has no attribute '%s'", s)}, nil
	}
	return Undefined{Hint: fmt.Sprintf("'%s object' has no element %s", typeName(obj), repr(key))}, nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		return boolInt(x), true
	}
	return 0, false
}

func (r *renderer) evalSlice(e *sliceExpr, f *frame) (any, error) {
	obj, err := r.eval(e.obj, f)
	if err != nil {
		return nil, err
	}
	var bounds [3]*int64
	for i, b := range []expr{e.lo, e.hi, e.step} {
		if b == nil {
			continue
		}
		v, err := r.eval(b, f)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		n, ok := asInt(v)
		if !ok {
			return nil, r.errf("slice indices must be integers or None")
		}
		bounds[i] = &n
	}
	r.line = e.line
	var items []any
	var runes []rune
	isStr := false
	_, isTuple := obj.(tuple)
	switch x := obj.(type) {
	case []any:
		items = x
	case tuple:
		items = x
	case string:
		runes = []rune(x)
		isStr = true
	case Undefined:
		return nil, r.errf("%s", x.message())
	default:
		return nil, r.errf("'%s' object is not subscriptable", typeName(obj))
	}
	n := int64(len(items))
	if isStr {
		n = int64(len(runes))
	}
	idx, err := sliceIndices(n, bounds)
	if err != nil {
		return nil, r.errf("%v", err)
	}
	if isStr {
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return string(out), nil
	}
	out := make([]any, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	if isTuple {
		return tuple(out), nil
	}
	return out, nil
}

// sliceIndices is Python's slice.indices followed by range.
func sliceIndices(n int64, b [3]*int64) ([]int64, error) {
	step := int64(1)
	if b[2] != nil {
		step = *b[2]
	}
	if step == 0 {
		return nil, errors.New("slice step cannot be zero")
	}
	clamp := func(p *int64, def int64, lo, hi int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
			if v < lo {
				v = lo
			}
		} else if v > hi {
			v = hi
		}
		return v
	}
	var start, stop int64
	if step > 0 {
		start = clamp(b[0], 0, 0, n)
		stop = clamp(b[1], n, 0, n)
	} else {
		start = clamp(b[0], n-1, -1, n-1)
		stop = clamp(b[1], -1, -1, n-1)
	}
	var out []int64
	if step > 0 {
		for i := start; i < stop; i += step {
			out = append(out, i)
			if step > stop-i {
				break
			}
		}
	} else {
		for i := start; i > stop; i += step {
			out = append(out, i)
			if -step > i-stop {
				break
			}
		}
	}
	return out, nil
}

func (r *renderer) evalArgs(args []expr, kwn []string, kwv []expr, f *frame) ([]any, *Dict, error) {
	out := make([]any, len(args))
	for i, a := range args {
		v, err := r.eval(a, f)
		if err != nil {
			return nil, nil, err
		}
		out[i] = v
	}
	var kw *Dict
	if len(kwn) > 0 {
		kw = NewDict()
		for i, n := range kwn {
			v, err := r.eval(kwv[i], f)
			if err != nil {
				return nil, nil, err
			}
			kw.Set(n, v)
		}
	}
	return out, kw, nil
}

func (r *renderer) evalCall(e *callExpr, f *frame) (any, error) {
	fn, err := r.eval(e.fn, f)
	if err != nil {
		return nil, err
	}
	args, kw, err := r.evalArgs(e.args, e.kwName, e.kwVal, f)
	if err != nil {
		return nil, err
	}
	r.line = e.line
	return r.call(fn, args, kw)
}

func (r *renderer) call(fn any, args []any, kw *Dict) (any, error) {
	switch x := fn.(type) {
	case *function:
		return x.call(r, args, kw)
	case *boundMethod:
		return r.callMethod(x, args, kw)
	case *macro:
		return r.callMacro(x, args, kw)
	case Undefined:
		return nil, r.errf("%s", x.message())
	}
	return nil, r.errf("'%s' object is not callable", typeName(fn))
}

func (r *renderer) callMacro(m *macro, args []any, kw *Dict) (any, error) {
	if r.depth >= r.maxDepth {
		return nil, &limitError{fmt.Sprintf("macro calls nested more than %d deep", r.maxDepth)}
	}
	r.depth++
	defer func() { r.depth-- }()
	if len(args) > len(m.params) {
		return nil, r.errf("macro '%s' takes not more than %d argument(s)", m.name, len(m.params))
	}
	inner := &frame{vars: map[string]any{}, parent: m.closure}
	for i, p := range m.params {
		var v any
		set := false
		if i < len(args) {
			v, set = args[i], true
		}
		if kw != nil {
			if kv, ok := kw.Get(p); ok {
				if set {
					return nil, r.errf("macro '%s' got multiple values for argument '%s'", m.name, p)
				}
				v, set = kv, true
			}
		}
		if !set {
			if m.defaults[i] != nil {
				dv, err := r.eval(m.defaults[i], inner)
				if err != nil {
					return nil, err
				}
				v = dv
			} else {
				v = Undefined{Name: p}
			}
		}
		inner.vars[p] = v
	}
	if kw != nil {
		for _, k := range kw.keys {
			known := false
			for _, p := range m.params {
				if k == p {
					known = true
				}
			}
			if !known {
				return nil, r.errf("macro '%s' takes no keyword argument '%v'", m.name, k)
			}
		}
	}
	line := r.line
	s, err := r.capture(m.body, inner)
	r.line = line
	if err != nil {
		var ls loopSignal
		if errors.As(err, &ls) {
			return nil, r.errf("%s", ls.Error())
		}
		return nil, err
	}
	return s, nil
}

// ---- operators ----

func numeric(v any) (any, bool) {
	switch x := v.(type) {
	case bool:
		return boolInt(x), true
	case int64, float64:
		return x, true
	}
	return nil, false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case bool:
		return float64(boolInt(x))
	}
	return math.NaN()
}

func (r *renderer) binop(op string, l, rv any) (any, error) {
	if op == "~" {
		s := toStr(l) + toStr(rv)
		return s, r.checkLen(len(s))
	}
	for _, v := range []any{l, rv} {
		if u, ok := v.(Undefined); ok {
			return nil, r.errf("%s", u.message())
		}
	}
	ln, lok := numeric(l)
	rn, rok := numeric(rv)
	if lok && rok {
		return r.arith(op, ln, rn)
	}
	switch op {
	case "+":
		switch a := l.(type) {
		case string:
			if b, ok := rv.(string); ok {
				if err := r.checkLen(len(a) + len(b)); err != nil {
					return nil, err
				}
				return a + b, nil
			}
		case []any:
			if b, ok := rv.([]any); ok {
				if err := r.checkItems(len(a) + len(b)); err != nil {
					return nil, err
				}
				out := make([]any, 0, len(a)+len(b))
				return append(append(out, a...), b...), nil
			}
		case tuple:
			if b, ok := rv.(tuple); ok {
				if err := r.checkItems(len(a) + len(b)); err != nil {
					return nil, err
				}
				out := make([]any, 0, len(a)+len(b))
				return tuple(append(append(out, a...), b...)), nil
			}
		}
		switch l.(type) {
		case string:
			return nil, r.errf("can only concatenate str (not \"%s\") to str", typeName(rv))
		case []any:
			return nil, r.errf("can only concatenate list (not \"%s\") to list", typeName(rv))
		case tuple:
			return nil, r.errf("can only concatenate tuple (not \"%s\") to tuple", typeName(rv))
		}
	case "*":
		if n, ok := asInt(rv); ok {
			return r.repeat(l, n)
		}
		if n, ok := asInt(l); ok {
			return r.repeat(rv, n)
		}
	case "%":
		if s, ok := l.(string); ok {
			return r.percentFormat(s, rv)
		}
	}
	return nil, r.errf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(rv))
}

func (r *renderer) repeat(v any, n int64) (any, error) {
	if n < 0 {
		n = 0
	}
	switch x := v.(type) {
	case string:
		if n > 0 && int64(len(x))*n > int64(r.maxOut) || n > int64(r.maxOut) && len(x) > 0 {
			return nil, r.checkLen(r.maxOut + 1)
		}
		return strings.Repeat(x, int(n)), nil
	case tuple:
		out, err := r.repeat([]any(x), n)
		if err != nil {
			return nil, err
		}
		return tuple(out.([]any)), nil
	case []any:
		if len(x) == 0 || n == 0 {
			return []any{}, nil
		}
		if n > int64(r.maxItems()) || int64(len(x))*n > int64(r.maxItems()) {
			return nil, r.checkItems(r.maxItems() + 1)
		}
		out := make([]any, 0, len(x)*int(n))
		for i := int64(0); i < n; i++ {
			out = append(out, x...)
		}
		return out, nil
	}
	return nil, r.errf("can't multiply sequence by non-int of type '%s'", typeName(v))
}

func (r *renderer) arith(op string, l, rv any) (any, error) {
	li, lInt := l.(int64)
	ri, rInt := rv.(int64)
	if lInt && rInt {
		switch op {
		case "+":
			return li + ri, nil
		case "-":
			return li - ri, nil
		case "*":
			return li * ri, nil
		case "/":
			if ri == 0 {
				return nil, r.errf("division by zero")
			}
			return float64(li) / float64(ri), nil
		case "//":
			if ri == 0 {
				return nil, r.errf("integer division or modulo by zero")
			}
			q := li / ri
			if (li%ri != 0) && ((li < 0) != (ri < 0)) {
				q--
			}
			return q, nil
		case "%":
			if ri == 0 {
				return nil, r.errf("integer division or modulo by zero")
			}
			m := li % ri
			if m != 0 && ((m < 0) != (ri < 0)) {
				m += ri
			}
			return m, nil
		case "**":
			if ri >= 0 {
				res := int64(1)
				base := li
				for e := ri; e > 0; e-- {
					if err := r.step(); err != nil {
						return nil, err
					}
					res *= base
				}
				return res, nil
			}
			return math.Pow(float64(li), float64(ri)), nil
		}
	}
	a, b := toFloat(l), toFloat(rv)
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, r.errf("float division by zero")
		}
		return a / b, nil
	case "//":
		if b == 0 {
			return nil, r.errf("float floor division by zero")
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, r.errf("float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		p := math.Pow(a, b)
		if math.IsInf(p, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
			return nil, r.errf("(34, 'Numerical result out of range')")
		}
		return p, nil
	}
	return nil, r.errf("unknown operator %s", op)
}

// equal is Python's ==.
func equal(a, b any) bool {
	an, aok := numeric(a)
	bn, bok := numeric(b)
	if aok && bok {
		ai, aInt := an.(int64)
		bi, bInt := bn.(int64)
		if aInt && bInt {
			return ai == bi
		}
		return toFloat(an) == toFloat(bn)
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && equalItems(x, y)
	case tuple:
		y, ok := b.(tuple)
		return ok && equalItems(x, y)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			xv, _ := x.Get(k)
			yv, ok := y.Get(k)
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	case Undefined:
		_, ok := b.(Undefined)
		return ok
	}
	return a == b
}

func equalItems(x, y []any) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(x[i], y[i]) {
			return false
		}
	}
	return true
}

// less orders two values as Python's < does, or fails for mixed types.
func (r *renderer) less(a, b any) (bool, error) {
	an, aok := numeric(a)
	bn, bok := numeric(b)
	if aok && bok {
		ai, aInt := an.(int64)
		bi, bInt := bn.(int64)
		if aInt && bInt {
			return ai < bi, nil
		}
		return toFloat(an) < toFloat(bn), nil
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x < y, nil
		}
	case []any, tuple:
		xs, _ := seq(x)
		ys, ok := seq(b)
		if ok && typeName(a) == typeName(b) {
			x, y := xs, ys
			for i := 0; i < len(x) && i < len(y); i++ {
				if !equal(x[i], y[i]) {
					return r.less(x[i], y[i])
				}
			}
			return len(x) < len(y), nil
		}
	}
	for _, v := range []any{a, b} {
		if u, ok := v.(Undefined); ok {
			return false, r.errf("%s", u.message())
		}
	}
	return false, r.errf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func (r *renderer) contains(container, item any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, r.errf("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case []any, tuple:
		items, _ := seq(c)
		for _, x := range items {
			if equal(x, item) {
				return true, nil
			}
		}
		return false, nil
	case *Dict:
		if _, isTuple := item.(tuple); isTuple {
			return false, nil // tuples hash in Python, but no key here is one
		}
		if !hashable(item) {
			return false, r.errf("unhashable type: '%s'", typeName(item))
		}
		_, ok := c.Get(item)
		return ok, nil
	case Undefined:
		return false, nil
	}
	return false, r.errf("argument of type '%s' is not iterable", typeName(container))
}

func (r *renderer) compare(op string, a, b any) (bool, error) {
	switch op {
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "<":
		return r.less(a, b)
	case ">":
		return r.less(b, a)
	case "<=":
		lt, err := r.less(a, b)
		return lt || err == nil && equal(a, b), err
	case ">=":
		lt, err := r.less(b, a)
		return lt || err == nil && equal(a, b), err
	case "in":
		return r.contains(b, a)
	case "not in":
		ok, err := r.contains(b, a)
		return !ok, err
	}
	return false, r.errf("unknown comparison %s", op)
}
