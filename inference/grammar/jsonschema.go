package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SchemaError is a JSON Schema that cannot be compiled: a keyword outside
// the supported subset (named, with the path of the schema that holds it)
// or a value that makes no sense.
type SchemaError struct {
	Path    string // a JSON pointer to the schema object, "" for the root
	Keyword string // the keyword refused; "" when the value is at fault
	Msg     string
}

func (e *SchemaError) Error() string {
	where := e.Path
	if where == "" {
		where = "the root"
	}
	if e.Keyword != "" {
		return fmt.Sprintf("JSON schema: %q at %s: %s", e.Keyword, where, e.Msg)
	}
	return fmt.Sprintf("JSON schema at %s: %s", where, e.Msg)
}

// ignoredKeywords are annotations that do not constrain a value; zod and
// pydantic always write some of them.
var ignoredKeywords = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
}

// Formats of strings the compiler knows; others are a SchemaError.
var stringFormats = map[string]string{
	"date":      `[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )`,
	"time":      `( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`,
	"date-time": `format-date "T" format-time`,
	"uuid":      `[0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}`,
	"email":     `[A-Za-z0-9._%+-]{1,64} "@" [A-Za-z0-9-]{1,63} ( "." [A-Za-z0-9-]{1,63} ){1,8}`,
}

// The JSON rules every compiled schema may use. Numbers and white space
// are bounded (16 integer digits, 16 fraction digits, 3 exponent digits, 20
// blanks after a newline), so a model cannot wander on forever inside one.
const jsonRules = `
ws ::= | " " | "\n" [ \t]{0,20}
json-char ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-string ::= "\"" json-char* "\""
json-int ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-number ::= json-int ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
json-bool ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-bool | json-null
json-object ::= "{" ws ( json-string ws ":" ws json-value ws ( "," ws json-string ws ":" ws json-value ws )* )? "}"
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
`

// FromJSONSchema compiles the supported subset of JSON Schema to a grammar
// of the JSON text of a matching value (docs/serve.md lists the keywords).
func FromJSONSchema(schema []byte) (*Grammar, error) {
	src, err := JSONSchemaGBNF(schema)
	if err != nil {
		return nil, err
	}
	return Parse(src)
}

// JSONObject is the grammar of any JSON object (response_format
// json_object).
func JSONObject() *Grammar {
	g, err := Parse("root ::= json-object\n" + jsonRules)
	if err != nil {
		panic(err) // a constant grammar
	}
	return g
}

// JSONSchemaGBNF is FromJSONSchema's grammar as GBNF text.
func JSONSchemaGBNF(schema []byte) (string, error) {
	return WithSchemasGBNF("schema-0", [][]byte{schema})
}

// WithSchemas compiles a grammar whose start rule is the GBNF expression
// root, which may refer to schemas[i]'s values as the rule schema-i (and
// to the JSON rules json-value, json-string, ws…): a tool call's wrapping
// around its arguments, for one.
func WithSchemas(root string, schemas [][]byte) (*Grammar, error) {
	src, err := WithSchemasGBNF(root, schemas)
	if err != nil {
		return nil, err
	}
	return Parse(src)
}

// WithSchemasGBNF is WithSchemas' grammar as GBNF text.
func WithSchemasGBNF(root string, schemas [][]byte) (string, error) {
	sc := &schemaCompiler{names: map[string]bool{}}
	var defs []string
	for i, schema := range schemas {
		v, err := decodeSchema(schema)
		if err != nil {
			return "", err
		}
		sc.root, sc.refs = v, map[string]string{}
		name := fmt.Sprintf("schema-%d", i)
		sc.names[name] = true
		body, err := sc.value(v, "")
		if err != nil {
			return "", err
		}
		defs = append(defs, name+" ::= "+body)
	}
	var b strings.Builder
	b.WriteString("root ::= " + root + "\n")
	for _, r := range append(defs, sc.rules...) {
		b.WriteString(r + "\n")
	}
	b.WriteString(jsonRules)
	for _, f := range slices.Sorted(mapKeys(sc.formats)) {
		fmt.Fprintf(&b, "format-%s ::= %s\n", f, stringFormats[f])
	}
	return b.String(), nil
}

func decodeSchema(schema []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	v, err := decodeOrdered(d)
	if err != nil {
		return nil, &SchemaError{Msg: fmt.Sprintf("not JSON: %v", err)}
	}
	if d.More() {
		return nil, &SchemaError{Msg: "more than one JSON value"}
	}
	return v, nil
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// object keeps a JSON object's keys in the document's order: properties
// are generated in the order the schema lists them.
type object struct {
	keys []string
	m    map[string]any
}

func (o *object) get(k string) (any, bool) { v, ok := o.m[k]; return v, ok }

func decodeOrdered(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{m: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				if _, dup := o.m[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.m[k] = v
			}
			_, err := d.Token()
			return o, err
		case '[':
			var a []any
			for d.More() {
				v, err := decodeOrdered(d)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := d.Token()
			return a, err
		}
	}
	return tok, nil
}

type schemaCompiler struct {
	root    any
	rules   []string
	names   map[string]bool
	refs    map[string]string // $ref -> rule name
	formats map[string]bool
}

// rule adds a rule named after hint and returns its name.
func (sc *schemaCompiler) rule(hint, body string) string {
	name := sc.newName(hint)
	sc.rules = append(sc.rules, name+" ::= "+body)
	return name
}

func (sc *schemaCompiler) newName(hint string) string {
	var b strings.Builder
	for _, c := range hint {
		if c < 128 && isNameByte(byte(c)) {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	base := "s-" + strings.Trim(b.String(), "-")
	name := base
	for i := 2; sc.names[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	sc.names[name] = true
	return name
}

func errAt(path, kw, format string, a ...any) error {
	return &SchemaError{Path: path, Keyword: kw, Msg: fmt.Sprintf(format, a...)}
}

// value is the GBNF expression of the values schema s allows.
func (sc *schemaCompiler) value(s any, path string) (string, error) {
	switch s := s.(type) {
	case bool:
		if !s {
			return "", errAt(path, "", "the schema false allows no value")
		}
		return "json-value", nil
	case *object:
		return sc.objectSchema(s, path)
	}
	return "", errAt(path, "", "a schema must be an object or a boolean")
}

// handled lists the keywords each part of objectSchema reads.
var handled = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"minItems": true, "maxItems": true, "enum": true, "const": true, "minLength": true, "maxLength": true,
	"pattern": true, "format": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "anyOf": true, "oneOf": true, "allOf": true, "$ref": true,
}

func (sc *schemaCompiler) objectSchema(s *object, path string) (string, error) {
	for _, k := range s.keys {
		if !handled[k] && !ignoredKeywords[k] {
			return "", errAt(path, k, "not supported (docs/serve.md lists the keywords that are)")
		}
	}
	if ref, ok := s.get("$ref"); ok {
		if len(s.keys) > 1 && !onlyAnnotations(s, "$ref") {
			return "", errAt(path, "$ref", "beside other keywords is not supported")
		}
		return sc.ref(ref, path)
	}
	if e, ok, err := constants(s, path); ok || err != nil {
		return e, err
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if v, ok := s.get(kw); ok {
			return sc.combination(s, kw, v, path)
		}
	}
	return sc.types(s, path)
}

// constants is const's or enum's values, when s has either.
func constants(s *object, path string) (string, bool, error) {
	if c, ok := s.get("const"); ok {
		return jsonLiteral(c), true, nil
	}
	e, ok := s.get("enum")
	if !ok {
		return "", false, nil
	}
	vals, ok := e.([]any)
	if !ok || len(vals) == 0 {
		return "", false, errAt(path, "enum", "must be a non-empty array")
	}
	alts := make([]string, len(vals))
	for i, v := range vals {
		alts[i] = jsonLiteral(v)
	}
	return "( " + strings.Join(alts, " | ") + " )", true, nil
}

// types is the values of s's type (one or a list), or untyped's.
func (sc *schemaCompiler) types(s *object, path string) (string, error) {
	t, ok := s.get("type")
	if !ok {
		return sc.untyped(s, path)
	}
	switch t := t.(type) {
	case string:
		return sc.typed(s, t, path)
	case []any:
		var alts []string
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return "", errAt(path, "type", "must be a string or an array of strings")
			}
			e, err := sc.typed(s, name, path)
			if err != nil {
				return "", err
			}
			alts = append(alts, e)
		}
		if len(alts) == 0 {
			return "", errAt(path, "type", "is an empty array")
		}
		return "( " + strings.Join(alts, " | ") + " )", nil
	}
	return "", errAt(path, "type", "must be a string or an array of strings")
}

// untyped: a schema without type is any value, unless its keywords say
// which type they constrain (properties: an object, items: an array…).
func (sc *schemaCompiler) untyped(s *object, path string) (string, error) {
	for _, k := range s.keys {
		switch k {
		case "properties", "required", "additionalProperties":
			return sc.typed(s, "object", path)
		case "items", "minItems", "maxItems":
			return sc.typed(s, "array", path)
		case "minLength", "maxLength", "pattern", "format":
			return sc.typed(s, "string", path)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			return sc.typed(s, "number", path)
		}
	}
	return "json-value", nil
}

func onlyAnnotations(s *object, except string) bool {
	for _, k := range s.keys {
		if k != except && !ignoredKeywords[k] {
			return false
		}
	}
	return true
}

func (sc *schemaCompiler) combination(s *object, kw string, v any, path string) (string, error) {
	subs, ok := v.([]any)
	if !ok || len(subs) == 0 {
		return "", errAt(path, kw, "must be a non-empty array")
	}
	if !onlyAnnotations(s, kw) {
		return "", errAt(path, kw, "beside other keywords is not supported")
	}
	if kw == "allOf" {
		if len(subs) != 1 {
			return "", errAt(path, kw, "with more than one schema is not supported")
		}
		return sc.value(subs[0], path+"/allOf/0")
	}
	// oneOf is compiled as anyOf: the grammar cannot rule out a value that
	// matches two of them.
	var alts []string
	for i, sub := range subs {
		e, err := sc.value(sub, fmt.Sprintf("%s/%s/%d", path, kw, i))
		if err != nil {
			return "", err
		}
		alts = append(alts, e)
	}
	return "( " + strings.Join(alts, " | ") + " )", nil
}

func (sc *schemaCompiler) ref(ref any, path string) (string, error) {
	r, ok := ref.(string)
	if !ok {
		return "", errAt(path, "$ref", "must be a string")
	}
	if name, ok := sc.refs[r]; ok {
		return name, nil
	}
	var key string
	switch {
	case strings.HasPrefix(r, "#/$defs/"):
		key = "$defs"
	case strings.HasPrefix(r, "#/definitions/"):
		key = "definitions"
	case r == "#":
		key = ""
	default:
		return "", errAt(path, "$ref", "%q: only #, #/$defs/NAME and #/definitions/NAME are supported", r)
	}
	target := sc.root
	if key != "" {
		name := unescapePointer(strings.TrimPrefix(r, "#/"+key+"/"))
		root, _ := sc.root.(*object)
		var defs *object
		if root != nil {
			d, _ := root.get(key)
			defs, _ = d.(*object)
		}
		var found bool
		if defs != nil {
			target, found = defs.get(name)
		}
		if !found {
			return "", errAt(path, "$ref", "%q: no such definition", r)
		}
	}
	// The rule is named before its body is compiled, so a definition may
	// refer to itself.
	name := sc.newName("ref-" + r[strings.LastIndexByte(r, '/')+1:])
	sc.refs[r] = name
	i := len(sc.rules)
	sc.rules = append(sc.rules, "")
	body, err := sc.value(target, strings.TrimPrefix(r, "#"))
	if err != nil {
		return "", err
	}
	sc.rules[i] = name + " ::= " + body
	return name, nil
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// jsonLiteral is the GBNF literal of v's compact JSON text.
func jsonLiteral(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v)
	return gbnfLiteral(b.String())
}

func writeJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeJSON(b, v.m[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, x)
		}
		b.WriteByte(']')
	default:
		vb, _ := json.Marshal(v)
		b.Write(vb)
	}
}

// gbnfLiteral quotes s as a GBNF literal.
func gbnfLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7F:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (sc *schemaCompiler) typed(s *object, t, path string) (string, error) {
	switch t {
	case "object":
		return sc.objectType(s, path)
	case "array":
		return sc.arrayType(s, path)
	case "string":
		return sc.stringType(s, path)
	case "integer":
		return sc.integerType(s, path)
	case "number":
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if _, ok := s.get(kw); ok {
				return "", errAt(path, kw, "is supported on integers only")
			}
		}
		return "json-number", nil
	case "boolean":
		return "json-bool", nil
	case "null":
		return "json-null", nil
	}
	return "", errAt(path, "type", "unknown type %q", t)
}

// objectType: the properties in the schema's order, the required ones
// always, the others optional; additionalProperties true (or a schema)
// allows more keys after them, while absent or false allows none (a model
// is asked for the properties it was given).
func (sc *schemaCompiler) objectType(s *object, path string) (string, error) {
	props := &object{m: map[string]any{}}
	if p, ok := s.get("properties"); ok {
		if props, ok = p.(*object); !ok {
			return "", errAt(path, "properties", "must be an object")
		}
	}
	required, err := requiredNames(s, props, path)
	if err != nil {
		return "", err
	}
	extra, err := sc.additional(s, props, path)
	if err != nil {
		return "", err
	}
	kvs := make([]string, len(props.keys))
	for i, k := range props.keys {
		e, err := sc.value(props.m[k], path+"/properties/"+k)
		if err != nil {
			return "", err
		}
		kb, _ := json.Marshal(k)
		kvs[i] = gbnfLiteral(string(kb)) + " ws \":\" ws " + e
	}
	// Two rules per property: the rest of the object after it when
	// something came before (comma first), and when nothing did.
	more := `""`
	if extra != "" {
		more = sc.rule(path+"-extra", `( "," ws json-string ws ":" ws `+extra+` ws )*`)
	}
	after, first := more, `""`
	if extra != "" {
		first = sc.rule(path+"-extra-first", `( json-string ws ":" ws `+extra+` ws `+more+` )?`)
	}
	for i := len(kvs) - 1; i >= 0; i-- {
		k := props.keys[i]
		withComma := `"," ws ` + kvs[i] + " ws " + after
		alone := kvs[i] + " ws " + after
		if required[k] {
			after, first = sc.rule(path+"-"+k+"-after", withComma), sc.rule(path+"-"+k+"-first", alone)
			continue
		}
		after, first = sc.rule(path+"-"+k+"-after", "( "+withComma+" ) | "+after), sc.rule(path+"-"+k+"-first", "( "+alone+" ) | "+first)
	}
	return `"{" ws ` + first + ` "}"`, nil
}

// requiredNames reads required: names among the properties.
func requiredNames(s, props *object, path string) (map[string]bool, error) {
	required := map[string]bool{}
	r, ok := s.get("required")
	if !ok {
		return required, nil
	}
	list, ok := r.([]any)
	if !ok {
		return nil, errAt(path, "required", "must be an array of names")
	}
	for _, x := range list {
		name, ok := x.(string)
		if !ok {
			return nil, errAt(path, "required", "must be an array of names")
		}
		if _, ok := props.get(name); !ok {
			return nil, errAt(path, "required", "names %q, which is not among the properties", name)
		}
		required[name] = true
	}
	return required, nil
}

// additional is the values other keys may have ("" for no other key):
// additionalProperties true or a schema; {"type": "object"} alone is any
// object.
func (sc *schemaCompiler) additional(s, props *object, path string) (string, error) {
	a, ok := s.get("additionalProperties")
	if !ok {
		if len(props.keys) == 0 && !hasKey(s, "properties") {
			return "json-value", nil
		}
		return "", nil
	}
	if b, isBool := a.(bool); isBool {
		if b {
			return "json-value", nil
		}
		return "", nil
	}
	return sc.value(a, path+"/additionalProperties")
}

func hasKey(s *object, k string) bool { _, ok := s.get(k); return ok }

func count(s *object, kw, path string) (int, bool, error) {
	v, ok := s.get(kw)
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	i, err := strconv.Atoi(string(n))
	if !isNum || err != nil || i < 0 || i > maxRepeat {
		return 0, false, errAt(path, kw, "must be an integer from 0 to %d", maxRepeat)
	}
	return i, true, nil
}

func bounds(s *object, minKW, maxKW, path string) (lo, hi int, err error) {
	lo, _, err = count(s, minKW, path)
	if err != nil {
		return 0, 0, err
	}
	hi, hasHi, err := count(s, maxKW, path)
	if err != nil {
		return 0, 0, err
	}
	if !hasHi {
		hi = -1
	} else if hi < lo {
		return 0, 0, errAt(path, maxKW, "%d is below %s %d", hi, minKW, lo)
	}
	return lo, hi, nil
}

func repeat(lo, hi int) string {
	if hi < 0 {
		return fmt.Sprintf("{%d,}", lo)
	}
	return fmt.Sprintf("{%d,%d}", lo, hi)
}

func (sc *schemaCompiler) arrayType(s *object, path string) (string, error) {
	item := "json-value"
	if it, ok := s.get("items"); ok {
		e, err := sc.value(it, path+"/items")
		if err != nil {
			return "", err
		}
		item = e
	}
	lo, hi, err := bounds(s, "minItems", "maxItems", path)
	if err != nil {
		return "", err
	}
	if hi == 0 {
		return `"[" ws "]"`, nil
	}
	rest := `( "," ws ` + item + ` ws )` + repeat(max(lo-1, 0), max(hi-1, -1))
	body := item + " ws " + rest
	if lo == 0 {
		body = "( " + body + " )?"
	}
	return `"[" ws ` + body + ` "]"`, nil
}

func (sc *schemaCompiler) stringType(s *object, path string) (string, error) {
	if f, ok := s.get("format"); ok {
		name, _ := f.(string)
		if _, known := stringFormats[name]; !known {
			return "", errAt(path, "format", "%q is not supported (date-time, date, time, uuid and email are)", f)
		}
		if sc.formats == nil {
			sc.formats = map[string]bool{}
		}
		sc.formats[name] = true
		if name == "date-time" {
			sc.formats["date"], sc.formats["time"] = true, true
		}
		if hasKey(s, "pattern") || hasKey(s, "minLength") || hasKey(s, "maxLength") {
			return "", errAt(path, "format", "beside pattern, minLength or maxLength is not supported")
		}
		return `"\"" format-` + name + ` "\""`, nil
	}
	if p, ok := s.get("pattern"); ok {
		re, _ := p.(string)
		if hasKey(s, "minLength") || hasKey(s, "maxLength") {
			return "", errAt(path, "pattern", "beside minLength or maxLength is not supported")
		}
		e, err := patternGBNF(re)
		if err != nil {
			return "", errAt(path, "pattern", "%v", err)
		}
		return `"\"" ` + e + ` "\""`, nil
	}
	lo, hi, err := bounds(s, "minLength", "maxLength", path)
	if err != nil {
		return "", err
	}
	if lo == 0 && hi < 0 {
		return "json-string", nil
	}
	return `"\"" json-char` + repeat(lo, hi) + ` "\""`, nil
}

// maxIntDigits bounds integers: without a bound, at most this many digits.
const maxIntDigits = 16

func (sc *schemaCompiler) integerType(s *object, path string) (string, error) {
	lo, hi := int64(-(math.Pow10(maxIntDigits) - 1)), int64(math.Pow10(maxIntDigits)-1)
	set := false
	for _, b := range []struct {
		kw        string
		isMin     bool
		exclusive bool
	}{{"minimum", true, false}, {"maximum", false, false}, {"exclusiveMinimum", true, true}, {"exclusiveMaximum", false, true}} {
		v, ok := s.get(b.kw)
		if !ok {
			continue
		}
		n, isNum := v.(json.Number)
		f, err := strconv.ParseFloat(string(n), 64)
		if !isNum || err != nil || math.Abs(f) >= math.Pow10(maxIntDigits) {
			return "", errAt(path, b.kw, "must be a number of at most %d digits", maxIntDigits)
		}
		set = true
		if b.isMin {
			x := int64(math.Ceil(f))
			if b.exclusive && float64(x) == f {
				x++
			}
			lo = max(lo, x)
		} else {
			x := int64(math.Floor(f))
			if b.exclusive && float64(x) == f {
				x--
			}
			hi = min(hi, x)
		}
	}
	if !set {
		return "json-int", nil
	}
	if lo > hi {
		return "", errAt(path, "", "no integer is within minimum %d and maximum %d", lo, hi)
	}
	return "( " + intRange(lo, hi) + " )", nil
}

// intRange is a GBNF expression of the decimal integers lo..hi (no
// leading zeros, "-0" excluded).
func intRange(lo, hi int64) string {
	var alts []string
	if lo < 0 {
		for _, a := range natRange(max(-hi, 1), -lo) {
			alts = append(alts, `"-" `+a)
		}
	}
	if hi >= 0 {
		alts = append(alts, natRange(max(lo, 0), hi)...)
	}
	return strings.Join(alts, " | ")
}

// natRange is the alternatives for the naturals lo..hi (0 ≤ lo ≤ hi): per
// number of digits, then per leading digits, as in a range-to-pattern
// split.
func natRange(lo, hi int64) []string {
	if lo > hi {
		return nil
	}
	var out []string
	for d := 1; d <= 18; d++ {
		dLo, dHi := int64(math.Pow10(d-1)), int64(math.Pow10(d))-1
		if d == 1 {
			dLo = 0
		}
		a, b := max(lo, dLo), min(hi, dHi)
		if a > b {
			continue
		}
		out = append(out, sameLength(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10))...)
	}
	return out
}

// sameLength covers the numbers from a to b, strings of equal length.
func sameLength(a, b string) []string {
	if a == b {
		return []string{gbnfLiteral(a)}
	}
	// The common prefix is literal; then the first differing digit.
	i := 0
	for a[i] == b[i] {
		i++
	}
	prefix := ""
	if i > 0 {
		prefix = gbnfLiteral(a[:i]) + " "
	}
	rest := len(a) - i - 1
	allLow := strings.Trim(a[i+1:], "0") == ""
	allHigh := strings.Trim(b[i+1:], "9") == ""
	tail := ""
	if rest > 0 {
		tail = fmt.Sprintf(" [0-9]{%d}", rest)
	}
	if allLow && allHigh {
		return []string{prefix + digitClass(a[i], b[i]) + tail}
	}
	var out []string
	loD, hiD := a[i], b[i]
	if !allLow {
		out = append(out, prefixAll(prefix+digitClass(a[i], a[i])+" ", sameLength(a[i+1:], strings.Repeat("9", rest)))...)
		loD++
	}
	hiEnd := hiD
	if !allHigh {
		hiEnd--
	}
	if loD <= hiEnd {
		out = append(out, prefix+digitClass(loD, hiEnd)+tail)
	}
	if !allHigh {
		out = append(out, prefixAll(prefix+digitClass(b[i], b[i])+" ", sameLength(strings.Repeat("0", rest), b[i+1:]))...)
	}
	return out
}

func prefixAll(p string, alts []string) []string {
	for i, a := range alts {
		alts[i] = p + "( " + a + " )"
	}
	return alts
}

func digitClass(lo, hi byte) string {
	if lo == hi {
		return `"` + string(lo) + `"`
	}
	return "[" + string(lo) + "-" + string(hi) + "]"
}

// Literal quotes s as a GBNF literal (for grammars written around
// WithSchemas).
func Literal(s string) string { return gbnfLiteral(s) }
