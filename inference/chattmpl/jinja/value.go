package jinja

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Values inside the engine are plain Go values of a few kinds, chosen to
// behave like the Python objects Jinja sees in transformers:
//
//	nil        None
//	bool       True / False
//	int64      int
//	float64    float
//	string     str
//	[]any      list (tuples are lists too)
//	*Dict      dict, keeping insertion order like Python's
//	Undefined  a missing variable, attribute or item
//
// plus engine-internal kinds (namespaces, macros, functions, the loop
// object, bound methods) that templates can use but never construct
// directly.

// Undefined is the value of a missing variable, attribute or item. It
// prints as nothing, is false, iterates as empty, and fails when used for
// anything more (arithmetic, attribute access), like Jinja's default
// Undefined.
type Undefined struct {
	// Name is the variable or key that was missing.
	Name string
	// Hint explains where it was looked up ("'dict object' has no
	// attribute 'x'"); empty for a missing top-level variable.
	Hint string
}

func (u Undefined) message() string {
	if u.Hint != "" {
		return u.Hint
	}
	if u.Name == "" {
		return "value is undefined"
	}
	return fmt.Sprintf("'%s' is undefined", u.Name)
}

// Dict is an insertion-ordered mapping, the engine's dict. Keys are
// strings, integers, floats, booleans or None.
type Dict struct {
	keys []any
	m    map[any]any
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{m: map[any]any{}} }

// normKey makes Python-equal numeric keys the same Go key.
func normKey(k any) any {
	switch x := k.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e18 {
			return int64(x)
		}
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	}
	return k
}

func hashable(k any) bool {
	switch k.(type) {
	case nil, bool, int64, float64, string:
		return true
	}
	return false
}

// Set adds or replaces key k.
func (d *Dict) Set(k, v any) {
	nk := normKey(k)
	if _, ok := d.m[nk]; !ok {
		d.keys = append(d.keys, k)
	}
	d.m[nk] = v
}

// Get returns the value of key k.
func (d *Dict) Get(k any) (any, bool) {
	if !hashable(k) {
		return nil, false
	}
	v, ok := d.m[normKey(k)]
	return v, ok
}

// Keys returns the keys in insertion order.
func (d *Dict) Keys() []any { return append([]any(nil), d.keys...) }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// namespace is the object namespace() makes: attributes settable with
// {% set ns.x = ... %}.
type namespace struct{ d *Dict }

// function is a built-in global (range, namespace, raise_exception, ...).
type function struct {
	name string
	call func(r *renderer, args []any, kw *Dict) (any, error)
}

// tuple is a Python tuple: it behaves as a list but prints as (a, b)
// and never equals a list.
type tuple []any

// seq returns the items of a list or tuple.
func seq(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case tuple:
		return x, true
	}
	return nil, false
}

// boundMethod is a method of a string, dict, list or loop object, looked
// up but not yet called.
type boundMethod struct {
	recv any
	name string
}

// FromGo converts a Go value (as decoded by encoding/json, or built by a
// caller) into the engine's value kinds. Maps get their keys sorted, since
// a Go map has no order; a json.RawMessage is decoded keeping its order
// (as DecodeJSON does), which is what tojson must reproduce.
// Values that have no template meaning (functions, channels, structs) are
// an error: templates see data, never Go internals.
func FromGo(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool, int64, float64, string, Undefined:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		return numberFromJSON(string(x))
	case json.RawMessage:
		return DecodeJSON(x)
	case *Dict:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := FromGo(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := NewDict()
		for _, k := range keys {
			c, err := FromGo(x[k])
			if err != nil {
				return nil, err
			}
			d.Set(k, c)
		}
		return d, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return float64(u), nil
		}
		return int64(u), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			c, err := FromGo(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("jinja: map with %s keys is not template data", rv.Type().Key())
		}
		m := map[string]any{}
		for _, k := range rv.MapKeys() {
			m[k.String()] = rv.MapIndex(k).Interface()
		}
		return FromGo(m)
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("jinja: a %T is not template data", v)
}

func numberFromJSON(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("jinja: bad JSON number %q", s)
	}
	return f, nil
}

// DecodeJSON decodes one JSON document into engine values, keeping the
// order of object keys (as Python's json module does) and telling integers
// (1) from floats (1.0).
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("jinja: trailing data after JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("jinja: trailing data after JSON value")
	}
	return v, nil
}

const maxJSONDepth = 1000

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("jinja: JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("jinja: bad JSON object key")
				}
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d, nil
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return out, nil
		}
		return nil, fmt.Errorf("jinja: unexpected JSON delimiter %v", t)
	case json.Number:
		return numberFromJSON(string(t))
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("jinja: unexpected JSON token %v", tok)
}

// typeName is Python's name for a value's type, for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case Undefined:
		return "Undefined"
	case *namespace:
		return "Namespace"
	case *macro, *function, *boundMethod:
		return "function"
	case *loopObj:
		return "LoopContext"
	}
	return fmt.Sprintf("%T", v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case tuple:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	case Undefined:
		return false
	}
	return true
}

// toStr is Python's str() of a value, as {{ }} prints it.
func toStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case Undefined:
		return ""
	}
	return repr(v)
}

// repr is Python's repr() of a value.
func repr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > 100 {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(floatRepr(x))
	case string:
		b.WriteString(strRepr(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e, depth+1)
		}
		b.WriteByte(']')
	case tuple:
		b.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e, depth+1)
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *Dict:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k, depth+1)
			b.WriteString(": ")
			val, _ := x.Get(k)
			writeRepr(b, val, depth+1)
		}
		b.WriteByte('}')
	case Undefined:
		b.WriteString("Undefined")
	case *loopObj:
		b.WriteString("<LoopContext>")
	case *namespace:
		b.WriteString("<Namespace ")
		writeRepr(b, x.d, depth+1)
		b.WriteString(">")
	case *macro:
		b.WriteString("<Macro '" + x.name + "'>")
	case *function:
		b.WriteString("<function " + x.name + ">")
	case *boundMethod:
		b.WriteString("<built-in method " + x.name + " of " + typeName(x.recv) + " object>")
	default:
		b.WriteString("<" + typeName(v) + ">")
	}
}

// floatRepr formats a float as Python's repr does: shortest round-trip
// digits, always with a decimal point or exponent.
func floatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	// Python switches to exponent notation when the decimal exponent is
	// below -4 or at least 16.
	exp := int(math.Floor(math.Log10(math.Abs(f))))
	s := strconv.FormatFloat(f, 'e', -1, 64)
	// Recompute the exponent from the formatted digits (Log10 can be off by one).
	if i := strings.IndexByte(s, 'e'); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
	}
	if exp < -4 || exp >= 16 {
		mant, ex, _ := strings.Cut(s, "e")
		n, _ := strconv.Atoi(ex)
		sign := "+"
		if n < 0 {
			sign = "-"
			n = -n
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, n)
	}
	s = strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// strRepr quotes a string as Python's repr does.
func strRepr(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, "\"") {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
