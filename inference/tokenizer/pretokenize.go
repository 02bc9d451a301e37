package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is a span of (normalized) text on its way to the model.
type piece struct {
	s string
	// first: the piece begins at the start of the input (for Metaspace's
	// prepend_scheme "first").
	first bool
	// mapped: s is still plain text that the ByteLevel pre-tokenizer has
	// claimed; the model maps its bytes to the byte-level alphabet.
	mapped bool
	// added is an added token's id plus one; 0 for text.
	added int32
}

// preTokenizer appends the pieces p splits into to dst.
type preTokenizer func(dst []piece, p piece) []piece

// ---- byte-level alphabet

var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
	// byteLevelStr[b] is the UTF-8 of byteToRune[b].
	byteLevelStr [256]string
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
		byteLevelStr[b] = string(byteToRune[b])
	}
}

func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = utf8.AppendRune(dst, byteToRune[s[i]])
	}
	return dst
}

func materialize(p piece) piece {
	if p.mapped {
		p.s = string(appendByteLevel(nil, p.s))
		p.mapped = false
	}
	return p
}

// ---- splitting with HF's SplitDelimiterBehavior

type behavior uint8

const (
	bRemoved behavior = iota
	bIsolated
	bMergedWithPrevious
	bMergedWithNext
	bContiguous
)

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Removed":
		return bRemoved, nil
	case "Isolated", "":
		return bIsolated, nil
	case "MergedWithPrevious":
		return bMergedWithPrevious, nil
	case "MergedWithNext":
		return bMergedWithNext, nil
	case "Contiguous":
		return bContiguous, nil
	}
	return 0, fmt.Errorf("unknown split behavior %q", s)
}

type span struct {
	start, end int
	match      bool
}

// spansOf lists the matches of f in s and the gaps between them.
func spansOf(f splitter, s string, invert bool) []span {
	var out []span
	prev := 0
	f.findAll(s, func(start, end int) {
		if prev != start {
			out = append(out, span{prev, start, invert})
		}
		out = append(out, span{start, end, !invert})
		prev = end
	})
	if prev != len(s) {
		out = append(out, span{prev, len(s), invert})
	}
	return out
}

// charSpans is HF's split on a character predicate: every matching
// character is its own match.
func charSpans(s string, pred func(rune) bool) []span {
	var out []span
	last := 0
	for i, r := range s {
		if pred(r) {
			if last < i {
				out = append(out, span{last, i, false})
			}
			w := utf8.RuneLen(r)
			if w < 0 {
				w = 1
			}
			out = append(out, span{i, i + w, true})
			last = i + w
		}
	}
	if last < len(s) {
		out = append(out, span{last, len(s), false})
	}
	return out
}

// applySplit turns spans into pieces according to the behavior.
func applySplit(dst []piece, p piece, spans []span, b behavior) []piece {
	type rng struct{ start, end int }
	var rs []rng
	switch b {
	case bIsolated:
		for _, sp := range spans {
			rs = append(rs, rng{sp.start, sp.end})
		}
	case bRemoved:
		for _, sp := range spans {
			if !sp.match {
				rs = append(rs, rng{sp.start, sp.end})
			}
		}
	case bContiguous:
		prevMatch := false
		for i, sp := range spans {
			if i > 0 && sp.match == prevMatch {
				rs[len(rs)-1].end = sp.end
			} else {
				rs = append(rs, rng{sp.start, sp.end})
			}
			prevMatch = sp.match
		}
	case bMergedWithPrevious:
		prevMatch := false
		for _, sp := range spans {
			if sp.match && !prevMatch && len(rs) > 0 {
				rs[len(rs)-1].end = sp.end
			} else {
				rs = append(rs, rng{sp.start, sp.end})
			}
			prevMatch = sp.match
		}
	case bMergedWithNext:
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prevMatch && len(rs) > 0 {
				rs[len(rs)-1].start = sp.start
			} else {
				rs = append(rs, rng{sp.start, sp.end})
			}
			prevMatch = sp.match
		}
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
	}
	for _, r := range rs {
		if r.end > r.start {
			dst = append(dst, piece{s: p.s[r.start:r.end], first: p.first && r.start == 0, mapped: p.mapped})
		}
	}
	return dst
}

// ---- pre-tokenizers

func splitPre(f splitter, b behavior, invert bool) preTokenizer {
	if b == bIsolated && !invert {
		// The common case, without building a span list.
		return func(dst []piece, p piece) []piece {
			p = materialize(p)
			prev := 0
			f.findAll(p.s, func(start, end int) {
				if prev < start {
					dst = append(dst, piece{s: p.s[prev:start], first: p.first && prev == 0})
				}
				if end > start {
					dst = append(dst, piece{s: p.s[start:end], first: p.first && start == 0})
				}
				prev = end
			})
			if prev < len(p.s) {
				dst = append(dst, piece{s: p.s[prev:], first: p.first && prev == 0})
			}
			return dst
		}
	}
	return func(dst []piece, p piece) []piece {
		p = materialize(p)
		return applySplit(dst, p, spansOf(f, p.s, invert), b)
	}
}

func charPre(pred func(rune) bool, b behavior) preTokenizer {
	return func(dst []piece, p piece) []piece {
		p = materialize(p)
		return applySplit(dst, p, charSpans(p.s, pred), b)
	}
}

func isPunct(r rune) bool {
	return r < utf8.RuneSelf && (r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~') ||
		unicode.IsPunct(r)
}

// isRustWord is the Unicode \w of Rust's regex crate.
func isRustWord(r rune) bool {
	return isAlphabetic(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me, unicode.Nd, unicode.Pc) ||
		r == 0x200C || r == 0x200D
}

// whitespacePre is HF's Whitespace pre-tokenizer: the matches of
// \w+|[^\w\s]+, everything else dropped.
func whitespacePre(dst []piece, p piece) []piece {
	p = materialize(p)
	s := p.s
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			i += w
			continue
		}
		word := isRustWord(r)
		j := i + w
		for j < len(s) {
			r2, w2 := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r2) || isRustWord(r2) != word {
				break
			}
			j += w2
		}
		dst = append(dst, piece{s: s[i:j], first: p.first && i == 0})
		i = j
	}
	return dst
}

func byteLevelPre(addPrefixSpace, useRegex bool) preTokenizer {
	gpt2 := scanSplitter{scanGPT2}
	return func(dst []piece, p piece) []piece {
		p = materialize(p)
		if addPrefixSpace && !strings.HasPrefix(p.s, " ") {
			p.s = " " + p.s
		}
		if !useRegex {
			p.mapped = true
			return append(dst, p)
		}
		n := len(dst)
		dst = splitPre(gpt2, bIsolated, false)(dst, p)
		for i := n; i < len(dst); i++ {
			dst[i].mapped = true
		}
		return dst
	}
}

func metaspacePre(repl string, scheme string, split bool) preTokenizer {
	return func(dst []piece, p piece) []piece {
		p = materialize(p)
		s := strings.ReplaceAll(p.s, " ", repl)
		switch scheme {
		case "always":
			if !strings.HasPrefix(s, repl) {
				s = repl + s
			}
		case "first":
			if !strings.HasPrefix(s, repl) && p.first {
				s = repl + s
			}
		}
		q := piece{s: s, first: p.first}
		if !split {
			return append(dst, q)
		}
		r, _ := utf8.DecodeRuneInString(repl)
		return applySplit(dst, q, charSpans(s, func(c rune) bool { return c == r }), bMergedWithNext)
	}
}

func parsePreTokenizer(raw []byte) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		Type           string            `json:"type"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		Pattern        patternJSON       `json:"pattern"`
		Behavior       string            `json:"behavior"`
		Invert         bool              `json:"invert"`
		AddPrefixSpace *bool             `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
		Replacement    string            `json:"replacement"`
		PrependScheme  string            `json:"prepend_scheme"`
		Split          *bool             `json:"split"`
		Individual     bool              `json:"individual_digits"`
		Delimiter      string            `json:"delimiter"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var seq []preTokenizer
		for _, r := range c.Pretokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, err
			}
			if p != nil {
				seq = append(seq, p)
			}
		}
		if len(seq) == 0 {
			return nil, nil
		}
		return func(dst []piece, p piece) []piece {
			// Stage by stage; the last one writes to dst directly.
			cur := []piece{p}
			// Sized for the pieces of long text (growing would copy).
			next := make([]piece, 0, len(p.s)/2+1)
			for _, st := range seq[:len(seq)-1] {
				next = next[:0]
				for _, q := range cur {
					next = st(next, q)
				}
				cur, next = next, cur
			}
			last := seq[len(seq)-1]
			for _, q := range cur {
				dst = last(dst, q)
			}
			return dst
		}, nil
	case "Split":
		b, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		var f splitter
		switch {
		case c.Pattern.String != nil:
			f = literalSplitter{*c.Pattern.String}
		case c.Pattern.Regex != nil:
			f, err = newRegexSplitter(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
			}
		default:
			return nil, fmt.Errorf("pre_tokenizer Split: no pattern")
		}
		return splitPre(f, b, c.Invert), nil
	case "ByteLevel":
		aps, ur := true, true
		if c.AddPrefixSpace != nil {
			aps = *c.AddPrefixSpace
		}
		if c.UseRegex != nil {
			ur = *c.UseRegex
		}
		return byteLevelPre(aps, ur), nil
	case "Metaspace":
		repl := c.Replacement
		if utf8.RuneCountInString(repl) != 1 {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: replacement %q is not one character", repl)
		}
		scheme := c.PrependScheme
		if scheme == "" {
			scheme = "always"
		}
		if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			scheme = "never"
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: unknown prepend_scheme %q", scheme)
		}
		split := c.Split == nil || *c.Split
		return metaspacePre(repl, scheme, split), nil
	case "Digits":
		b := bContiguous
		if c.Individual {
			b = bIsolated
		}
		return charPre(unicode.IsNumber, b), nil
	case "Punctuation":
		b, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Punctuation: %w", err)
		}
		return charPre(isPunct, b), nil
	case "Whitespace":
		return whitespacePre, nil
	case "WhitespaceSplit":
		return charPre(unicode.IsSpace, bRemoved), nil
	case "CharDelimiterSplit":
		d, _ := utf8.DecodeRuneInString(c.Delimiter)
		if utf8.RuneCountInString(c.Delimiter) != 1 {
			return nil, fmt.Errorf("pre_tokenizer CharDelimiterSplit: delimiter %q is not one character", c.Delimiter)
		}
		return charPre(func(r rune) bool { return r == d }, bRemoved), nil
	case "BertPreTokenizer":
		ws := charPre(unicode.IsSpace, bRemoved)
		pu := charPre(isPunct, bIsolated)
		return func(dst []piece, p piece) []piece {
			for _, q := range ws(nil, p) {
				dst = pu(dst, q)
			}
			return dst
		}, nil
	case "":
		return nil, fmt.Errorf("pre_tokenizer without a type")
	}
	return nil, fmt.Errorf("unsupported pre_tokenizer type %q", c.Type)
}

func indexFrom(s, sub string, i int) int {
	j := strings.Index(s[i:], sub)
	if j < 0 {
		return -1
	}
	return i + j
}
