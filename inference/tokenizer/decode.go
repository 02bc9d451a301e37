package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decodeStep is one decoder of the chain: token strings in, strings out.
type decodeStep func(toks []string) []string

// appendLossy appends b as UTF-8 the way Rust's String::from_utf8_lossy
// does: each maximal ill-formed subsequence becomes one U+FFFD. tail
// reports that b ends in a truncated but so far valid sequence.
func appendLossy(dst []byte, b []byte) (out []byte, tail bool) {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		if r, w := utf8.DecodeRune(b[i:]); r != utf8.RuneError || w == 3 {
			dst = append(dst, b[i:i+w]...)
			i += w
			continue
		}
		// Length of the maximal valid prefix of a sequence starting at c.
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c >= 0xE1 && c <= 0xEC || c == 0xEE || c == 0xEF:
			need = 2
		case c == 0xED:
			need, hi = 2, 0x9F
		case c == 0xF0:
			need, lo = 3, 0x90
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		case c == 0xF4:
			need, hi = 3, 0x8F
		}
		j := i + 1
		for k := 0; k < need && j < len(b); k++ {
			if b[j] < lo || b[j] > hi {
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		if need > 0 && j == len(b) && j-i <= need {
			tail = true
		}
		dst = append(dst, "\uFFFD"...)
		i = j
	}
	return dst, tail
}

func byteLevelDecode(toks []string) []string {
	var b []byte
	for _, t := range toks {
		n := len(b)
		ok := true
		for _, r := range t {
			c, in := runeToByte[r]
			if !in {
				ok = false
				break
			}
			b = append(b, c)
		}
		if !ok {
			b = append(b[:n], t...)
		}
	}
	out, _ := appendLossy(nil, b)
	return []string{string(out)}
}

// byteFallbackByte parses "<0xXX>".
func byteFallbackByte(t string) (byte, bool) {
	if len(t) != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(t[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

func byteFallbackDecode(toks []string) []string {
	out := make([]string, 0, len(toks))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range toks {
		if b, ok := byteFallbackByte(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

func stripDecode(content rune, start, stop int) decodeStep {
	return func(toks []string) []string {
		for i, t := range toks {
			rs := []rune(t)
			a := 0
			for k := 0; k < start && k < len(rs); k++ {
				if rs[k] != content {
					break
				}
				a = k + 1
			}
			z := len(rs)
			for k := 0; k < stop; k++ {
				idx := len(rs) - k - 1
				if idx < a || rs[idx] != content {
					break
				}
				z = idx
			}
			toks[i] = string(rs[a:z])
		}
		return toks
	}
}

func metaspaceDecode(repl rune, prepend bool) decodeStep {
	return func(toks []string) []string {
		for i, t := range toks {
			var b strings.Builder
			for _, c := range t {
				if c == repl {
					if i == 0 && prepend {
						continue
					}
					c = ' '
				}
				b.WriteRune(c)
			}
			toks[i] = b.String()
		}
		return toks
	}
}

// wordpieceCleanup is HF's clean-up of tokenization spaces: replacements
// applied one after the other, each over the whole text.
func wordpieceCleanup(s string) string {
	for _, r := range [...][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

func parseDecoder(raw []byte) (decodeStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		Type          string            `json:"type"`
		Decoders      []json.RawMessage `json:"decoders"`
		Pattern       patternJSON       `json:"pattern"`
		Content       *string           `json:"content"`
		Start         int               `json:"start"`
		Stop          int               `json:"stop"`
		Replacement   string            `json:"replacement"`
		PrependScheme string            `json:"prepend_scheme"`
		AddPrefix     *bool             `json:"add_prefix_space"`
		Suffix        *string           `json:"suffix"`
		Prefix        *string           `json:"prefix"`
		Cleanup       *bool             `json:"cleanup"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch c.Type {
	case "ByteLevel":
		return byteLevelDecode, nil
	case "ByteFallback":
		return byteFallbackDecode, nil
	case "Fuse":
		return func(toks []string) []string { return []string{strings.Join(toks, "")} }, nil
	case "Strip":
		if c.Content == nil || utf8.RuneCountInString(*c.Content) != 1 {
			return nil, fmt.Errorf("decoder Strip: content must be one character")
		}
		r, _ := utf8.DecodeRuneInString(*c.Content)
		return stripDecode(r, c.Start, c.Stop), nil
	case "Replace":
		content := ""
		if c.Content != nil {
			content = *c.Content
		}
		rp, err := newReplacer(c.Pattern, content)
		if err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		return func(toks []string) []string {
			for i, t := range toks {
				toks[i] = rp.apply(t)
			}
			return toks
		}, nil
	case "Metaspace":
		if utf8.RuneCountInString(c.Replacement) != 1 {
			return nil, fmt.Errorf("decoder Metaspace: replacement %q is not one character", c.Replacement)
		}
		r, _ := utf8.DecodeRuneInString(c.Replacement)
		prepend := c.PrependScheme != "never"
		if c.AddPrefix != nil && !*c.AddPrefix {
			prepend = false
		}
		return metaspaceDecode(r, prepend), nil
	case "BPEDecoder":
		suffix := "</w>"
		if c.Suffix != nil {
			suffix = *c.Suffix
		}
		return func(toks []string) []string {
			for i, t := range toks {
				rep := " "
				if i == len(toks)-1 {
					rep = ""
				}
				toks[i] = strings.ReplaceAll(t, suffix, rep)
			}
			return toks
		}, nil
	case "WordPiece":
		prefix := "##"
		if c.Prefix != nil {
			prefix = *c.Prefix
		}
		cleanup := c.Cleanup == nil || *c.Cleanup
		return func(toks []string) []string {
			for i, t := range toks {
				if i != 0 {
					if strings.HasPrefix(t, prefix) {
						t = t[len(prefix):]
					} else {
						t = " " + t
					}
				}
				if cleanup {
					t = wordpieceCleanup(t)
				}
				toks[i] = t
			}
			return toks
		}, nil
	case "Sequence":
		var seq []decodeStep
		for _, r := range c.Decoders {
			d, err := parseDecoder(r)
			if err != nil {
				return nil, err
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return func(toks []string) []string {
			for _, d := range seq {
				toks = d(toks)
			}
			return toks
		}, nil
	case "":
		return nil, fmt.Errorf("decoder without a type")
	}
	return nil, fmt.Errorf("unsupported decoder type %q", c.Type)
}

// hasByteFallback reports whether a decoder object uses ByteFallback.
func hasByteFallback(raw []byte) bool {
	return strings.Contains(string(raw), `"ByteFallback"`)
}
