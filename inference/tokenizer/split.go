package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written scanners for the well-known pre-tokenizer patterns. Each
// returns the end of the match starting at i, exactly as Oniguruma's
// leftmost-first search would find it (every position of any text starts a
// match of these patterns, so successive matches tile the text). They are
// checked against the general engine in regex.go by the tests.

const (
	// patCL100K is Llama 3's pattern (the GPT-4 cl100k_base one).
	patCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patQwen2 is the same with single digits (Qwen 2 and 3).
	patQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patGPT2 is GPT-2's pattern, also the ByteLevel pre-tokenizer's.
	patGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// rune classes for the scanners
const (
	clOther uint8 = iota
	clLetter
	clNumber
	clSpace
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		r := rune(c)
		switch {
		case unicode.IsLetter(r):
			asciiClass[c] = clLetter
		case unicode.IsNumber(r):
			asciiClass[c] = clNumber
		case unicode.IsSpace(r):
			asciiClass[c] = clSpace
		default:
			asciiClass[c] = clOther
		}
	}
}

// classAt returns the class and width of the rune at s[i] (i < len(s)).
func classAt(s string, i int) (uint8, rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], rune(c), 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clLetter, r, w
	case unicode.IsNumber(r):
		return clNumber, r, w
	case unicode.IsSpace(r):
		return clSpace, r, w
	}
	return clOther, r, w
}

// runEnd returns the end of the run of class cl starting at i.
func runEnd(s string, i int, cl uint8) int {
	for i < len(s) {
		c, _, w := classAt(s, i)
		if c != cl {
			break
		}
		i += w
	}
	return i
}

// contraction matches 's 't 're 've 'm 'll 'd at i (s[i] == '\”);
// fold allows any case (Unicode simple folding: 'ſ' folds to 's').
func contraction(s string, i int, fold bool) int {
	j := i + 1
	if j >= len(s) {
		return -1
	}
	r, w := utf8.DecodeRuneInString(s[j:])
	if fold {
		switch r {
		case 'S', 'ſ':
			r = 's'
		case 'T', 'R', 'V', 'M', 'L', 'D', 'E':
			r += 'a' - 'A'
		}
	}
	switch r {
	case 's', 't', 'm', 'd':
		return j + w
	case 'r', 'v', 'l':
		want := byte('e')
		if r == 'l' {
			want = 'l'
		}
		if j+1 < len(s) {
			c := s[j+1]
			if fold && c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c == want {
				return j + 2
			}
		}
	}
	return -1
}

// spaceTail handles \s*[\r\n]+ | \s+(?!\S) | \s+ at a white-space rune.
func spaceTail(s string, i int, withNewlineAlt bool) int {
	e := i
	lastNL := -1
	n := 0
	lastStart := i
	for e < len(s) {
		c, r, w := classAt(s, e)
		if c != clSpace {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = e
		}
		lastStart = e
		e += w
		n++
	}
	if withNewlineAlt && lastNL >= 0 {
		return lastNL + 1
	}
	if e == len(s) || n < 2 {
		return e
	}
	return lastStart
}

// scanCL100K matches the cl100k / Qwen 2 pattern at i; maxDigits is 3 or 1.
func scanCL100K(s string, i int, maxDigits int) int {
	cl, r, w := classAt(s, i)
	if r == '\'' {
		if e := contraction(s, i, true); e >= 0 {
			return e
		}
	}
	switch cl {
	case clLetter:
		return runEnd(s, i+w, clLetter)
	case clNumber:
		e := i + w
		for k := 1; k < maxDigits && e < len(s); k++ {
			c, _, w2 := classAt(s, e)
			if c != clNumber {
				break
			}
			e += w2
		}
		return e
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ with one leading non-letter
	if r != '\r' && r != '\n' && i+w < len(s) {
		if c2, _, w2 := classAt(s, i+w); c2 == clLetter {
			return runEnd(s, i+w+w2, clLetter)
		}
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	p := i
	if r == ' ' && i+1 < len(s) {
		if c2, _, _ := classAt(s, i+1); c2 == clOther {
			p = i + 1
		}
	}
	if c, _, _ := classAt(s, p); c == clOther {
		e := runEnd(s, p, clOther)
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	}
	// cl == clSpace here
	return spaceTail(s, i, true)
}

// scanGPT2 matches GPT-2's pattern at i.
func scanGPT2(s string, i int) int {
	cl, r, w := classAt(s, i)
	if r == '\'' {
		if e := contraction(s, i, false); e >= 0 {
			return e
		}
	}
	if cl != clSpace {
		return runEnd(s, i+w, cl)
	}
	if r == ' ' && i+1 < len(s) {
		if c2, _, w2 := classAt(s, i+1); c2 != clSpace {
			return runEnd(s, i+1+w2, c2)
		}
	}
	return spaceTail(s, i, false)
}

// splitter finds the successive matches of a Split pattern.
type splitter interface {
	findAll(s string, fn func(start, end int))
}

type scanSplitter struct {
	scan func(s string, i int) int
}

func (sc scanSplitter) findAll(s string, fn func(start, end int)) {
	for i := 0; i < len(s); {
		e := sc.scan(s, i)
		if e <= i { // cannot happen on valid UTF-8; stay safe
			_, w := utf8.DecodeRuneInString(s[i:])
			e = i + w
		}
		fn(i, e)
		i = e
	}
}

type literalSplitter struct{ lit string }

func (l literalSplitter) findAll(s string, fn func(start, end int)) {
	if l.lit == "" {
		return
	}
	for i := 0; i < len(s); {
		j := indexFrom(s, l.lit, i)
		if j < 0 {
			return
		}
		fn(j, j+len(l.lit))
		i = j + len(l.lit)
	}
}

// newSplitter compiles a Split pattern, using a scanner for the known ones.
func newRegexSplitter(pattern string) (splitter, error) {
	switch pattern {
	case patCL100K:
		return scanSplitter{func(s string, i int) int { return scanCL100K(s, i, 3) }}, nil
	case patQwen2:
		return scanSplitter{func(s string, i int) int { return scanCL100K(s, i, 1) }}, nil
	case patGPT2:
		return scanSplitter{scanGPT2}, nil
	}
	re, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	return re, nil
}
