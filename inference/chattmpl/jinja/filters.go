package jinja

import (
	"fmt"
	"math"

	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type filterFunc func(r *renderer, v any, ap *argParser) (any, error)

var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"trim":        fTrim,
		"tojson":      fToJSON,
		"length":      fLength,
		"count":       fLength,
		"lower":       strFilter(strings.ToLower),
		"upper":       strFilter(strings.ToUpper),
		"title":       strFilter(jinjaTitle),
		"capitalize":  strFilter(pyCapitalize),
		"first":       fFirst,
		"last":        fLast,
		"join":        fJoin,
		"default":     fDefault,
		"d":           fDefault,
		"list":        fList,
		"string":      func(r *renderer, v any, ap *argParser) (any, error) { return toStr(v), ap.done(0) },
		"int":         fInt,
		"float":       fFloat,
		"abs":         fAbs,
		"round":       fRound,
		"replace":     fReplace,
		"items":       fItems,
		"dictsort":    fDictsort,
		"selectattr":  func(r *renderer, v any, ap *argParser) (any, error) { return r.selectReject(v, ap, true, true) },
		"rejectattr":  func(r *renderer, v any, ap *argParser) (any, error) { return r.selectReject(v, ap, true, false) },
		"select":      func(r *renderer, v any, ap *argParser) (any, error) { return r.selectReject(v, ap, false, true) },
		"reject":      func(r *renderer, v any, ap *argParser) (any, error) { return r.selectReject(v, ap, false, false) },
		"map":         fMap,
		"unique":      fUnique,
		"safe":        func(r *renderer, v any, ap *argParser) (any, error) { return v, ap.done(0) },
		"e":           fEscape,
		"escape":      fEscape,
		"forceescape": fEscape,
		"indent":      fIndent,
		"wordcount":   fWordcount,
		"batch":       fBatch,
		"sum":         fSum,
		"min":         func(r *renderer, v any, ap *argParser) (any, error) { return r.minMax(v, ap, false) },
		"max":         func(r *renderer, v any, ap *argParser) (any, error) { return r.minMax(v, ap, true) },
		"sort":        fSort,
		"reverse":     fReverse,
		"center":      fCenter,
		"attr":        fAttr,
		"format":      fFormat,
		"truncate":    fTruncate,
		"striptags":   strFilter(stripTags),
		"pprint":      func(r *renderer, v any, ap *argParser) (any, error) { return repr(v), nil },
	}
}

func strFilter(f func(string) string) filterFunc {
	return func(r *renderer, v any, ap *argParser) (any, error) {
		return f(toStr(v)), ap.done(0)
	}
}

func (r *renderer) applyFilter(fe *filterExpr, v any, f *frame) (any, error) {
	args, kw, err := r.evalArgs(fe.args, fe.kwName, fe.kwVal, f)
	if err != nil {
		return nil, err
	}
	r.line = fe.line
	return r.callFilter(fe.name, v, args, kw)
}

func (r *renderer) callFilter(name string, v any, args []any, kw *Dict) (any, error) {
	fn, ok := filters[name]
	if !ok {
		return nil, r.errf("no filter named '%s'", name)
	}
	if err := r.step(); err != nil {
		return nil, err
	}
	// Most filters fail on an undefined value; these accept one.
	switch name {
	case "default", "d", "string", "length", "count", "list", "safe", "e", "escape", "trim", "lower", "upper",
		"title", "capitalize", "join", "first", "last", "wordcount", "unique", "items", "select", "reject",
		"selectattr", "rejectattr", "map", "sort", "reverse", "batch", "dictsort", "replace", "min", "max", "sum":
	default:
		if u, ok := v.(Undefined); ok {
			return nil, r.errf("%s", u.message())
		}
	}
	return fn(r, v, &argParser{r: r, fn: name, args: args, kw: kw})
}

func fTrim(r *renderer, v any, ap *argParser) (any, error) {
	chars, _ := ap.get(0, "chars")
	if err := ap.done(1); err != nil {
		return nil, err
	}
	s, err := pyStrip(toStr(v), chars, true, true)
	if err != nil {
		return nil, r.errf("trim: %v", err)
	}
	return s, nil
}

func fLength(r *renderer, v any, ap *argParser) (any, error) {
	if err := ap.done(0); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		return int64(utf8.RuneCountInString(x)), nil
	case []any:
		return int64(len(x)), nil
	case tuple:
		return int64(len(x)), nil
	case *Dict:
		return int64(x.Len()), nil
	case Undefined:
		return int64(0), nil
	case *namespace:
		return int64(x.d.Len()), nil
	}
	return nil, r.errf("object of type '%s' has no len()", typeName(v))
}

func fFirst(r *renderer, v any, ap *argParser) (any, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{Hint: "No first item, sequence was empty."}, nil
	}
	return items[0], ap.done(0)
}

func fLast(r *renderer, v any, ap *argParser) (any, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{Hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], ap.done(0)
}

// attrGetter resolves a dotted attribute path ("a.b", "0") like Jinja's
// make_attrgetter.
func (r *renderer) attrGetter(path any) func(any) (any, error) {
	var parts []any
	switch p := path.(type) {
	case string:
		for _, s := range strings.Split(p, ".") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				parts = append(parts, n)
			} else {
				parts = append(parts, s)
			}
		}
	default:
		parts = []any{p}
	}
	return func(v any) (any, error) {
		for _, k := range parts {
			var err error
			if v, err = r.getItem(v, k); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

func fJoin(r *renderer, v any, ap *argParser) (any, error) {
	sepv, _ := ap.get(0, "d")
	attr, hasAttr := ap.get(1, "attribute")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	sep := ""
	if sepv != nil {
		sep = toStr(sepv)
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	get := func(x any) (any, error) { return x, nil }
	if hasAttr && attr != nil {
		get = r.attrGetter(attr)
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		x, err := get(it)
		if err != nil {
			return nil, err
		}
		b.WriteString(toStr(x))
		if err := r.checkLen(b.Len()); err != nil {
			return nil, err
		}
	}
	return b.String(), nil
}

func fDefault(r *renderer, v any, ap *argParser) (any, error) {
	def, ok := ap.get(0, "default_value")
	if !ok {
		def = ""
	}
	boolean, _ := ap.get(1, "boolean")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	if _, undef := v.(Undefined); undef || truthy(boolean) && !truthy(v) {
		return def, nil
	}
	return v, nil
}

func fList(r *renderer, v any, ap *argParser) (any, error) {
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	return append([]any{}, items...), ap.done(0)
}

func fInt(r *renderer, v any, ap *argParser) (any, error) {
	def, ok := ap.get(0, "default")
	if !ok {
		def = int64(0)
	}
	basev, hasBase := ap.get(1, "base")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	base := 10
	if hasBase {
		b, ok := asInt(basev)
		if !ok || b < 0 || b == 1 || b > 36 {
			return nil, r.errf("int(): bad base")
		}
		base = int(b)
	}
	switch x := v.(type) {
	case bool:
		return boolInt(x), nil
	case int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 9.2e18 {
			return def, nil
		}
		return int64(x), nil
	case string:
		s := strings.TrimFunc(x, pyIsSpace)
		s = strings.ReplaceAll(s, "_", "")
		neg := strings.HasPrefix(s, "-")
		digits := strings.TrimLeft(s, "+-")
		if len(digits) > 2 && digits[0] == '0' {
			prefixBase := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[digits[1]]
			if prefixBase != 0 && (base == prefixBase || base == 0) {
				digits, base = digits[2:], prefixBase
			}
		}
		if base == 0 {
			base = 10
		}
		if neg {
			digits = "-" + digits
		}
		if n, err := strconv.ParseInt(digits, base, 64); err == nil {
			return n, nil
		}
		if base == 10 {
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) < 9.2e18 {
				return int64(f), nil
			}
		}
	}
	return def, nil
}

func fFloat(r *renderer, v any, ap *argParser) (any, error) {
	def, ok := ap.get(0, "default")
	if !ok {
		def = 0.0
	}
	if err := ap.done(1); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case bool:
		return float64(boolInt(x)), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimFunc(x, pyIsSpace), 64); err == nil {
			return f, nil
		}
	}
	return def, nil
}

func fAbs(r *renderer, v any, ap *argParser) (any, error) {
	switch x := v.(type) {
	case bool:
		return boolInt(x), nil
	case int64:
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, r.errf("bad operand type for abs(): '%s'", typeName(v))
}

func fRound(r *renderer, v any, ap *argParser) (any, error) {
	pv, ok := ap.get(0, "precision")
	prec := int64(0)
	if ok {
		p, isInt := asInt(pv)
		if !isInt {
			return nil, r.errf("round(): precision must be an integer")
		}
		prec = p
	}
	mv, ok := ap.get(1, "method")
	method := "common"
	if ok {
		method = toStr(mv)
	}
	if err := ap.done(2); err != nil {
		return nil, err
	}
	n, isNum := numeric(v)
	if !isNum {
		return nil, r.errf("round(): must be a number, not %s", typeName(v))
	}
	if prec > 300 || prec < -300 {
		return toFloat(n), nil
	}
	scale := math.Pow(10, float64(prec))
	x := toFloat(n) * scale
	switch method {
	case "common":
		// Python's round(): ties to even.
		x = math.RoundToEven(x)
		if i, isInt := n.(int64); isInt && prec >= 0 {
			return i, nil
		}
	case "ceil":
		x = math.Ceil(x)
	case "floor":
		x = math.Floor(x)
	default:
		return nil, r.errf("method must be common, ceil or floor")
	}
	return x / scale, nil
}

func fReplace(r *renderer, v any, ap *argParser) (any, error) {
	oldv, ok1 := ap.get(0, "old")
	newv, ok2 := ap.get(1, "new")
	if !ok1 || !ok2 {
		return nil, r.errf("replace() takes at least 2 arguments")
	}
	n := -1
	if cv, ok := ap.get(2, "count"); ok && cv != nil {
		c, isInt := asInt(cv)
		if !isInt {
			return nil, r.errf("replace() count must be an integer")
		}
		n = int(max(min(c, math.MaxInt32), -1))
	}
	if err := ap.done(3); err != nil {
		return nil, err
	}
	return r.replace(toStr(v), toStr(oldv), toStr(newv), n)
}

func fItems(r *renderer, v any, ap *argParser) (any, error) {
	switch x := v.(type) {
	case Undefined:
		return []any{}, nil
	case *Dict:
		return r.callMethod(&boundMethod{recv: x, name: "items"}, nil, nil)
	}
	return nil, r.errf("can only get item pairs from a mapping")
}

func fDictsort(r *renderer, v any, ap *argParser) (any, error) {
	cs, _ := ap.get(0, "case_sensitive")
	by, hasBy := ap.get(1, "by")
	rev, _ := ap.get(2, "reverse")
	if err := ap.done(3); err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		return nil, r.errf("dictsort: expected a mapping, got %s", typeName(v))
	}
	pos := 0
	if hasBy {
		switch toStr(by) {
		case "key":
		case "value":
			pos = 1
		default:
			return nil, r.errf("You can only sort by either \"key\" or \"value\"")
		}
	}
	pairs, _ := r.callMethod(&boundMethod{recv: d, name: "items"}, nil, nil)
	return r.sortValues(pairs.([]any), func(p any) (any, error) {
		k := p.(tuple)[pos]
		if s, ok := k.(string); ok && !truthy(cs) {
			return strings.ToLower(s), nil
		}
		return k, nil
	}, truthy(rev))
}

func (r *renderer) selectReject(v any, ap *argParser, byAttr, keep bool) (any, error) {
	if !truthy(v) {
		// Jinja only iterates a true value.
		return []any{}, nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	args := ap.args
	get := func(x any) (any, error) { return x, nil }
	if byAttr {
		if len(args) == 0 {
			return nil, r.errf("missing parameter for attribute name")
		}
		get = r.attrGetter(args[0])
		args = args[1:]
	}
	var test func(x any) (bool, error)
	if len(args) == 0 {
		test = func(x any) (bool, error) { return truthy(x), nil }
	} else {
		name, ok := args[0].(string)
		if !ok {
			return nil, r.errf("test name must be a string")
		}
		targs := args[1:]
		test = func(x any) (bool, error) { return r.applyTest(name, x, targs) }
	}
	out := []any{}
	for _, it := range items {
		if err := r.step(); err != nil {
			return nil, err
		}
		x, err := get(it)
		if err != nil {
			return nil, err
		}
		ok, err := test(x)
		if err != nil {
			return nil, err
		}
		if ok == keep {
			out = append(out, it)
		}
	}
	return out, nil
}

func fMap(r *renderer, v any, ap *argParser) (any, error) {
	if !truthy(v) {
		return []any{}, nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	var fn func(any) (any, error)
	if attr, ok := ap.get(len(ap.args)+99, "attribute"); ok {
		def, hasDef := ap.get(len(ap.args)+99, "default")
		get := r.attrGetter(attr)
		fn = func(x any) (any, error) {
			y, err := get(x)
			if _, undef := y.(Undefined); undef && hasDef {
				return def, err
			}
			return y, err
		}
		if err := ap.done(0); err != nil {
			return nil, err
		}
	} else {
		if len(ap.args) == 0 {
			return nil, r.errf("map requires a filter argument")
		}
		name, ok := ap.args[0].(string)
		if !ok {
			return nil, r.errf("map: filter name must be a string")
		}
		rest := ap.args[1:]
		fn = func(x any) (any, error) { return r.callFilter(name, x, rest, ap.kw) }
	}
	out := make([]any, 0, len(items))
	for _, it := range items {
		y, err := fn(it)
		if err != nil {
			return nil, err
		}
		out = append(out, y)
	}
	return out, nil
}

func fUnique(r *renderer, v any, ap *argParser) (any, error) {
	cs, _ := ap.get(0, "case_sensitive")
	attr, hasAttr := ap.get(1, "attribute")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	get := func(x any) (any, error) { return x, nil }
	if hasAttr && attr != nil {
		get = r.attrGetter(attr)
	}
	var seen []any
	out := []any{}
	for _, it := range items {
		k, err := get(it)
		if err != nil {
			return nil, err
		}
		if s, ok := k.(string); ok && !truthy(cs) {
			k = strings.ToLower(s)
		}
		dup := false
		for _, sk := range seen {
			if err := r.step(); err != nil {
				return nil, err
			}
			if equal(sk, k) {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, k)
			out = append(out, it)
		}
	}
	return out, nil
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&#34;", "'", "&#39;").Replace(s)
}

func fEscape(r *renderer, v any, ap *argParser) (any, error) {
	return htmlEscape(toStr(v)), ap.done(0)
}

func fIndent(r *renderer, v any, ap *argParser) (any, error) {
	wv, ok := ap.get(0, "width")
	pad := "    "
	if ok {
		switch w := wv.(type) {
		case string:
			pad = w
		default:
			n, isInt := asInt(wv)
			if !isInt {
				return nil, r.errf("indent width must be an int or a string")
			}
			if n > 1000 {
				return nil, r.errf("indent width too large")
			}
			pad = strings.Repeat(" ", int(max(n, 0)))
		}
	}
	first, _ := ap.get(1, "first")
	blank, _ := ap.get(2, "blank")
	if err := ap.done(3); err != nil {
		return nil, err
	}
	s, isStr := v.(string)
	if !isStr {
		if u, ok := v.(Undefined); ok {
			return nil, r.errf("%s", u.message())
		}
		return nil, r.errf("unsupported operand type(s) for +=: '%s' and 'str'", typeName(v))
	}
	lines := strings.Split(s, "\n")
	for i := range lines {
		if i == 0 && !truthy(first) {
			continue
		}
		if lines[i] == "" && !truthy(blank) {
			continue
		}
		lines[i] = pad + lines[i]
	}
	out := strings.Join(lines, "\n")
	return out, r.checkLen(len(out))
}

func fWordcount(r *renderer, v any, ap *argParser) (any, error) {
	n := 0
	inWord := false
	for _, c := range toStr(v) {
		isW := c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 0x7f && !pyIsSpace(c)
		if isW && !inWord {
			n++
		}
		inWord = isW
	}
	return int64(n), ap.done(0)
}

func fBatch(r *renderer, v any, ap *argParser) (any, error) {
	nv, ok := ap.get(0, "linecount")
	n, isInt := asInt(nv)
	if !ok || !isInt || n <= 0 {
		return nil, r.errf("batch: linecount must be a positive integer")
	}
	if err := r.checkItems(int(min(n, int64(r.maxItems())+1))); err != nil {
		return nil, err
	}
	fill, hasFill := ap.get(1, "fill_with")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for i := 0; i < len(items); i += int(n) {
		end := min(i+int(n), len(items))
		chunk := append([]any{}, items[i:end]...)
		if hasFill && fill != nil {
			for len(chunk) < int(n) {
				chunk = append(chunk, fill)
			}
		}
		out = append(out, chunk)
	}
	return out, nil
}

func fSum(r *renderer, v any, ap *argParser) (any, error) {
	attr, hasAttr := ap.get(0, "attribute")
	start, hasStart := ap.get(1, "start")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	if !hasStart {
		start = int64(0)
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	get := func(x any) (any, error) { return x, nil }
	if hasAttr && attr != nil {
		get = r.attrGetter(attr)
	}
	acc := start
	for _, it := range items {
		x, err := get(it)
		if err != nil {
			return nil, err
		}
		if acc, err = r.binop("+", acc, x); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func (r *renderer) minMax(v any, ap *argParser, isMax bool) (any, error) {
	cs, _ := ap.get(0, "case_sensitive")
	attr, hasAttr := ap.get(1, "attribute")
	if err := ap.done(2); err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{Hint: "No aggregated item, sequence was empty."}, nil
	}
	key := r.sortKey(cs, attr, hasAttr)
	sorted, err := r.sortValues(items, key, isMax)
	if err != nil {
		return nil, err
	}
	return sorted[0], nil
}

func (r *renderer) sortKey(cs, attr any, hasAttr bool) func(any) (any, error) {
	get := func(x any) (any, error) { return x, nil }
	if hasAttr && attr != nil {
		get = r.attrGetter(attr)
	}
	return func(x any) (any, error) {
		k, err := get(x)
		if s, ok := k.(string); ok && !truthy(cs) {
			return strings.ToLower(s), err
		}
		return k, err
	}
}

func fSort(r *renderer, v any, ap *argParser) (any, error) {
	rev, _ := ap.get(0, "reverse")
	cs, _ := ap.get(1, "case_sensitive")
	attr, hasAttr := ap.get(2, "attribute")
	if err := ap.done(3); err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	return r.sortValues(items, r.sortKey(cs, attr, hasAttr), truthy(rev))
}

func fReverse(r *renderer, v any, ap *argParser) (any, error) {
	if s, ok := v.(string); ok {
		return reverseString(s), nil
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, x := range items {
		out[len(items)-1-i] = x
	}
	return out, nil
}

func fCenter(r *renderer, v any, ap *argParser) (any, error) {
	w, ok := ap.get(0, "width")
	if !ok {
		w = int64(80)
	}
	return r.stringMethod(toStr(v), "center", &argParser{r: r, fn: "center", args: []any{w}})
}

func fAttr(r *renderer, v any, ap *argParser) (any, error) {
	n, ok := ap.get(0, "name")
	if !ok {
		return nil, r.errf("attr() takes a name")
	}
	return r.getAttr(v, toStr(n))
}

func fFormat(r *renderer, v any, ap *argParser) (any, error) {
	if ap.kw != nil && ap.kw.Len() > 0 {
		return nil, r.errf("format: keyword arguments are not supported")
	}
	return r.percentFormat(toStr(v), tuple(ap.args))
}

func fTruncate(r *renderer, v any, ap *argParser) (any, error) {
	lv, ok := ap.get(0, "length")
	length := int64(255)
	if ok {
		n, isInt := asInt(lv)
		if !isInt {
			return nil, r.errf("truncate: length must be an integer")
		}
		length = n
	}
	kill, _ := ap.get(1, "killwords")
	endv, ok := ap.get(2, "end")
	end := "..."
	if ok {
		end = toStr(endv)
	}
	levv, ok := ap.get(3, "leeway")
	leeway := int64(5)
	if ok {
		if n, isInt := asInt(levv); isInt {
			leeway = n
		}
	}
	if err := ap.done(4); err != nil {
		return nil, err
	}
	s := []rune(toStr(v))
	if int64(len(s)) <= length+leeway {
		return string(s), nil
	}
	cut := length - int64(utf8.RuneCountInString(end))
	if cut < 0 {
		cut = 0
	}
	if truthy(kill) {
		return string(s[:cut]) + end, nil
	}
	head := string(s[:cut])
	if i := strings.LastIndexByte(head, ' '); i >= 0 {
		head = head[:i]
	}
	return head + end, nil
}

func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, c := range s {
		switch {
		case c == '<':
			in = true
		case c == '>' && in:
			in = false
		case !in:
			b.WriteRune(c)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func fToJSON(r *renderer, v any, ap *argParser) (any, error) {
	// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent,
	// separators=separators, sort_keys=sort_keys).
	var o jsonOpts
	if ea, ok := ap.get(0, "ensure_ascii"); ok {
		o.ensureASCII = truthy(ea)
	}
	if iv, ok := ap.get(1, "indent"); ok && iv != nil {
		switch x := iv.(type) {
		case string:
			o.indent, o.hasIndent = x, true
		default:
			n, isInt := asInt(iv)
			if !isInt {
				return nil, r.errf("tojson: indent must be an int or a string")
			}
			if n > 1000 {
				return nil, r.errf("tojson: indent too large")
			}
			o.indent, o.hasIndent = strings.Repeat(" ", int(max(n, 0))), true
		}
	}
	o.itemSep, o.keySep = ", ", ": "
	if o.hasIndent {
		o.itemSep = ","
	}
	if sv, ok := ap.get(2, "separators"); ok && sv != nil {
		seps, isList := seq(sv)
		if !isList || len(seps) != 2 {
			return nil, r.errf("tojson: separators must be a pair of strings")
		}
		a, ok1 := seps[0].(string)
		b, ok2 := seps[1].(string)
		if !ok1 || !ok2 {
			return nil, r.errf("tojson: separators must be a pair of strings")
		}
		o.itemSep, o.keySep = a, b
	}
	if sk, ok := ap.get(3, "sort_keys"); ok {
		o.sortKeys = truthy(sk)
	}
	if err := ap.done(4); err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := r.writeJSON(&b, v, &o, 0); err != nil {
		return nil, err
	}
	return b.String(), nil
}

type jsonOpts struct {
	ensureASCII     bool
	indent          string
	hasIndent       bool
	itemSep, keySep string
	sortKeys        bool
}

func (r *renderer) writeJSON(b *strings.Builder, v any, o *jsonOpts, level int) error {
	if level > 500 {
		return r.errf("tojson: value nested too deeply")
	}
	if err := r.checkLen(b.Len()); err != nil {
		return err
	}
	newline := func(l int) {
		if o.hasIndent {
			b.WriteByte('\n')
			for i := 0; i < l; i++ {
				b.WriteString(o.indent)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(floatRepr(x))
		}
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case []any, tuple:
		items, _ := seq(x)
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			if err := r.writeJSON(b, e, o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte(']')
	case *Dict:
		if x.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := x.Keys()
		if o.sortKeys {
			sorted, err := r.sortValues(keys, func(k any) (any, error) { return k, nil }, false)
			if err != nil {
				return err
			}
			keys = sorted
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			var ks string
			switch kk := k.(type) {
			case string:
				ks = kk
			case nil:
				ks = "null"
			case bool:
				ks = map[bool]string{true: "true", false: "false"}[kk]
			case int64:
				ks = strconv.FormatInt(kk, 10)
			case float64:
				ks = floatRepr(kk)
			}
			writeJSONString(b, ks, o.ensureASCII)
			b.WriteString(o.keySep)
			val, _ := x.Get(k)
			if err := r.writeJSON(b, val, o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte('}')
	case *namespace:
		return r.errf("Object of type Namespace is not JSON serializable")
	case Undefined:
		return r.errf("Object of type Undefined is not JSON serializable")
	default:
		return r.errf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

// writeJSONString quotes s as Python's json.dumps does.
func writeJSONString(b *strings.Builder, s string, ascii bool) {
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case c < 0x20:
				fmt.Fprintf(b, `\u%04x`, c)
			case ascii && c > 0x7e:
				if c > 0xffff {
					c -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(c>>10), 0xdc00+(c&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, c)
				}
			default:
				b.WriteRune(c)
			}
		}
	}
	b.WriteByte('"')
}

// ---- tests ----

func (r *renderer) applyTest(name string, v any, args []any) (bool, error) {
	if err := r.step(); err != nil {
		return false, err
	}
	arg := func() (any, error) {
		if len(args) != 1 {
			return nil, r.errf("test '%s' takes exactly one argument", name)
		}
		return args[0], nil
	}
	_, isUndef := v.(Undefined)
	switch name {
	case "defined":
		return !isUndef, nil
	case "undefined":
		return isUndef, nil
	case "none":
		return v == nil, nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		_, ok := numeric(v)
		return ok, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "true":
		b, ok := v.(bool)
		return ok && b, nil
	case "false":
		b, ok := v.(bool)
		return ok && !b, nil
	case "mapping":
		_, ok := v.(*Dict)
		return ok, nil
	case "iterable":
		switch v.(type) {
		case string, []any, tuple, *Dict, Undefined:
			return true, nil
		}
		return false, nil
	case "sequence":
		switch v.(type) {
		case string, []any, tuple, *Dict:
			return true, nil
		}
		return false, nil
	case "callable":
		switch v.(type) {
		case *function, *macro, *boundMethod, Undefined:
			return true, nil
		}
		return false, nil
	case "lower":
		return strPredicate(toStr(v), "islower"), nil
	case "upper":
		return strPredicate(toStr(v), "isupper"), nil
	case "escaped":
		return false, nil
	case "even", "odd":
		m, err := r.binop("%", v, int64(2))
		if err != nil {
			return false, err
		}
		if name == "even" {
			return equal(m, int64(0)), nil
		}
		return equal(m, int64(1)), nil
	case "divisibleby":
		a, err := arg()
		if err != nil {
			return false, err
		}
		m, err := r.binop("%", v, a)
		if err != nil {
			return false, err
		}
		return equal(m, int64(0)), nil
	case "in":
		a, err := arg()
		if err != nil {
			return false, err
		}
		return r.contains(a, v)
	case "sameas":
		a, err := arg()
		if err != nil {
			return false, err
		}
		switch x := v.(type) {
		case nil, bool:
			return v == a, nil
		case []any:
			y, ok := a.([]any)
			return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]), nil
		case tuple:
			y, ok := a.(tuple)
			return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]), nil
		case *Dict, *namespace:
			return v == a, nil
		}
		return equal(v, a) && typeName(v) == typeName(a), nil
	case "filter":
		_, ok := filters[toStr(v)]
		return ok, nil
	case "test":
		switch toStr(v) {
		case "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true", "false",
			"mapping", "iterable", "sequence", "callable", "lower", "upper", "escaped", "even", "odd",
			"divisibleby", "in", "sameas", "filter", "test", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan",
			"<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=":
			return true, nil
		}
		return false, nil
	}
	ops := map[string]string{
		"eq": "==", "equalto": "==", "==": "==", "ne": "!=", "!=": "!=",
		"lt": "<", "lessthan": "<", "<": "<", "le": "<=", "<=": "<=",
		"gt": ">", "greaterthan": ">", ">": ">", "ge": ">=", ">=": ">=",
	}
	if op, ok := ops[name]; ok {
		a, err := arg()
		if err != nil {
			return false, err
		}
		return r.compare(op, v, a)
	}
	return false, r.errf("no test named '%s'", name)
}

// ---- strftime ----

var (
	weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	months   = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

// strftime formats t as C's strftime (glibc, as Python uses it) does for
// the common directives, including glibc's %-d style no-padding flag.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		noPad := false
		if f[i] == '-' && i+1 < len(f) {
			noPad = true
			i++
		}
		num := func(n, width int) {
			if noPad {
				b.WriteString(strconv.Itoa(n))
			} else {
				fmt.Fprintf(&b, "%0*d", width, n)
			}
		}
		switch f[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			if noPad {
				b.WriteString(strconv.Itoa(t.Day()))
			} else {
				fmt.Fprintf(&b, "%2d", t.Day())
			}
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'f':
			fmt.Fprintf(&b, "%06d", t.Nanosecond()/1000)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'j':
			num(t.YearDay(), 3)
		case 'a':
			b.WriteString(weekdays[t.Weekday()][:3])
		case 'A':
			b.WriteString(weekdays[t.Weekday()])
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteString(strconv.Itoa(wd))
		case 'b', 'h':
			b.WriteString(months[t.Month()-1][:3])
		case 'B':
			b.WriteString(months[t.Month()-1])
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'z':
			_, off := t.Zone()
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			fmt.Fprintf(&b, "%c%02d%02d", sign, off/3600, off/60%60)
		case 'F':
			fmt.Fprintf(&b, "%d-%02d-%02d", t.Year(), t.Month(), t.Day())
		case 'T':
			fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		case 'D':
			fmt.Fprintf(&b, "%02d/%02d/%02d", t.Month(), t.Day(), t.Year()%100)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

// jinjaTitle is Jinja's title filter: a word starts after whitespace or
// one of - ( { [ <, its first character upper-cased and the rest lowered.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, c := range s {
		if pyIsSpace(c) || strings.ContainsRune("-({[<", c) {
			b.WriteRune(c)
			start = true
			continue
		}
		if start {
			b.WriteString(strings.ToUpper(string(c)))
		} else {
			b.WriteString(strings.ToLower(string(c)))
		}
		start = false
	}
	return b.String()
}
