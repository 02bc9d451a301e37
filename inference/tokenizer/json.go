package tokenizer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The bulk of a tokenizer.json is the model's vocabulary and merges (for
// Gemma 3, 33 MB of them). encoding/json would scan that twice and allocate
// generously, so the top level and the model are split into raw fields by a
// small scanner here, the vocabulary and merges are decoded by hand, and
// only the small component objects go through encoding/json.

type rawField struct {
	key string
	val []byte
	sub []rawField // the fields of val when objectFieldsAt descended into it
}

// jsonErr is a syntax error at a byte offset.
func jsonErr(off int, msg string) error {
	return fmt.Errorf("tokenizer.json: invalid JSON at byte %d: %s", off, msg)
}

func skipWS(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ':
			// Pretty-printed files indent with runs of spaces: up to
			// eight at a time.
			if i+8 <= len(d) {
				if x := binary.LittleEndian.Uint64(d[i:]) ^ 0x2020202020202020; x != 0 {
					i += bits.TrailingZeros64(x) >> 3
				} else {
					i += 8
				}
				continue
			}
			i++
		case '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the end offset of the JSON value starting at i (after
// white space).
func skipValue(d []byte, i int) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) {
		return 0, jsonErr(i, "unexpected end of input")
	}
	switch c := d[i]; {
	case c == '"':
		return skipString(d, i)
	case c == '{' || c == '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				e, err := skipString(d, i)
				if err != nil {
					return 0, err
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, jsonErr(i, "unterminated object or array")
	default:
		j := i
		for j < len(d) {
			switch d[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return 0, jsonErr(i, "unexpected character")
				}
				return j, nil
			}
			j++
		}
		return j, nil
	}
}

func skipString(d []byte, i int) (int, error) {
	// d[i] == '"'
	for j := i + 1; j < len(d); {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		// The quote ends the string unless an odd number of backslashes
		// precede it.
		n := 0
		for p := q - 1; p > i && d[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
	return 0, jsonErr(i, "unterminated string")
}

// parseString decodes the JSON string at d[i] and returns it with the
// offset after it.
func parseString(d []byte, i int) (string, int, error) {
	return parseStr(d, i, false)
}

// parseStr is parseString; with view, a string without escapes shares
// d's memory (only for strings that do not outlive d, unmodified).
func parseStr(d []byte, i int, view bool) (string, int, error) {
	i = skipWS(d, i)
	if i >= len(d) || d[i] != '"' {
		return "", 0, jsonErr(i, "expected a string")
	}
	j := i + 1
	for j < len(d) && d[j] != '"' && d[j] != '\\' {
		j++
	}
	if j < len(d) && d[j] == '"' {
		if view && j > i+1 {
			return unsafe.String(&d[i+1], j-i-1), j + 1, nil
		}
		return string(d[i+1 : j]), j + 1, nil
	}
	buf := make([]byte, 0, j-i+16)
	buf = append(buf, d[i+1:j]...)
	for j < len(d) {
		c := d[j]
		switch {
		case c == '"':
			return string(buf), j + 1, nil
		case c == '\\':
			if j+1 >= len(d) {
				return "", 0, jsonErr(j, "bad escape")
			}
			e := d[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, n, ok := hex4(d, j)
				if !ok {
					return "", 0, jsonErr(j, "bad \\u escape")
				}
				j = n
				if utf16.IsSurrogate(r) {
					if r2, n2, ok2 := lowSurrogate(d, j); ok2 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r, j = dec, n2
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", 0, jsonErr(j-2, "bad escape")
			}
		default:
			buf = append(buf, c)
			j++
		}
	}
	return "", 0, jsonErr(i, "unterminated string")
}

func hex4(d []byte, j int) (rune, int, bool) {
	if j+4 > len(d) {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(string(d[j:j+4]), 16, 32)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), j + 4, true
}

func lowSurrogate(d []byte, j int) (rune, int, bool) {
	if j+6 > len(d) || d[j] != '\\' || d[j+1] != 'u' {
		return 0, 0, false
	}
	r, n, ok := hex4(d, j+2)
	if !ok || r < 0xDC00 || r > 0xDFFF {
		return 0, 0, false
	}
	return r, n, true
}

// objectFields splits a JSON object into its fields (values kept raw).
func objectFields(d []byte) ([]rawField, error) {
	fs, _, err := objectFieldsAt(d, 0, "")
	return fs, err
}

// objectFieldsAt splits the object at d[i:] into fields and returns its
// end; the value of the field named descend, if an object, is split too
// (in the same pass: the model's object is most of the file).
func objectFieldsAt(d []byte, i int, descend string) ([]rawField, int, error) {
	return objectFieldsHook(d, i, descend, nil, nil)
}

// fieldHook parses the value of field key at d[s:] itself and returns its
// end; ok false leaves it to be skipped.
type fieldHook func(key string, d []byte, s int) (end int, ok bool)

// objectFieldsHook is objectFieldsAt with hook for the fields of this
// object and inner for those of the object descended into.
func objectFieldsHook(d []byte, i int, descend string, hook, inner fieldHook) ([]rawField, int, error) {
	i = skipWS(d, i)
	if i >= len(d) || d[i] != '{' {
		return nil, 0, jsonErr(i, "expected an object")
	}
	i++
	var out []rawField
	i = skipWS(d, i)
	if i < len(d) && d[i] == '}' {
		return out, i + 1, nil
	}
	for {
		k, n, err := parseString(d, i)
		if err != nil {
			return nil, 0, err
		}
		i = skipWS(d, n)
		if i >= len(d) || d[i] != ':' {
			return nil, 0, jsonErr(i, "expected ':'")
		}
		s := skipWS(d, i+1)
		var e int
		var sub []rawField
		hooked := false
		if hook != nil {
			e, hooked = hook(k, d, s)
		}
		switch {
		case hooked:
		case descend != "" && k == descend && s < len(d) && d[s] == '{':
			sub, e, err = objectFieldsHook(d, s, "", inner, nil)
		default:
			e, err = skipValue(d, s)
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, rawField{k, d[s:e], sub})
		i = skipWS(d, e)
		if i >= len(d) {
			return nil, 0, jsonErr(i, "unterminated object")
		}
		if d[i] == '}' {
			return out, i + 1, nil
		}
		if d[i] != ',' {
			return nil, 0, jsonErr(i, "expected ',' or '}'")
		}
		i++
	}
}

func subFields(fs []rawField, key string) []rawField {
	for _, f := range fs {
		if f.key == key {
			return f.sub
		}
	}
	return nil
}

func field(fs []rawField, key string) []byte {
	for _, f := range fs {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// maxTokenID bounds token ids (tables are indexed by id).
const maxTokenID = 1 << 24

// sparseLimit bounds the highest id of n tokens: tables are indexed by id,
// and real vocabularies have few holes.
func sparseLimit(n int) int { return 4*n + 1<<16 }

func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// parseVocab decodes {"token": id, ...} into a table and its inverse.
func parseVocab(d []byte) (*vocabTable, []string, error) {
	v, ids, _, err := parseVocabAt(d, 0, len(d))
	return v, ids, err
}

// parseVocabAt is parseVocab for the object at d[i:], about sizeHint
// bytes long; it also returns the object's end.
func parseVocabAt(d []byte, i, sizeHint int) (*vocabTable, []string, int, error) {
	i = skipWS(d, i)
	if i >= len(d) || d[i] != '{' {
		return nil, nil, 0, fmt.Errorf("tokenizer.json: model.vocab is not an object")
	}
	start := i
	// Keys without escapes share one copy of the vocabulary's text
	// instead of one allocation each: while parsing they are views of d,
	// moved to the copy at the end (and offsets count from start).
	d0 := d
	d = d[start:]
	if len(d) >= escBit {
		return nil, nil, 0, fmt.Errorf("tokenizer.json: model.vocab is too large")
	}
	arena := unsafe.String(&d[0], len(d))
	vocab := newVocabTable(arena, min(len(d), sizeHint)/24)
	idToTok := make([]string, 0, min(len(d), sizeHint)/24)
	entries := 0
	i = skipWS(d, 1)
	// shared: some id has two keys, or a key is empty (then the
	// vocabulary's text is copied whole rather than its keys alone).
	shared := false
	finish := func(end int) (*vocabTable, []string, int, error) {
		base := uintptr(unsafe.Pointer(&d[0]))
		view := func(t string) (int, bool) {
			p := uintptr(unsafe.Pointer(unsafe.StringData(t)))
			return int(p - base), t != "" && p >= base && p-base < uintptr(end)
		}
		if shared {
			vocab.arena = string(d[:end])
			for id, t := range idToTok {
				if off, ok := view(t); ok {
					idToTok[id] = vocab.arena[off : off+len(t)]
				}
			}
			return &vocab, idToTok, start + end, nil
		}
		// Copy the keys alone, in id order, and point the table at them.
		n := 0
		for _, t := range idToTok {
			if _, ok := view(t); ok {
				n += len(t)
			}
		}
		buf := make([]byte, 0, n)
		newOff := make([]uint32, len(idToTok))
		for id, t := range idToTok {
			if _, ok := view(t); ok {
				newOff[id] = uint32(len(buf))
				buf = append(buf, t...)
			}
		}
		arena := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
		for id, t := range idToTok {
			if _, ok := view(t); ok {
				idToTok[id] = arena[newOff[id] : newOff[id]+uint32(len(t))]
			}
		}
		for i := range vocab.slots {
			if sl := &vocab.slots[i]; sl.id != 0 && sl.n&escBit == 0 {
				sl.off = newOff[sl.id-1]
			}
		}
		vocab.arena = arena
		return &vocab, idToTok, start + end, nil
	}
	if i < len(d) && d[i] == '}' {
		return finish(i + 1)
	}
	// Keys go in by batches (vslot.id holding the id, not plus one).
	var batch [64]vslot
	nb := 0
	for {
		var k string
		var n int
		var koff, klen uint32
		i = skipWS(d, i)
		j := i + 1
		for j < len(d) && d[j] != '"' && d[j] != '\\' {
			j++
		}
		if i < len(d) && d[i] == '"' && j < len(d) && d[j] == '"' {
			k, n = arena[i+1:j], j+1
			koff, klen = uint32(i+1), uint32(j-i-1)
		} else {
			var err error
			if k, n, err = parseString(d0, start+i); err != nil {
				return nil, nil, 0, err
			}
			n -= start
			koff, klen = uint32(len(vocab.esc)), escBit
			vocab.esc = append(vocab.esc, k)
		}
		i = skipWS(d, n)
		if i >= len(d) || d[i] != ':' {
			return nil, nil, 0, jsonErr(start+i, "expected ':'")
		}
		i = skipWS(d, i+1)
		j = i
		id := 0
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			id = id*10 + int(d[j]-'0')
			if id >= maxTokenID {
				return nil, nil, 0, jsonErr(start+i, "vocabulary id out of range")
			}
			j++
		}
		if j == i {
			return nil, nil, 0, jsonErr(start+i, fmt.Sprintf("vocabulary id of %q is not a non-negative integer", k))
		}
		batch[nb] = vslot{off: koff, n: klen, id: int32(id)}
		if nb++; nb == len(batch) {
			vocab.putBatch(batch[:])
			nb = 0
		}
		entries++
		if k == "" || id < len(idToTok) && idToTok[id] != "" {
			shared = true
		}
		if id >= len(idToTok) {
			// Refuse an id the final sparseness check must refuse
			// before making a table for it: fewer entries are left than
			// bytes/4, so a tiny file cannot claim a 16M-entry table.
			if id >= sparseLimit(entries+(len(d)-j)/4+1) {
				return nil, nil, 0, jsonErr(start+i, fmt.Sprintf("vocabulary id %d of %q: ids too sparse for the entries the file can hold", id, k))
			}
			if id < cap(idToTok) {
				idToTok = idToTok[:id+1] // zero from make
			} else {
				idToTok = append(idToTok, make([]string, id+1-len(idToTok))...)
			}
		}
		idToTok[id] = k
		i = skipWS(d, j)
		if i >= len(d) {
			return nil, nil, 0, jsonErr(start+i, "unterminated vocab")
		}
		if d[i] == '}' {
			vocab.putBatch(batch[:nb])
			if len(idToTok) > sparseLimit(entries) {
				return nil, nil, 0, fmt.Errorf("tokenizer.json: model.vocab: highest id %d for %d entries: ids too sparse", len(idToTok)-1, entries)
			}
			if entries != vocab.len() { // a repeated key: the table has the last
				vocab.arena = string(d[:i+1])
				clear(idToTok)
				vocab.all(func(t string, id int) { idToTok[id] = t })
				return &vocab, idToTok, start + i + 1, nil
			}
			return finish(i + 1)
		}
		if d[i] != ',' {
			return nil, nil, 0, jsonErr(start+i, "expected ',' or '}'")
		}
		i++
	}
}

// parseMergesAt decodes the array ["a b", ...] or [["a","b"], ...] at d[i:]
// calling fn for each merge in rank order, and returns the array's end.
func parseMergesAt(d []byte, i int, fn func(a, b string) error) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) || d[i] != '[' {
		return 0, fmt.Errorf("tokenizer.json: model.merges is not an array")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	rank := 0
	for {
		i = skipWS(d, i)
		if i >= len(d) {
			return 0, jsonErr(i, "unterminated merges")
		}
		var a, b string
		if d[i] == '"' {
			s, n, err := parseStr(d, i, true)
			if err != nil {
				return 0, err
			}
			i = n
			// Files written by old versions may carry a "#version" line.
			if len(s) >= 8 && s[:8] == "#version" {
				goto next
			}
			sp := -1
			for k := 0; k < len(s); k++ {
				if s[k] == ' ' {
					if sp >= 0 {
						sp = -2
						break
					}
					sp = k
				}
			}
			if sp < 0 {
				return 0, fmt.Errorf("tokenizer.json: merge %d %q is not two tokens separated by one space", rank, s)
			}
			a, b = s[:sp], s[sp+1:]
		} else if d[i] == '[' {
			var err error
			a, i, err = parseStr(d, i+1, true)
			if err != nil {
				return 0, err
			}
			i = skipWS(d, i)
			if i >= len(d) || d[i] != ',' {
				return 0, fmt.Errorf("tokenizer.json: merge %d is not a pair of strings", rank)
			}
			b, i, err = parseStr(d, i+1, true)
			if err != nil {
				return 0, err
			}
			i = skipWS(d, i)
			if i >= len(d) || d[i] != ']' {
				return 0, fmt.Errorf("tokenizer.json: merge %d is not a pair of strings", rank)
			}
			i++
		} else {
			return 0, jsonErr(i, "a merge must be a string or a pair of strings")
		}
		if err := fn(a, b); err != nil {
			return 0, err
		}
		rank++
	next:
		i = skipWS(d, i)
		if i >= len(d) {
			return 0, jsonErr(i, "unterminated merges")
		}
		if d[i] == ']' {
			return i + 1, nil
		}
		if d[i] != ',' {
			return 0, jsonErr(i, "expected ',' or ']'")
		}
		i++
	}
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }
