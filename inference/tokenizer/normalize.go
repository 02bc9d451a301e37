package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a piece of input text before pre-tokenization.
type normalizer func(string) string

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// replacer replaces every match of a Replace pattern.
type replacer struct {
	lit     string
	re      *Regexp
	content string
}

func newReplacer(p patternJSON, content string) (*replacer, error) {
	switch {
	case p.String != nil:
		return &replacer{lit: *p.String, content: content}, nil
	case p.Regex != nil:
		re, err := compileRegex(*p.Regex)
		if err != nil {
			return nil, err
		}
		return &replacer{re: re, content: content}, nil
	}
	return nil, fmt.Errorf("pattern needs a String or a Regex")
}

func (r *replacer) apply(s string) string {
	if r.re == nil {
		if r.lit == "" || !strings.Contains(s, r.lit) {
			return s
		}
		return strings.ReplaceAll(s, r.lit, r.content)
	}
	var b strings.Builder
	last := 0
	r.re.findAll(s, func(start, end int) {
		b.WriteString(s[last:start])
		b.WriteString(r.content)
		last = end
	})
	if last == 0 && b.Len() == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// lowerRune is Rust's char::to_lowercase: the simple mapping except for
// U+0130, whose full lowercase is "i\u0307".
func lowercase(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 0x130 {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func isCombiningMark(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me)
}

func filterRunes(s string, drop func(rune) bool) string {
	var b strings.Builder
	for _, r := range s {
		if !drop(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isChineseChar(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

func bertNormalizer(cleanText, chinese bool, stripAccents *bool, lower bool) normalizer {
	strip := lower
	if stripAccents != nil {
		strip = *stripAccents
	}
	return func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if cleanText {
				if r == 0 || r == 0xFFFD || (r != '\t' && r != '\n' && r != '\r' && unicode.In(r, unicode.Cc, unicode.Cf)) {
					continue
				}
				if unicode.IsSpace(r) {
					r = ' '
				}
			}
			if chinese && isChineseChar(r) {
				b.WriteByte(' ')
				b.WriteRune(r)
				b.WriteByte(' ')
				continue
			}
			b.WriteRune(r)
		}
		out := b.String()
		if strip {
			out = filterRunes(norm.NFD.String(out), func(r rune) bool { return unicode.Is(unicode.Mn, r) })
		}
		if lower {
			out = lowercase(out)
		}
		return out
	}
}

// parseNormalizer builds a normalizer from its tokenizer.json object.
func parseNormalizer(raw []byte) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		Type             string            `json:"type"`
		Normalizers      []json.RawMessage `json:"normalizers"`
		Pattern          patternJSON       `json:"pattern"`
		Content          string            `json:"content"`
		Prepend          string            `json:"prepend"`
		StripLeft        bool              `json:"strip_left"`
		StripRight       bool              `json:"strip_right"`
		CleanText        bool              `json:"clean_text"`
		HandleChinese    bool              `json:"handle_chinese_chars"`
		StripAccents     *bool             `json:"strip_accents"`
		Lowercase        bool              `json:"lowercase"`
		PrecompiledChars *string           `json:"precompiled_charsmap"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return lowercase, nil
	case "StripAccents":
		return func(s string) string { return filterRunes(s, isCombiningMark) }, nil
	case "Strip":
		l, r := c.StripLeft, c.StripRight
		return func(s string) string {
			if l {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if r {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	case "Prepend":
		p := c.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Replace":
		rp, err := newReplacer(c.Pattern, c.Content)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		return rp.apply, nil
	case "BertNormalizer":
		return bertNormalizer(c.CleanText, c.HandleChinese, c.StripAccents, c.Lowercase), nil
	case "ByteLevel":
		return func(s string) string { return string(appendByteLevel(nil, s)) }, nil
	case "Precompiled":
		if c.PrecompiledChars == nil || *c.PrecompiledChars == "" {
			return func(s string) string { return s }, nil
		}
		return nil, fmt.Errorf("unsupported normalizer type %q (a SentencePiece precompiled charsmap)", c.Type)
	case "Sequence":
		var seq []normalizer
		for _, r := range c.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return func(s string) string {
			for _, n := range seq {
				s = n(s)
			}
			return s
		}, nil
	case "":
		return nil, fmt.Errorf("normalizer without a type")
	}
	return nil, fmt.Errorf("unsupported normalizer type %q", c.Type)
}
