package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxRange is the sandbox's bound on range(), as Jinja's sandbox has.
const maxRange = 100000

var globals map[string]any

func init() {
	globals = map[string]any{
		"range":           &function{"range", fnRange},
		"namespace":       &function{"namespace", fnNamespace},
		"dict":            &function{"dict", fnDict},
		"raise_exception": &function{"raise_exception", fnRaise},
		"strftime_now":    &function{"strftime_now", fnStrftimeNow},
	}
}

// argParser binds positional and keyword arguments to named parameters.
type argParser struct {
	r    *renderer
	fn   string
	args []any
	kw   *Dict
	used int
}

func (a *argParser) get(i int, name string) (any, bool) {
	if i < len(a.args) {
		return a.args[i], true
	}
	if a.kw != nil {
		if v, ok := a.kw.Get(name); ok {
			a.used++
			return v, true
		}
	}
	return nil, false
}

func (a *argParser) done(n int) error {
	if len(a.args) > n {
		return a.r.errf("%s() takes at most %d argument(s) (%d given)", a.fn, n, len(a.args))
	}
	if a.kw != nil && a.used != a.kw.Len() {
		return a.r.errf("%s() got an unexpected keyword argument", a.fn)
	}
	return nil
}

func fnRange(r *renderer, args []any, kw *Dict) (any, error) {
	if kw != nil || len(args) < 1 || len(args) > 3 {
		return nil, r.errf("range expected 1 to 3 integer arguments")
	}
	var n [3]int64
	for i, a := range args {
		v, ok := asInt(a)
		if !ok {
			return nil, r.errf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		n[i] = v
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(args) >= 2 {
		start, stop = n[0], n[1]
	}
	if len(args) == 3 {
		step = n[2]
	}
	if step == 0 {
		return nil, r.errf("range() arg 3 must not be zero")
	}
	// Size the range in floating point first: the integer difference of
	// extreme bounds overflows.
	if span := (float64(stop) - float64(start)) / float64(step); span > maxRange {
		return nil, &limitError{fmt.Sprintf("range too big (more than %d items)", maxRange)}
	}
	count := int64(0)
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange || count < 0 {
		return nil, &limitError{fmt.Sprintf("range too big (more than %d items)", maxRange)}
	}
	out := make([]any, 0, count)
	for i, v := int64(0), start; i < count; i, v = i+1, v+step {
		out = append(out, v)
	}
	return out, nil
}

func fnNamespace(r *renderer, args []any, kw *Dict) (any, error) {
	d := NewDict()
	for _, a := range args {
		src, ok := a.(*Dict)
		if !ok {
			return nil, r.errf("namespace() takes a mapping and keyword arguments")
		}
		for _, k := range src.keys {
			v, _ := src.Get(k)
			d.Set(k, v)
		}
	}
	if kw != nil {
		for _, k := range kw.keys {
			v, _ := kw.Get(k)
			d.Set(k, v)
		}
	}
	return &namespace{d: d}, nil
}

func fnDict(r *renderer, args []any, kw *Dict) (any, error) {
	d := NewDict()
	if len(args) > 1 {
		return nil, r.errf("dict expected at most 1 argument")
	}
	if len(args) == 1 {
		src, ok := args[0].(*Dict)
		if !ok {
			return nil, r.errf("dict() argument must be a mapping")
		}
		for _, k := range src.keys {
			v, _ := src.Get(k)
			d.Set(k, v)
		}
	}
	if kw != nil {
		for _, k := range kw.keys {
			v, _ := kw.Get(k)
			d.Set(k, v)
		}
	}
	return d, nil
}

func fnRaise(r *renderer, args []any, kw *Dict) (any, error) {
	if len(args) != 1 || kw != nil {
		return nil, r.errf("raise_exception() takes exactly one argument")
	}
	return nil, &RaisedError{Msg: toStr(args[0])}
}

func fnStrftimeNow(r *renderer, args []any, kw *Dict) (any, error) {
	if len(args) != 1 || kw != nil {
		return nil, r.errf("strftime_now() takes exactly one argument")
	}
	f, ok := args[0].(string)
	if !ok {
		return nil, r.errf("strftime() argument 1 must be str, not %s", typeName(args[0]))
	}
	return strftime(r.now(), f), nil
}

// ---- methods ----

func pyStrip(s string, chars any, left, right bool) (string, error) {
	var cut func(rune) bool
	switch c := chars.(type) {
	case nil, Undefined:
		cut = pyIsSpace
	case string:
		cut = func(r rune) bool { return strings.ContainsRune(c, r) }
	default:
		return "", fmt.Errorf("strip arg must be None or str")
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

func pySplit(s string, sep any, maxsplit int64) ([]any, error) {
	var parts []string
	switch sp := sep.(type) {
	case nil, Undefined:
		// Split on runs of whitespace, dropping empty strings.
		fields := []string{}
		rest := strings.TrimLeftFunc(s, pyIsSpace)
		for rest != "" {
			if maxsplit >= 0 && int64(len(fields)) == maxsplit {
				fields = append(fields, rest)
				rest = ""
				break
			}
			i := strings.IndexFunc(rest, pyIsSpace)
			if i < 0 {
				fields = append(fields, rest)
				break
			}
			fields = append(fields, rest[:i])
			rest = strings.TrimLeftFunc(rest[i:], pyIsSpace)
		}
		parts = fields
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		n := -1
		if maxsplit >= 0 {
			n = int(min(maxsplit, math.MaxInt32)) + 1
		}
		parts = strings.SplitN(s, sp, n)
	default:
		return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, c := range s {
		if unicode.IsLetter(c) {
			if prevCased {
				b.WriteRune(unicode.ToLower(c))
			} else {
				b.WriteRune(unicode.ToTitle(c))
			}
			prevCased = true
		} else {
			b.WriteRune(c)
			prevCased = false
		}
	}
	return b.String()
}

func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToTitle(r)) + strings.ToLower(s[n:])
}

// runeIndex converts a byte offset in s to a character offset.
func runeIndex(s string, byteOff int) int64 {
	if byteOff < 0 {
		return -1
	}
	return int64(utf8.RuneCountInString(s[:byteOff]))
}

func (r *renderer) callMethod(m *boundMethod, args []any, kw *Dict) (any, error) {
	ap := &argParser{r: r, fn: m.name, args: args, kw: kw}
	switch recv := m.recv.(type) {
	case string:
		return r.stringMethod(recv, m.name, ap)
	case *Dict:
		switch m.name {
		case "items":
			if err := ap.done(0); err != nil {
				return nil, err
			}
			out := make([]any, 0, recv.Len())
			for _, k := range recv.keys {
				v, _ := recv.Get(k)
				out = append(out, tuple{k, v})
			}
			return out, nil
		case "keys":
			if err := ap.done(0); err != nil {
				return nil, err
			}
			return recv.Keys(), nil
		case "values":
			if err := ap.done(0); err != nil {
				return nil, err
			}
			out := make([]any, 0, recv.Len())
			for _, k := range recv.keys {
				v, _ := recv.Get(k)
				out = append(out, v)
			}
			return out, nil
		case "get":
			k, ok := ap.get(0, "key")
			if !ok {
				return nil, r.errf("get expected at least 1 argument")
			}
			def, _ := ap.get(1, "default")
			if err := ap.done(2); err != nil {
				return nil, err
			}
			if v, ok := recv.Get(k); ok {
				return v, nil
			}
			return def, nil
		case "copy":
			d := NewDict()
			for _, k := range recv.keys {
				v, _ := recv.Get(k)
				d.Set(k, v)
			}
			return d, nil
		}
	case []any:
		switch m.name {
		case "index":
			x, ok := ap.get(0, "value")
			if !ok || ap.done(1) != nil {
				return nil, r.errf("index() takes exactly one argument")
			}
			for i, e := range recv {
				if equal(e, x) {
					return int64(i), nil
				}
			}
			return nil, r.errf("%s is not in list", repr(x))
		case "count":
			x, ok := ap.get(0, "value")
			if !ok || ap.done(1) != nil {
				return nil, r.errf("count() takes exactly one argument")
			}
			n := int64(0)
			for _, e := range recv {
				if equal(e, x) {
					n++
				}
			}
			return n, nil
		case "copy":
			return append([]any{}, recv...), nil
		}
	case *loopObj:
		switch m.name {
		case "cycle":
			if len(args) == 0 {
				return nil, r.errf("no items for cycling given")
			}
			return args[recv.index0%len(args)], nil
		case "changed":
			cur := args
			var v any = cur
			changed := !recv.hasLst || !equal(recv.last, v)
			recv.last, recv.hasLst = v, true
			return changed, nil
		}
	}
	return nil, r.errf("'%s' object has no attribute '%s'", typeName(m.recv), m.name)
}

func (r *renderer) stringMethod(s, name string, ap *argParser) (any, error) {
	wrap := func(v any, err error) (any, error) {
		if err != nil {
			return nil, r.errf("%s(): %v", name, err)
		}
		return v, nil
	}
	str := func(i int, pname string) (string, bool, error) {
		v, ok := ap.get(i, pname)
		if !ok {
			return "", false, nil
		}
		x, isStr := v.(string)
		if !isStr {
			return "", true, r.errf("%s() argument must be str, not %s", name, typeName(v))
		}
		return x, true, nil
	}
	switch name {
	case "strip", "lstrip", "rstrip":
		chars, _ := ap.get(0, "chars")
		if err := ap.done(1); err != nil {
			return nil, err
		}
		return wrap(pyStrip(s, chars, name != "rstrip", name != "lstrip"))
	case "upper":
		return strings.ToUpper(s), ap.done(0)
	case "lower", "casefold":
		return strings.ToLower(s), ap.done(0)
	case "title":
		return pyTitle(s), ap.done(0)
	case "capitalize":
		return pyCapitalize(s), ap.done(0)
	case "swapcase":
		var b strings.Builder
		for _, c := range s {
			if unicode.IsUpper(c) {
				b.WriteRune(unicode.ToLower(c))
			} else {
				b.WriteRune(unicode.ToUpper(c))
			}
		}
		return b.String(), ap.done(0)
	case "startswith", "endswith":
		v, ok := ap.get(0, "prefix")
		if !ok {
			return nil, r.errf("%s() takes at least 1 argument", name)
		}
		if err := ap.done(1); err != nil {
			return nil, err
		}
		var cands []any
		switch x := v.(type) {
		case string:
			cands = []any{x}
		case tuple:
			cands = x
		default:
			return nil, r.errf("%s first arg must be str or a tuple of str, not %s", name, typeName(v))
		}
		for _, c := range cands {
			cs, ok := c.(string)
			if !ok {
				return nil, r.errf("%s first arg must be str or a tuple of str", name)
			}
			if name == "startswith" && strings.HasPrefix(s, cs) || name == "endswith" && strings.HasSuffix(s, cs) {
				return true, nil
			}
		}
		return false, nil
	case "split", "rsplit":
		sep, _ := ap.get(0, "sep")
		maxv, ok := ap.get(1, "maxsplit")
		if err := ap.done(2); err != nil {
			return nil, err
		}
		maxsplit := int64(-1)
		if ok {
			n, isInt := asInt(maxv)
			if !isInt {
				return nil, r.errf("maxsplit must be an integer")
			}
			maxsplit = n
		}
		if name == "rsplit" && maxsplit >= 0 {
			// Split from the right: reverse, split the reversed separator, reverse back.
			rs := reverseString(s)
			var rsep any = sep
			if x, ok := sep.(string); ok {
				rsep = reverseString(x)
			}
			parts, err := pySplit(rs, rsep, maxsplit)
			if err != nil {
				return wrap(nil, err)
			}
			out := make([]any, len(parts))
			for i, p := range parts {
				out[len(parts)-1-i] = reverseString(p.(string))
			}
			return out, nil
		}
		return wrap(pySplit(s, sep, maxsplit))
	case "splitlines":
		if err := ap.done(1); err != nil {
			return nil, err
		}
		out := []any{}
		for _, l := range strings.SplitAfter(s, "\n") {
			if l == "" {
				continue
			}
			out = append(out, strings.TrimRight(strings.TrimSuffix(l, "\n"), "\r"))
		}
		return out, nil
	case "replace":
		old, ok1, err := str(0, "old")
		if err != nil {
			return nil, err
		}
		nw, ok2, err := str(1, "new")
		if err != nil {
			return nil, err
		}
		if !ok1 || !ok2 {
			return nil, r.errf("replace() takes at least 2 arguments")
		}
		n := -1
		if cv, ok := ap.get(2, "count"); ok {
			c, isInt := asInt(cv)
			if !isInt {
				return nil, r.errf("replace() count must be an integer")
			}
			n = int(max(min(c, math.MaxInt32), -1))
		}
		if err := ap.done(3); err != nil {
			return nil, err
		}
		return r.replace(s, old, nw, n)
	case "find", "rfind", "index", "count":
		sub, ok, err := str(0, "sub")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errf("%s() takes at least 1 argument", name)
		}
		if err := ap.done(1); err != nil {
			return nil, err
		}
		switch name {
		case "find":
			return runeIndex(s, strings.Index(s, sub)), nil
		case "rfind":
			return runeIndex(s, strings.LastIndex(s, sub)), nil
		case "index":
			i := strings.Index(s, sub)
			if i < 0 {
				return nil, r.errf("substring not found")
			}
			return runeIndex(s, i), nil
		default:
			if sub == "" {
				return int64(utf8.RuneCountInString(s) + 1), nil
			}
			return int64(strings.Count(s, sub)), nil
		}
	case "join":
		v, ok := ap.get(0, "iterable")
		if !ok || ap.done(1) != nil {
			return nil, r.errf("join() takes exactly one argument")
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(items))
		for i, it := range items {
			x, ok := it.(string)
			if !ok {
				return nil, r.errf("sequence item %d: expected str instance, %s found", i, typeName(it))
			}
			parts[i] = x
		}
		out := strings.Join(parts, s)
		return out, r.checkLen(len(out))
	case "removeprefix", "removesuffix":
		a, ok, err := str(0, "prefix")
		if err != nil || !ok {
			return nil, r.errf("%s() takes exactly one argument", name)
		}
		if name == "removeprefix" {
			return strings.TrimPrefix(s, a), ap.done(1)
		}
		return strings.TrimSuffix(s, a), ap.done(1)
	case "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "isupper", "islower", "istitle":
		if err := ap.done(0); err != nil {
			return nil, err
		}
		return strPredicate(s, name), nil
	case "partition", "rpartition":
		sep, ok, err := str(0, "sep")
		if err != nil || !ok || sep == "" {
			return nil, r.errf("%s() takes one non-empty separator", name)
		}
		i := strings.Index(s, sep)
		if name == "rpartition" {
			i = strings.LastIndex(s, sep)
		}
		if i < 0 {
			if name == "rpartition" {
				return []any{"", "", s}, nil
			}
			return []any{s, "", ""}, nil
		}
		return []any{s[:i], sep, s[i+len(sep):]}, nil
	case "center", "ljust", "rjust", "zfill":
		wv, ok := ap.get(0, "width")
		w, isInt := asInt(wv)
		if !ok || !isInt {
			return nil, r.errf("%s() takes an integer width", name)
		}
		if w > int64(r.maxOut) {
			return nil, r.checkLen(int(min(w, math.MaxInt32)))
		}
		fill := " "
		if name != "zfill" {
			if fv, ok := ap.get(1, "fillchar"); ok {
				fs, isStr := fv.(string)
				if !isStr || utf8.RuneCountInString(fs) != 1 {
					return nil, r.errf("the fill character must be exactly one character long")
				}
				fill = fs
			}
		} else {
			fill = "0"
		}
		n := int(w) - utf8.RuneCountInString(s)
		if n <= 0 {
			return s, nil
		}
		switch name {
		case "ljust":
			return s + strings.Repeat(fill, n), nil
		case "rjust":
			return strings.Repeat(fill, n) + s, nil
		case "zfill":
			if s != "" && (s[0] == '-' || s[0] == '+') {
				return s[:1] + strings.Repeat("0", n) + s[1:], nil
			}
			return strings.Repeat("0", n) + s, nil
		}
		left := n / 2
		if n%2 == 1 && int(w)%2 == 1 {
			left++
		}
		return strings.Repeat(fill, left) + s + strings.Repeat(fill, n-left), nil
	case "expandtabs":
		return strings.ReplaceAll(s, "\t", "        "), nil
	case "format":
		return r.strFormat(s, ap.args, ap.kw)
	}
	return nil, r.errf("'str' object has no attribute '%s'", name)
}

func strPredicate(s, name string) bool {
	if s == "" {
		return false
	}
	hasCased := false
	for _, c := range s {
		var ok bool
		switch name {
		case "isdigit", "isdecimal", "isnumeric":
			ok = unicode.IsDigit(c) || name == "isnumeric" && unicode.IsNumber(c)
		case "isalpha":
			ok = unicode.IsLetter(c)
		case "isalnum":
			ok = unicode.IsLetter(c) || unicode.IsNumber(c)
		case "isspace":
			ok = pyIsSpace(c)
		case "isupper":
			ok = !unicode.IsLower(c)
			hasCased = hasCased || unicode.IsUpper(c)
		case "islower":
			ok = !unicode.IsUpper(c)
			hasCased = hasCased || unicode.IsLower(c)
		case "istitle":
			return s == pyTitle(s) && strings.ToLower(s) != strings.ToUpper(s)
		}
		if !ok {
			return false
		}
	}
	if name == "isupper" || name == "islower" {
		return hasCased
	}
	return true
}

func reverseString(s string) string {
	rs := []rune(s)
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return string(rs)
}

func (r *renderer) replace(s, old, nw string, n int) (any, error) {
	count := strings.Count(s, old)
	if old == "" {
		count = utf8.RuneCountInString(s) + 1
	}
	if n >= 0 && n < count {
		count = n
	}
	if err := r.checkLen(len(s) + count*(len(nw)-len(old))); err != nil {
		return nil, err
	}
	return strings.Replace(s, old, nw, n), nil
}

// strFormat implements str.format for automatic and numbered fields
// with no format specs beyond plain substitution.
func (r *renderer) strFormat(s string, args []any, kw *Dict) (any, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' {
			if i+1 < len(s) && s[i+1] == '{' {
				b.WriteByte('{')
				i++
				continue
			}
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return nil, r.errf("single '{' encountered in format string")
			}
			field := s[i+1 : i+j]
			i += j
			if k := strings.IndexAny(field, ":!"); k >= 0 {
				field = field[:k]
			}
			var v any
			switch {
			case field == "":
				if auto >= len(args) {
					return nil, r.errf("Replacement index %d out of range for positional args tuple", auto)
				}
				v = args[auto]
				auto++
			default:
				if n, err := strconv.Atoi(field); err == nil {
					if n >= len(args) {
						return nil, r.errf("Replacement index %d out of range for positional args tuple", n)
					}
					v = args[n]
				} else {
					var ok bool
					if kw != nil {
						v, ok = kw.Get(field)
					}
					if !ok {
						return nil, r.errf("KeyError: %s", strRepr(field))
					}
				}
			}
			b.WriteString(toStr(v))
			if err := r.checkLen(b.Len()); err != nil {
				return nil, err
			}
			continue
		}
		if c == '}' {
			if i+1 < len(s) && s[i+1] == '}' {
				i++
			}
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// percentFormat implements "fmt" % args for %s, %d, %i, %r, %f, %%.
func (r *renderer) percentFormat(s string, arg any) (any, error) {
	args, isList := arg.(tuple)
	if !isList {
		args = []any{arg}
	}
	var b strings.Builder
	k := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return nil, r.errf("incomplete format")
		}
		i++
		spec := ""
		for i < len(s) && strings.IndexByte("0123456789.-+ ", s[i]) >= 0 {
			spec += string(s[i])
			i++
			if len(spec) > 3 {
				return nil, r.errf("format width or precision too large")
			}
		}
		if i >= len(s) {
			return nil, r.errf("incomplete format")
		}
		verb := s[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if k >= len(args) {
			return nil, r.errf("not enough arguments for format string")
		}
		v := args[k]
		k++
		switch verb {
		case 's':
			b.WriteString(toStr(v))
		case 'r':
			b.WriteString(repr(v))
		case 'd', 'i':
			n, ok := numeric(v)
			if !ok {
				return nil, r.errf("%%d format: a real number is required, not %s", typeName(v))
			}
			fmt.Fprintf(&b, "%"+spec+"d", int64(toFloat(n)))
		case 'f', 'e', 'g':
			n, ok := numeric(v)
			if !ok {
				return nil, r.errf("must be real number, not %s", typeName(v))
			}
			if spec == "" {
				spec = ".6"
			}
			fmt.Fprintf(&b, "%"+spec+string(verb), toFloat(n))
		default:
			return nil, r.errf("unsupported format character '%c'", verb)
		}
		if err := r.checkLen(b.Len()); err != nil {
			return nil, err
		}
	}
	if k < len(args) {
		// Python lets a lone mapping or list go unused.
		_, isDict := arg.(*Dict)
		_, isPlainList := arg.([]any)
		if isList || !isDict && !isPlainList {
			return nil, r.errf("not all arguments converted during string formatting")
		}
	}
	return b.String(), nil
}

// ---- sorting helper ----

func (r *renderer) sortValues(items []any, key func(any) (any, error), reverse bool) ([]any, error) {
	keys := make([]any, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var sortErr error
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := keys[idx[a]], keys[idx[b]]
		if reverse {
			x, y = y, x
		}
		lt, err := r.less(x, y)
		if err != nil && sortErr == nil {
			sortErr = err
		}
		return lt
	})
	if sortErr != nil {
		return nil, sortErr
	}
	out := make([]any, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out, nil
}
