package tokenizer

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// sink keeps the loads of touch from being optimised away.
var sink atomic.Uint32

// vocabTable maps token strings to ids. It replaces a map[string]int: a
// slot holds a hash tag, the id and where the key lies in the vocabulary's
// text, so that a hit costs one probe and one comparison with the key's
// bytes (a Go map also reads the key's string header first). Resolving the
// merges of a large vocabulary does millions of lookups, most of them
// cache misses.
type vocabTable struct {
	slots []vslot
	mask  uint64
	seed  maphash.Seed
	arena string   // the vocabulary's JSON text; keys without escapes are in it
	esc   []string // keys that had escapes
	n     int      // distinct keys
}

// vslot is one slot; id is stored plus one so that the zero slot is empty.
// A key is arena[off:off+n], or esc[off] when n has escBit.
type vslot struct {
	tag uint32
	id  int32
	off uint32
	n   uint32
}

const escBit = 1 << 31

func newVocabTable(arena string, hint int) vocabTable {
	size := 16
	for 3*size < 4*hint { // load factor at most 3/4
		size <<= 1
	}
	return vocabTable{slots: make([]vslot, size), mask: uint64(size - 1), seed: maphash.MakeSeed(), arena: arena}
}

func (t *vocabTable) key(s *vslot) string {
	if s.n&escBit != 0 {
		return t.esc[s.off]
	}
	return t.arena[s.off : s.off+s.n]
}

// get returns the id of the token s.
func (t *vocabTable) get(s string) (int, bool) {
	if t.slots == nil {
		return 0, false
	}
	return t.getHash(s, t.hash(s))
}

func (t *vocabTable) hash(s string) uint64 { return maphash.String(t.seed, s) }

// touchSlot reads the slot of hash h, and touchKey the first byte of its
// key, so that a batch of lookups waits for its cache misses together
// rather than one after the other (touchKey after touchSlot for the whole
// batch); they return a value to be summed.
func (t *vocabTable) touchSlot(h uint64) uint32 { return t.slots[h&t.mask].tag }

func (t *vocabTable) touchKey(h uint64) uint32 {
	sl := &t.slots[h&t.mask]
	if sl.n&escBit == 0 && sl.n > 0 {
		return uint32(t.arena[sl.off])
	}
	return 0
}

// getHash is get for a key with its hash.
func (t *vocabTable) getHash(s string, h uint64) (int, bool) {
	tag := uint32(h >> 32)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		if sl.id == 0 {
			return 0, false
		}
		if sl.tag == tag && t.key(sl) == s {
			return int(sl.id - 1), true
		}
	}
}

// getBytes is get for a key in a byte slice.
func (t *vocabTable) getBytes(b []byte) (int, bool) {
	if len(b) == 0 {
		return t.get("")
	}
	return t.get(unsafe.String(&b[0], len(b)))
}

// getBytesHash is getHash for a key in a byte slice.
func (t *vocabTable) getBytesHash(b []byte, h uint64) (int, bool) {
	if len(b) == 0 {
		return t.getHash("", h)
	}
	return t.getHash(unsafe.String(&b[0], len(b)), h)
}

// put adds the key at arena[off:off+n] (or esc[off] with escBit in n); a
// repeated key takes the later id, as in a map.
func (t *vocabTable) put(off, n uint32, id int) {
	if 4*(t.n+1) > 3*len(t.slots) {
		old := t.slots
		t.slots = make([]vslot, 2*len(old))
		t.mask = uint64(len(t.slots) - 1)
		t.n = 0
		for i := range old {
			if old[i].id != 0 {
				t.insert(old[i])
			}
		}
	}
	v := vslot{off: off, n: n, id: int32(id) + 1}
	t.insertHash(v, t.hash(t.key(&v)))
}

// putBatch adds keys as put does, a batch at a time (see touch).
func (t *vocabTable) putBatch(vs []vslot) {
	if 4*(t.n+len(vs)) > 3*len(t.slots) {
		for _, v := range vs {
			t.put(v.off, v.n, int(v.id))
		}
		return
	}
	var hs [64]uint64
	hs2 := hs[:len(vs)]
	var sum uint32
	for i := range vs {
		hs2[i] = t.hash(t.key(&vs[i]))
		sum += t.slots[hs2[i]&t.mask].tag
	}
	sink.Add(sum)
	for i, v := range vs {
		v.id++
		t.insertHash(v, hs2[i])
	}
}

func (t *vocabTable) insert(v vslot) { t.insertHash(v, t.hash(t.key(&v))) }

func (t *vocabTable) insertHash(v vslot, h uint64) {
	k := t.key(&v)
	v.tag = uint32(h >> 32)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		if sl.id == 0 {
			*sl = v
			t.n++
			return
		}
		if sl.tag == v.tag && t.key(sl) == k {
			sl.id = v.id
			return
		}
	}
}

// len is the number of distinct keys.
func (t *vocabTable) len() int { return t.n }

// all calls fn for each key and its id.
func (t *vocabTable) all(fn func(k string, id int)) {
	for i := range t.slots {
		if sl := &t.slots[i]; sl.id != 0 {
			fn(t.key(sl), int(sl.id-1))
		}
	}
}
