package grammar

import (
	"errors"
	"strings"
	"testing"
)

// matches reports whether the whole of s is a sentence of g, and whether
// it is at least a prefix of one.
func matches(t *testing.T, g *Grammar, s string) (whole, prefix bool) {
	t.Helper()
	m := newMachine(g)
	st := m.start()
	for i := 0; i < len(s); i++ {
		if st = m.step(st, s[i]); st < 0 {
			return false, false
		}
	}
	return m.states[st].accept, true
}

const jsonGBNF = `
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
`

func TestParseAndMatch(t *testing.T) {
	g, err := Parse(jsonGBNF)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s             string
		whole, prefix bool
	}{
		{`{}`, true, true},
		{`{"a": [1, 2.5, -3e4, true, null, "x\u00e9\n"]}`, true, true},
		{`{"ключ": "値 😀"}`, true, true},
		{`{"a": `, false, true},
		{"{\"\xF0\x9F", false, true},         // half of an emoji: a prefix
		{"{\"\xF0\x28", false, false},        // not UTF-8
		{"{\"\xED\xA0\x80\"}", false, false}, // a surrogate
		{`{"a" 1}`, false, false},
		{`[1]`, false, false}, // root is an object
		{`{} x`, false, false},
		{"{\"a\x01\"}", false, false}, // control characters are refused
	} {
		whole, prefix := matches(t, g, c.s)
		if whole != c.whole || prefix != c.prefix {
			t.Errorf("%q: whole %v prefix %v, want %v %v", c.s, whole, prefix, c.whole, c.prefix)
		}
	}
}

func TestRepetitions(t *testing.T) {
	g, err := Parse(`root ::= "a"{2,3} "b"+ [x-z]? "c"{2} ( "d" | "e" )*`)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"aabcc": true, "aaabbbzccdede": true, "abcc": false, "aaaabcc": false, "aabzzcc": false, "aabc": false,
	} {
		if whole, _ := matches(t, g, s); whole != want {
			t.Errorf("%q: %v, want %v", s, whole, want)
		}
	}
}

// Deep right recursion keeps one stack: a million characters of a string
// leave the automaton with a handful of states.
func TestRightRecursionIsFlat(t *testing.T) {
	g, err := Parse(`root ::= "\"" [a-z]* "\""`)
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine(g)
	st := m.step(m.start(), '"')
	for i := 0; i < 1e6; i++ {
		st = m.step(st, 'a'+byte(i%26))
	}
	if st = m.step(st, '"'); st < 0 || !m.states[st].accept {
		t.Fatal("not accepted")
	}
	if len(m.states) > 4 || len(m.nodes) > 8 {
		t.Errorf("%d states, %d stack nodes", len(m.states), len(m.nodes))
	}
}

func TestGrammarErrors(t *testing.T) {
	for src, want := range map[string]string{
		`root ::= "a`:                    "unterminated literal",
		`root ::= [a-`:                   "unterminated character class",
		`root ::= x`:                     `undefined rule "x"`,
		`foo ::= "a"`:                    `no "root" rule`,
		"root ::= \"a\"\nroot ::= \"b\"": "defined twice",
		`root ::= root "a" | "b"`:        "reach itself",
		`root ::= ("a"?)*`:               "reach itself",
		`root ::= "a"{3,1}`:              "reversed",
		`root ::= "a"{99999}`:            "repetition count",
		`root ::= [z-a]`:                 "reversed",
		`root ::= "\q"`:                  `unknown escape`,
		`root = "a"`:                     "expected ::=",
		"":                               "no rules",
		"root ::= \"\xff\"":              "UTF-8",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", src, err, want)
		}
	}
	var se *SyntaxError
	if _, err := Parse("root ::= \"a\"\n  | ?"); !errors.As(err, &se) || se.Line != 2 {
		t.Errorf("error %v, want a SyntaxError on line 2", err)
	}
}

func TestUTF8Sequences(t *testing.T) {
	// Every code point of a few ranges is matched by exactly its encoding,
	// checked against the standard library through the class's grammar.
	g, err := Parse(`root ::= [\u0080-\u07FF\u0800-\uFFFF\U00010000-\U0010FFFF]`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []rune{0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF} {
		if whole, _ := matches(t, g, string(r)); !whole {
			t.Errorf("U+%04X refused", r)
		}
	}
	if whole, _ := matches(t, g, "a"); whole {
		t.Error("ASCII accepted")
	}
}
