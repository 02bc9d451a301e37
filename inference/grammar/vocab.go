package grammar

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
)

// Tokens is what a Vocab is built from: a tokenizer with each token's exact
// bytes in the middle of a text (inference/tokenizer's Tokenizer).
type Tokens interface {
	VocabSize() int
	TokenBytes(id int) ([]byte, error)
	IsSpecial(id int) bool
}

// Vocab is a vocabulary's byte trie, in depth-first order so that a mask
// is one pass over an array that skips refused subtrees. Special tokens
// are left out (their text is no part of the output); the end-of-turn ids
// given to NewMatcher are allowed where the grammar may end. Tokens with
// no bytes are left out too: they would not advance the grammar. Immutable
// and safe for concurrent use: build one per tokenizer.
type Vocab struct {
	size  int     // ids 0..size-1
	depth []uint8 // per node, its depth (1 = a first byte)
	char  []byte  // per node, the byte on the edge into it
	skip  []int32 // per node, the first node after its subtree
	tok   []int32 // per node, the start of its ids in ids (the next node's start ends them)
	ids   []int32
	bytes [][]byte // per id, its bytes (nil when left out)
}

// maxTokenLen bounds a token's bytes (a node's depth is a byte).
const maxTokenLen = 255

// vocabEntry is one token's bytes.
type vocabEntry struct {
	b  []byte
	id int32
}

// NewVocab builds the trie of ts's tokens.
func NewVocab(ts Tokens) (*Vocab, error) {
	n := ts.VocabSize()
	entries, err := vocabEntries(ts)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b vocabEntry) int {
		if c := bytes.Compare(a.b, b.b); c != 0 {
			return c
		}
		return int(a.id - b.id)
	})
	v := &Vocab{size: n, bytes: make([][]byte, n)}
	for _, e := range entries {
		v.bytes[e.id] = e.b
	}
	// Sorted keys give the trie in depth-first order: each key adds the
	// nodes past its common prefix with the previous one.
	var path []int32 // the nodes of the previous key
	var prev []byte
	for _, e := range entries {
		common := 0
		for common < len(prev) && common < len(e.b) && prev[common] == e.b[common] {
			common++
		}
		for _, nd := range path[common:] {
			v.skip[nd] = int32(len(v.depth))
		}
		path = path[:common]
		for d := common; d < len(e.b); d++ {
			path = append(path, int32(len(v.depth)))
			v.depth = append(v.depth, uint8(d+1))
			v.char = append(v.char, e.b[d])
			v.skip = append(v.skip, 0)
			v.tok = append(v.tok, int32(len(v.ids)))
		}
		v.ids = append(v.ids, e.id)
		prev = e.b
	}
	for _, nd := range path {
		v.skip[nd] = int32(len(v.depth))
	}
	v.tok = append(v.tok, int32(len(v.ids)))
	return v, nil
}

// Size is the number of ids the vocabulary's masks cover.
func (v *Vocab) Size() int { return v.size }

// Nodes is the number of nodes of the trie.
func (v *Vocab) Nodes() int { return len(v.depth) }

// Bytes is the text of id as the grammar sees it (nil for a special token
// or an id without bytes).
func (v *Vocab) Bytes(id int) []byte {
	if id < 0 || id >= v.size {
		return nil
	}
	return v.bytes[id]
}

// prefix is the bytes from the root to node r (the start of the first
// token in its subtree).
func (v *Vocab) prefix(r int32) []byte {
	j := r
	for v.tok[j] == v.tok[j+1] {
		j++ // a node without tokens has a descendant with some, next in order
	}
	return v.bytes[v.ids[v.tok[j]]][:v.depth[r]]
}

// vocabEntries is every token's bytes but the special tokens' and empty
// ones.
func vocabEntries(ts Tokens) ([]vocabEntry, error) {
	n := ts.VocabSize()
	entries := make([]vocabEntry, 0, n)
	var firstErr error
	for id := 0; id < n; id++ {
		if ts.IsSpecial(id) {
			continue
		}
		b, err := ts.TokenBytes(id)
		if err != nil {
			// A gap in the ids; when every token fails, the decoder is
			// the cause, returned below.
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if len(b) == 0 {
			continue
		}
		if len(b) > maxTokenLen {
			return nil, fmt.Errorf("grammar: token %d has %d bytes, more than %d", id, len(b), maxTokenLen)
		}
		entries = append(entries, vocabEntry{b, int32(id)})
	}
	if len(entries) == 0 {
		if firstErr != nil {
			return nil, firstErr
		}
		return nil, fmt.Errorf("grammar: the vocabulary has no token with bytes")
	}
	return entries, nil
}
