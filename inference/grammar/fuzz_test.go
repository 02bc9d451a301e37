package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"etchat/internal/fuzzing"
)

// TestMain bounds the fuzzer's minimisation (fuzzing.MinimizeTime).
func TestMain(m *testing.M) { fuzzing.Main(m) }

// tinyTokens is a fake vocabulary (named so) for the fuzz targets: every
// byte, and some multi-byte tokens, including pieces of characters.
type tinyTokens [][]byte

func (t tinyTokens) VocabSize() int        { return len(t) + 1 }
func (t tinyTokens) IsSpecial(id int) bool { return id == len(t) } // the end of turn
func (t tinyTokens) TokenBytes(id int) ([]byte, error) {
	if id >= len(t) {
		return nil, errors.New("special")
	}
	return t[id], nil
}

func newTiny() tinyTokens {
	var t tinyTokens
	for b := 0; b < 256; b++ {
		t = append(t, []byte{byte(b)})
	}
	for _, s := range []string{`{"`, `":`, `",`, `"}`, "true", "null", " \"", "ab", "abc", "12", "\xE6\x97", "\xA5\xE6", "é", "😀", "\n  ", "[\"", "\"]"} {
		t = append(t, []byte(s))
	}
	return t
}

// checkMatcher follows text through g token by token (the tiny vocab's
// single bytes), comparing each mask with brute force: the cut states'
// shortcut must give exactly the tokens the full state accepts.
func checkMatcher(t *testing.T, g *Grammar, text []byte) {
	tiny := newTiny()
	v, err := NewVocab(tiny)
	if err != nil {
		t.Fatal(err)
	}
	end := len(tiny)
	mt := NewMatcher(g, v, []int{end})
	for i := 0; i <= len(text) && i < 64; i++ {
		mask := mt.Mask()
		for id := 0; id < v.Size(); id++ {
			want := false
			if b := v.Bytes(id); len(b) > 0 {
				s := mt.state
				for _, c := range b {
					if s = mt.m.step(s, c); s < 0 {
						break
					}
				}
				want = s >= 0
			} else if id == end {
				want = mt.CanEnd()
			}
			if got := mask[id>>6]&(1<<(id&63)) != 0; got != want {
				t.Fatalf("after %q: token %q: mask %v, brute force %v", text[:i], v.Bytes(id), got, want)
			}
		}
		if i == len(text) || mt.Accept(int(text[i])) != nil {
			return
		}
	}
}

// FuzzGrammar: no grammar text makes Parse or matching panic or hang; a
// sentence's every beginning is a beginning; masks equal brute force.
func FuzzGrammar(f *testing.F) {
	f.Add(jsonGBNF, []byte(`{"a": [1, "é😀", true]}`))
	f.Add(`root ::= "a"{2,3} ("b" | [c-e]+)? [^x]*`, []byte("aabcdz"))
	f.Add(`root ::= x y
x ::= "\u00e9"? | "q"
y ::= [\U0001F600-\U0001F64F] "\x41"`, []byte("é😃A"))
	f.Add(`root ::= ( "(" root ")" )* # nested`, []byte("(()())"))
	f.Fuzz(func(t *testing.T, src string, text []byte) {
		defer fuzzing.Time(len(src) + len(text))()
		g, err := Parse(src)
		if err != nil {
			if !utf8.ValidString(err.Error()) && utf8.ValidString(src) {
				t.Fatalf("error %q", err)
			}
			return
		}
		whole, prefix := g.Match(text)
		if whole && !prefix {
			t.Fatal("whole but not a prefix")
		}
		if prefix {
			for _, cut := range []int{0, len(text) / 2, len(text) - 1} {
				if cut >= 0 && cut <= len(text) {
					if _, p := g.Match(text[:cut]); !p {
						t.Fatalf("%q is a beginning, %q is not", text, text[:cut])
					}
				}
			}
		}
		if len(g.elems) < 5000 {
			checkMatcher(t, g, text)
		}
	})
}

// FuzzJSONSchema: no schema makes the compiler panic; an error is a
// SchemaError or the grammar's own; what compiles is a grammar whose
// sentences are JSON.
func FuzzJSONSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":"integer","minimum":-5,"maximum":300}},"required":["a"]}`,
		`{"$defs":{"n":{"anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}]}},"$ref":"#/$defs/n"}`,
		`{"type":["string","number"],"pattern":"^a+b?$"}`, `{"enum":[1,"x",null,{"k":[true]}]}`,
		`{"type":"string","format":"date-time"}`, `{"oneOf":[{"const":3},{"type":"boolean"}]}`, `true`, `{}`,
	} {
		f.Add([]byte(s), []byte(`{"a":"xy","b":17}`))
	}
	f.Fuzz(func(t *testing.T, schema, text []byte) {
		defer fuzzing.Time(len(schema) + len(text))()
		g, err := FromJSONSchema(schema)
		if err != nil {
			var se *SchemaError
			var sy *SyntaxError
			if !errors.As(err, &se) && !errors.As(err, &sy) && !bytes.Contains([]byte(err.Error()), []byte("grammar:")) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if whole, _ := g.Match(text); whole && !json.Valid(text) {
			t.Fatalf("schema %s accepts %q, which is not JSON", schema, text)
		}
	})
}
