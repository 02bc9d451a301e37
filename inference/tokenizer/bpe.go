package tokenizer

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// bpe is a byte-pair-encoding model: Hugging Face's BPE with its options.
type bpe struct {
	vocab   *vocabTable
	idToTok []string // model ids; "" where none
	merges  mergeTable
	// runeID[r] is the id of the one-character token r (r < len), -1 if
	// none; a rune past its end is looked up in the vocabulary.
	runeID []int32

	unkID        int // -1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	byteFallbackID [256]int // id of "<0xXX>", -1 if absent
	byteLevelID    [256]int // id of the byte-level character of each byte, -1 if absent
}

type merge struct {
	rank, id int32
}

// mergeTable is an open-addressing hash table from a pair of ids to its
// merge: one probe sequence in one flat array, far cheaper than a Go map
// for the hottest lookup of encoding.
type mergeTable struct {
	slots []mergeSlot
	shift uint
	n     int
	// filter is a one-hash Bloom filter of the keys: most pairs looked up
	// are not merges, and the filter (a few MB) answers those from cache
	// instead of a miss into the table.
	filter      []uint64
	filterShift uint
}

// buildFilter sizes and fills the filter once all merges are in.
func (t *mergeTable) buildFilter() {
	bits, shift := uint64(1<<16), uint(64-16)
	for bits < uint64(t.n)*32 && shift > 40 {
		bits <<= 1
		shift--
	}
	t.filter, t.filterShift = make([]uint64, bits/64), shift
	for _, s := range t.slots {
		if s.id > 0 {
			h := (s.key * 0xC2B2AE3D27D4EB4F) >> shift
			t.filter[h>>6] |= 1 << (h & 63)
		}
	}
}

// mergeSlot holds a merge with its id stored plus one, so that the zero
// slot is empty and a new table needs no initialisation.
type mergeSlot struct {
	key uint64
	merge
}

func newMergeTable(n int) mergeTable {
	size, shift := 16, uint(60)
	for 2*size < 3*n { // load factor at most 2/3; the filter takes most misses
		size <<= 1
		shift--
	}
	return mergeTable{slots: make([]mergeSlot, size), shift: shift}
}

func (t *mergeTable) put(key uint64, m merge) {
	if 3*(t.n+1) > 2*len(t.slots) {
		old := t.slots
		*t = newMergeTable(len(old))
		for _, s := range old {
			if s.id > 0 {
				t.put(s.key, merge{s.rank, s.id - 1})
			}
		}
	}
	mask := uint64(len(t.slots) - 1)
	for i := (key * 0x9E3779B97F4A7C15) >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 || s.key == key {
			if s.id == 0 {
				t.n++
			}
			s.key, s.merge = key, merge{m.rank, m.id + 1} // a later duplicate wins, as in HF
			return
		}
	}
}

// putAll puts the merges of slots, by batches whose first slots are read
// together (so that their cache misses overlap).
func (t *mergeTable) putAll(slots []mergeSlot) {
	const batch = 32
	for k0 := 0; k0 < len(slots); k0 += batch {
		b := slots[k0:min(k0+batch, len(slots))]
		if 3*(t.n+len(b)) <= 2*len(t.slots) {
			var sum int32
			for _, s := range b {
				sum += t.slots[(s.key*0x9E3779B97F4A7C15)>>t.shift].id
			}
			sink.Add(uint32(sum))
		}
		for _, s := range b {
			t.put(s.key, s.merge)
		}
	}
}

func (t *mergeTable) get(key uint64) (merge, bool) {
	if t.filter != nil {
		h := (key * 0xC2B2AE3D27D4EB4F) >> t.filterShift
		if t.filter[h>>6]&(1<<(h&63)) == 0 {
			return merge{}, false
		}
	}
	mask := uint64(len(t.slots) - 1)
	for i := (key * 0x9E3779B97F4A7C15) >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return merge{}, false
		}
		if s.key == key {
			return merge{s.rank, s.id - 1}, true
		}
	}
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type bpeJSON struct {
	Type         string   `json:"type"`
	Dropout      *float64 `json:"dropout"`
	UnkToken     *string  `json:"unk_token"`
	Prefix       *string  `json:"continuing_subword_prefix"`
	Suffix       *string  `json:"end_of_word_suffix"`
	FuseUnk      bool     `json:"fuse_unk"`
	ByteFallback bool     `json:"byte_fallback"`
	IgnoreMerges bool     `json:"ignore_merges"`
}

// preModel holds the vocabulary and merges when read during the scan of
// the file (see Parse).
type preModel struct {
	vocabSet  bool
	vocab     *vocabTable
	idToTok   []string
	vocabErr  error
	mergesSet bool
	pairs     *mergePairs
	mergesErr error
}

// parseModel reads the model object raw; fs are its fields if already
// split, and pre what was read of them.
func parseModel(raw []byte, fs []rawField, pre *preModel) (*bpe, error) {
	if pre == nil {
		pre = &preModel{}
	}
	if fs == nil {
		var err error
		if fs, err = objectFields(raw); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	// Everything but the vocabulary and merges is small.
	small := []byte{'{'}
	for _, f := range fs {
		if f.key == "vocab" || f.key == "merges" {
			continue
		}
		if len(small) > 1 {
			small = append(small, ',')
		}
		k, _ := json.Marshal(f.key)
		small = append(small, k...)
		small = append(small, ':')
		small = append(small, f.val...)
	}
	small = append(small, '}')
	var c bpeJSON
	if err := json.Unmarshal(small, &c); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if c.Type != "BPE" {
		if c.Type == "" {
			return nil, fmt.Errorf("model without a type")
		}
		return nil, fmt.Errorf("unsupported model type %q (only BPE is supported)", c.Type)
	}
	if c.Dropout != nil && *c.Dropout != 0 {
		return nil, fmt.Errorf("model BPE: dropout %g is not supported (encoding would be random)", *c.Dropout)
	}
	rawVocab, rawMerges := field(fs, "vocab"), field(fs, "merges")
	if isNull(rawVocab) {
		return nil, fmt.Errorf("model BPE: missing vocab")
	}
	if isNull(rawMerges) {
		return nil, fmt.Errorf("model BPE: missing merges")
	}
	// Read the merges' strings while the vocabulary is built.
	pairs, mergesErr := pre.pairs, pre.mergesErr
	done := make(chan struct{})
	if pre.mergesSet {
		close(done)
	} else {
		go func() {
			defer close(done)
			pairs, _, mergesErr = parseMergePairs(rawMerges, 0)
		}()
	}
	vocab, idToTok, err := pre.vocab, pre.idToTok, pre.vocabErr
	if !pre.vocabSet {
		vocab, idToTok, err = parseVocab(rawVocab)
	}
	<-done
	if err != nil {
		return nil, err
	}
	if mergesErr != nil {
		return nil, mergesErr
	}
	m := &bpe{
		vocab:        vocab,
		unkID:        -1,
		fuseUnk:      c.FuseUnk,
		byteFallback: c.ByteFallback,
		ignoreMerges: c.IgnoreMerges,
	}
	if c.Prefix != nil {
		m.prefix = *c.Prefix
	}
	if c.Suffix != nil {
		m.suffix = *c.Suffix
	}
	m.idToTok = idToTok
	// The table ends at the largest one-character token: a small
	// vocabulary must not cost a 256 KB table (and its filling) per parse.
	oneRune := func(t string) (rune, bool) {
		r, w := utf8.DecodeRuneInString(t)
		return r, t != "" && w == len(t) && r < 1<<16 && (r != utf8.RuneError || w == 3)
	}
	n := 0
	for _, t := range idToTok {
		if r, ok := oneRune(t); ok {
			n = max(n, int(r)+1)
		}
	}
	m.runeID = make([]int32, n)
	for i := range m.runeID {
		m.runeID[i] = -1
	}
	for id, t := range idToTok {
		if r, ok := oneRune(t); ok {
			m.runeID[r] = int32(id)
		}
	}
	if c.UnkToken != nil {
		id, ok := vocab.get(*c.UnkToken)
		if !ok {
			return nil, fmt.Errorf("model BPE: unk_token %q is not in the vocabulary", *c.UnkToken)
		}
		m.unkID = id
	}
	for b := 0; b < 256; b++ {
		m.byteFallbackID[b] = -1
		if id, ok := vocab.get(fmt.Sprintf("<0x%02X>", b)); ok {
			m.byteFallbackID[b] = id
		}
		m.byteLevelID[b] = -1
		if id, ok := vocab.get(byteLevelStr[b]); ok {
			m.byteLevelID[b] = id
		}
	}
	// Resolve the merges to ids on all cores, each slot written over its
	// pair once read.
	slots := unsafe.Slice((*mergeSlot)(unsafe.Pointer(unsafe.SliceData(pairs.refs))), len(pairs.refs))
	workers := max(1, min(runtime.GOMAXPROCS(0), 8, pairs.len()/4096))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := pairs.len()*w/workers, pairs.len()*(w+1)/workers
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			// By batches: hash every string and touch its slot first,
			// so that the cache misses overlap (see vocabTable.touch).
			const batch = 32
			var hs [3 * batch]uint64
			var ends [batch]int
			var buf []byte
			for k0 := lo; k0 < hi; k0 += batch {
				k1 := min(k0+batch, hi)
				buf = buf[:0]
				var sum uint32
				for k := k0; k < k1; k++ {
					a, b := pairs.pair(k)
					rest := b
					if len(m.prefix) <= len(b) {
						rest = b[len(m.prefix):]
					}
					st := len(buf)
					buf = append(append(buf, a...), rest...)
					ends[k-k0] = len(buf)
					j := 3 * (k - k0)
					hs[j], hs[j+1] = vocab.hash(a), vocab.hash(b)
					hs[j+2] = vocab.hash(unsafe.String(unsafe.SliceData(buf[st:]), len(buf)-st))
				}
				n := 3 * (k1 - k0)
				for _, h := range hs[:n] {
					sum += vocab.touchSlot(h)
				}
				for _, h := range hs[:n] {
					sum += vocab.touchKey(h)
				}
				sink.Add(sum)
				st := 0
				for k := k0; k < k1; k++ {
					a, b := pairs.pair(k)
					j := 3 * (k - k0)
					ida, ok := vocab.getHash(a, hs[j])
					if !ok {
						errs[w] = fmt.Errorf("model BPE: merge %d: %q is not in the vocabulary", k, a)
						return
					}
					idb, ok := vocab.getHash(b, hs[j+1])
					if !ok {
						errs[w] = fmt.Errorf("model BPE: merge %d: %q is not in the vocabulary", k, b)
						return
					}
					ab := buf[st:ends[k-k0]]
					st = ends[k-k0]
					idn, ok := vocab.getBytesHash(ab, hs[j+2])
					if !ok {
						errs[w] = fmt.Errorf("model BPE: merge %d: %q is not in the vocabulary", k, ab)
						return
					}
					slots[k] = mergeSlot{pairKey(int32(ida), int32(idb)), merge{int32(k), int32(idn)}}
				}
			}
		}(w, lo, hi)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, e // the first chunk's error has the lowest rank
		}
	}
	m.merges = newMergeTable(len(slots))
	m.merges.putAll(slots)
	m.merges.buildFilter()
	return m, nil
}

// mergePairs are the merges' strings as read: each of refs is a pair of
// strings, each string packed as offset<<32 | length into d, or with
// escBit in the length, its index in esc. Being 16 bytes without pointers,
// like a mergeSlot, refs is turned into the merges' slots in place.
type mergePairs struct {
	d    []byte
	refs []pairRef
	esc  []string
}

type pairRef struct{ a, b uint64 }

func (p *mergePairs) len() int { return len(p.refs) }

func (p *mergePairs) str(r uint64) string {
	off, n := uint32(r>>32), uint32(r)
	if n&escBit != 0 {
		return p.esc[off]
	}
	if n == 0 {
		return ""
	}
	return unsafe.String(&p.d[off], n)
}

func (p *mergePairs) pair(k int) (string, string) {
	return p.str(p.refs[k].a), p.str(p.refs[k].b)
}

// ref packs s, a view of p.d or not.
func (p *mergePairs) ref(s string) uint64 {
	if s == "" {
		return 0
	}
	if len(p.d) > 0 {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(p.d)))
		if q := uintptr(unsafe.Pointer(unsafe.StringData(s))); q >= base && q-base < uintptr(len(p.d)) && len(s) < escBit {
			return uint64(q-base)<<32 | uint64(len(s))
		}
	}
	p.esc = append(p.esc, s)
	return uint64(len(p.esc)-1)<<32 | escBit
}

// parseMergePairs reads the merges at d[i:] and returns the array's end.
func parseMergePairs(d []byte, i int) (*mergePairs, int, error) {
	if len(d) >= 1<<32 {
		return nil, 0, fmt.Errorf("tokenizer.json: too large")
	}
	// About 20 bytes a merge as strings "a b", 50 as pretty-printed pairs.
	per := 16
	if j := skipWS(d, i+1); j < len(d) && d[j] == '[' {
		per = 40
	}
	p := &mergePairs{d: d, refs: make([]pairRef, 0, (len(d)-i)/per)}
	end, err := parseMergesAt(d, i, func(a, b string) error {
		p.refs = append(p.refs, pairRef{p.ref(a), p.ref(b)})
		return nil
	})
	return p, end, err
}

// symbol is one part of a word during merging.
type symbol struct {
	id         int32
	prev, next int32
	alive      bool
}

type mergeItem struct {
	rank, pos, id int32
	left, right   int32 // the pair when pushed
}

// wordState holds scratch buffers reused across words.
type wordState struct {
	syms []symbol
	heap []mergeItem
	buf  []byte
}

func (h *wordState) push(it mergeItem) {
	q := append(h.heap, it)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(q[i], q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	h.heap = q
}

func less(a, b mergeItem) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

func (h *wordState) pop() mergeItem {
	q := h.heap
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(q[r], q[l]) {
			m = r
		}
		if !less(q[m], q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	h.heap = q
	return top
}

// tokenize appends the ids of one pre-tokenized piece.
func (m *bpe) tokenize(dst []int, p piece, st *wordState) []int {
	w := p.s
	if w == "" {
		return dst
	}
	if m.ignoreMerges {
		key := w
		if p.mapped {
			st.buf = appendByteLevel(st.buf[:0], w)
			if id, ok := m.vocab.getBytes(st.buf); ok {
				return append(dst, id)
			}
		} else if id, ok := m.vocab.get(key); ok {
			return append(dst, id)
		}
	}
	st.syms = st.syms[:0]
	unkID, unkPending := int32(-1), false
	addSym := func(id int32) {
		n := int32(len(st.syms))
		st.syms = append(st.syms, symbol{id: id, prev: n - 1, next: n + 1, alive: true})
	}
	flushUnk := func() {
		if unkPending {
			addSym(unkID)
			unkPending = false
		}
	}
	simple := m.prefix == "" && m.suffix == ""
	// Characters: in a mapped piece each byte is one character.
	for i := 0; i < len(w); {
		var cw int
		if p.mapped {
			cw = 1
		} else if w[i] < utf8.RuneSelf {
			cw = 1
		} else {
			_, cw = utf8.DecodeRuneInString(w[i:])
		}
		id, ok := -1, false
		var chars string // the character as the vocabulary spells it
		if p.mapped {
			chars = byteLevelStr[w[i]]
		} else {
			chars = w[i : i+cw]
		}
		if simple {
			if p.mapped {
				id = m.byteLevelID[w[i]]
				ok = id >= 0
			} else if r := decodeRune(w, i, cw); int(r) < len(m.runeID) {
				id = int(m.runeID[r])
				ok = id >= 0
			} else {
				id, ok = m.vocab.get(chars)
			}
		} else {
			s := chars
			if i > 0 {
				s = m.prefix + s
			}
			if i+cw == len(w) {
				s += m.suffix
			}
			chars = s
			id, ok = m.vocab.get(s)
		}
		if ok {
			flushUnk()
			addSym(int32(id))
			i += cw
			continue
		}
		if m.byteFallback {
			all := true
			for k := 0; k < len(chars); k++ {
				if m.byteFallbackID[chars[k]] < 0 {
					all = false
					break
				}
			}
			if all {
				for k := 0; k < len(chars); k++ {
					addSym(int32(m.byteFallbackID[chars[k]]))
				}
				i += cw
				continue
			}
		}
		if m.unkID >= 0 {
			if unkPending && !m.fuseUnk {
				addSym(unkID)
			}
			unkID, unkPending = int32(m.unkID), true
		}
		i += cw
	}
	flushUnk()
	syms := st.syms
	if len(syms) == 0 {
		return dst
	}
	syms[len(syms)-1].next = -1
	if len(syms) > 1 {
		st.heap = st.heap[:0]
		for i := 0; i+1 < len(syms); i++ {
			if mg, ok := m.merges.get(pairKey(syms[i].id, syms[i+1].id)); ok {
				st.push(mergeItem{mg.rank, int32(i), mg.id, syms[i].id, syms[i+1].id})
			}
		}
		for len(st.heap) > 0 {
			top := st.pop()
			cur := &syms[top.pos]
			if !cur.alive || cur.next < 0 {
				continue
			}
			nextPos := cur.next
			right := syms[nextPos]
			// An entry whose pair is unchanged is current; otherwise check
			// as HF does (by the merged id).
			if cur.id != top.left || right.id != top.right {
				if mg, ok := m.merges.get(pairKey(cur.id, right.id)); !ok || mg.id != top.id {
					continue
				}
			}
			cur.id = top.id
			cur.next = right.next
			syms[nextPos].alive = false
			if right.next >= 0 {
				syms[right.next].prev = top.pos
			}
			if cur.prev >= 0 {
				prev := syms[cur.prev]
				if mg, ok := m.merges.get(pairKey(prev.id, cur.id)); ok {
					st.push(mergeItem{mg.rank, cur.prev, mg.id, prev.id, cur.id})
				}
			}
			if cur.next >= 0 {
				if mg, ok := m.merges.get(pairKey(cur.id, syms[cur.next].id)); ok {
					st.push(mergeItem{mg.rank, top.pos, mg.id, cur.id, syms[cur.next].id})
				}
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, int(syms[i].id))
	}
	return dst
}

func decodeRune(s string, i, w int) rune {
	if w == 1 {
		return rune(s[i])
	}
	r, _ := utf8.DecodeRuneInString(s[i : i+w])
	return r
}

// A pairRef and a mergeSlot must have the same size (see mergePairs).
var _ = [1]struct{}{}[unsafe.Sizeof(pairRef{})-unsafe.Sizeof(mergeSlot{})]
