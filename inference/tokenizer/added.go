package tokenizer

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's added_tokens.
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// trie matches added tokens leftmost-longest.
type trie struct {
	nodes []trieNode
	first [256]bool
}

type trieNode struct {
	next map[byte]int32
	tok  int32 // index into the token list, -1 if none
}

func newTrie() *trie {
	return &trie{nodes: []trieNode{{tok: -1}}}
}

func (t *trie) add(s string, tok int) {
	if s == "" {
		return
	}
	t.first[s[0]] = true
	n := int32(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		nx, ok := t.nodes[n].next[c]
		if !ok {
			if t.nodes[n].next == nil {
				t.nodes[n].next = map[byte]int32{}
			}
			nx = int32(len(t.nodes))
			t.nodes[n].next[c] = nx
			t.nodes = append(t.nodes, trieNode{tok: -1})
		}
		n = nx
	}
	t.nodes[n].tok = int32(tok)
}

// find returns the leftmost-longest match at or after i.
func (t *trie) find(s string, i int) (start, end, tok int) {
	for ; i < len(s); i++ {
		if !t.first[s[i]] {
			continue
		}
		n, best, bestEnd := int32(0), int32(-1), 0
		for j := i; j < len(s); j++ {
			nx, ok := t.nodes[n].next[s[j]]
			if !ok {
				break
			}
			n = nx
			if t.nodes[n].tok >= 0 {
				best, bestEnd = t.nodes[n].tok, j+1
			}
		}
		if best >= 0 {
			return i, bestEnd, int(best)
		}
	}
	return -1, -1, -1
}

// segment is a stretch of input: an added token, or text.
type segment struct {
	s     string
	id    int // -1 for text
	first bool
}

// splitAdded splits text on the added tokens of tr, as HF's
// AddedVocabulary::find_matches does.
func (t *Tokenizer) splitAdded(dst []segment, seg segment, tr *trie) []segment {
	s := seg.s
	if tr == nil || s == "" {
		return append(dst, seg)
	}
	startOffset := 0
	for pos := 0; pos < len(s); {
		start, stop, k := tr.find(s, pos)
		if k < 0 {
			break
		}
		pos = stop
		at := &t.added[k]
		if at.SingleWord {
			before := start == 0 || !endsWithWord(s[:start])
			after := stop == len(s) || !startsWithWord(s[stop:])
			if !before || !after {
				continue
			}
		}
		if at.LStrip {
			ns := start
			for ns > 0 {
				r, w := utf8.DecodeLastRuneInString(s[:ns])
				if !unicode.IsSpace(r) {
					break
				}
				ns -= w
			}
			start = max(ns, startOffset)
		}
		if at.RStrip {
			for stop < len(s) {
				r, w := utf8.DecodeRuneInString(s[stop:])
				if !unicode.IsSpace(r) {
					break
				}
				stop += w
			}
			pos = stop
		}
		if startOffset < start {
			dst = append(dst, segment{s: s[startOffset:start], id: -1, first: seg.first && startOffset == 0})
		}
		dst = append(dst, segment{s: s[start:stop], id: at.ID})
		startOffset = stop
	}
	if startOffset < len(s) {
		dst = append(dst, segment{s: s[startOffset:], id: -1, first: seg.first && startOffset == 0})
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isRustWord(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isRustWord(r)
}

// ---- post-processor

// postProcessor adds the special tokens of add_special_tokens=True.
type postProcessor struct {
	prefix, suffix []int
}

func parsePostProcessor(raw []byte) (*postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
		Sep []json.RawMessage `json:"sep"`
		Cls []json.RawMessage `json:"cls"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	switch c.Type {
	case "ByteLevel":
		return &postProcessor{}, nil
	case "TemplateProcessing":
		pp := &postProcessor{}
		seen := false
		for _, p := range c.Single {
			switch {
			case p.Sequence != nil:
				if seen {
					return nil, fmt.Errorf("post_processor TemplateProcessing: more than one sequence in the single template")
				}
				seen = true
			case p.SpecialToken != nil:
				st, ok := c.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("post_processor TemplateProcessing: special token %q not defined", p.SpecialToken.ID)
				}
				if seen {
					pp.suffix = append(pp.suffix, st.IDs...)
				} else {
					pp.prefix = append(pp.prefix, st.IDs...)
				}
			default:
				return nil, fmt.Errorf("post_processor TemplateProcessing: unknown template piece")
			}
		}
		if !seen {
			return nil, fmt.Errorf("post_processor TemplateProcessing: the single template has no sequence")
		}
		return pp, nil
	case "RobertaProcessing", "BertProcessing":
		pair := func(r []json.RawMessage, name string) (int, error) {
			if len(r) != 2 {
				return 0, fmt.Errorf("post_processor %s: %s must be [token, id]", c.Type, name)
			}
			var id int
			if err := json.Unmarshal(r[1], &id); err != nil {
				return 0, fmt.Errorf("post_processor %s: %s: %w", c.Type, name, err)
			}
			return id, nil
		}
		cls, err := pair(c.Cls, "cls")
		if err != nil {
			return nil, err
		}
		sep, err := pair(c.Sep, "sep")
		if err != nil {
			return nil, err
		}
		return &postProcessor{prefix: []int{cls}, suffix: []int{sep}}, nil
	case "Sequence":
		pp := &postProcessor{}
		for _, r := range c.Processors {
			q, err := parsePostProcessor(r)
			if err != nil {
				return nil, err
			}
			if q != nil {
				pp.prefix = append(append([]int{}, q.prefix...), pp.prefix...)
				pp.suffix = append(pp.suffix, q.suffix...)
			}
		}
		return pp, nil
	case "":
		return nil, fmt.Errorf("post_processor without a type")
	}
	return nil, fmt.Errorf("unsupported post_processor type %q", c.Type)
}
