package grammar

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// patternGBNF translates a JSON Schema pattern (an ECMA-262 regular
// expression, read with Go's RE2 syntax, which agrees on the common part)
// to a GBNF expression of the JSON string content it matches. Like JSON
// Schema, an unanchored side may have anything: json-char* is added there.
// Characters that a JSON string must escape (the quote, the backslash,
// control characters) are left out of classes and written escaped in
// literals. Word boundaries and the like are an error.
func patternGBNF(re string) (string, error) {
	r, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "", err
	}
	subs := []*syntax.Regexp{r}
	if r.Op == syntax.OpConcat {
		subs = r.Sub
	}
	start, end := false, false
	if n := len(subs); n > 0 && (subs[0].Op == syntax.OpBeginText || subs[0].Op == syntax.OpBeginLine) {
		start, subs = true, subs[1:]
	}
	if n := len(subs); n > 0 && (subs[n-1].Op == syntax.OpEndText || subs[n-1].Op == syntax.OpEndLine) {
		end, subs = true, subs[:n-1]
	}
	var parts []string
	if !start {
		parts = append(parts, "json-char*")
	}
	for _, s := range subs {
		e, err := regexGBNF(s)
		if err != nil {
			return "", err
		}
		parts = append(parts, e)
	}
	if !end {
		parts = append(parts, "json-char*")
	}
	if len(parts) == 0 {
		return `""`, nil
	}
	return strings.Join(parts, " "), nil
}

func regexGBNF(r *syntax.Regexp) (string, error) {
	switch r.Op {
	case syntax.OpEmptyMatch:
		return `""`, nil
	case syntax.OpLiteral:
		return literalGBNF(r), nil
	case syntax.OpCharClass:
		return classGBNF(r.Rune), nil
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return "json-char", nil
	case syntax.OpCapture:
		return regexGBNF(r.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		e, err := regexGBNF(r.Sub[0])
		if err != nil {
			return "", err
		}
		op := map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[r.Op]
		if r.Op == syntax.OpRepeat {
			op = repeat(r.Min, r.Max)
		}
		return "( " + e + " )" + op, nil
	case syntax.OpConcat:
		return subsGBNF(r.Sub, " ")
	case syntax.OpAlternate:
		return subsGBNF(r.Sub, " | ")
	}
	return "", fmt.Errorf("%s (%v) is not supported inside a pattern", r, r.Op)
}

// jsonCharLiteral is character c as it appears inside a JSON string.
func jsonCharLiteral(c rune) string {
	switch c {
	case '"':
		return `"\\\""`
	case '\\':
		return `"\\\\"`
	case '\n':
		return `"\\n"`
	case '\t':
		return `"\\t"`
	case '\r':
		return `"\\r"`
	}
	if c < 0x20 || c == 0x7F {
		return fmt.Sprintf(`"\\u%04x"`, c)
	}
	return gbnfLiteral(string(c))
}

// classGBNF is a class of code points (pairs lo, hi) minus the characters
// a JSON string must escape.
func classGBNF(pairs []rune) string {
	var rs []rng
	for i := 0; i+1 < len(pairs); i += 2 {
		rs = append(rs, rng{pairs[i], pairs[i+1]})
	}
	rs = subtract(normalize(rs), []rng{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}})
	if len(rs) == 0 {
		return "[^\\x00-\\U0010FFFF]" // nothing
	}
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range rs {
		b.WriteString(classChar(r.lo))
		if r.hi != r.lo {
			b.WriteByte('-')
			b.WriteString(classChar(r.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func classChar(c rune) string {
	switch {
	case c == ']' || c == '[' || c == '-' || c == '^' || c == '\\' || c == '"':
		return `\` + string(c)
	case c < 0x20 || c == 0x7F:
		return fmt.Sprintf(`\x%02X`, c)
	case c > 0xFFFF:
		return fmt.Sprintf(`\U%08X`, c)
	}
	return string(c)
}

// subtract is rs without the code points of cut (both sorted, merged).
func subtract(rs, cut []rng) []rng {
	out := rs
	for _, c := range cut {
		var next []rng
		for _, r := range out {
			if c.hi < r.lo || c.lo > r.hi {
				next = append(next, r)
				continue
			}
			if r.lo < c.lo {
				next = append(next, rng{r.lo, c.lo - 1})
			}
			if r.hi > c.hi {
				next = append(next, rng{c.hi + 1, r.hi})
			}
		}
		out = next
	}
	return out
}

// literalGBNF is a literal's characters inside a JSON string, both cases
// of each letter under (?i).
func literalGBNF(r *syntax.Regexp) string {
	var alts []string
	for _, c := range r.Rune {
		if r.Flags&syntax.FoldCase != 0 && unicode.ToUpper(c) != unicode.ToLower(c) {
			alts = append(alts, "( "+jsonCharLiteral(unicode.ToLower(c))+" | "+jsonCharLiteral(unicode.ToUpper(c))+" )")
			continue
		}
		alts = append(alts, jsonCharLiteral(c))
	}
	return strings.Join(alts, " ")
}

// subsGBNF joins the translations of subs, each in parentheses, with sep.
func subsGBNF(subs []*syntax.Regexp, sep string) (string, error) {
	var parts []string
	for _, s := range subs {
		e, err := regexGBNF(s)
		if err != nil {
			return "", err
		}
		parts = append(parts, "( "+e+" )")
	}
	return strings.Join(parts, sep), nil
}
