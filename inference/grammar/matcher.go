package grammar

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Matcher follows one generation through a grammar: Mask gives the ids
// allowed next, Accept advances by the id chosen. It is not safe for
// concurrent use.
type Matcher struct {
	m     *machine
	v     *Vocab
	end   []int32 // end-of-turn ids: allowed where the grammar may end
	state int32
	done  bool // an end-of-turn id was accepted
	words int  // mask length in uint64s
	empty []uint64
}

// RejectedError: an id was accepted that the grammar does not allow here
// (the caller sampled outside the mask).
type RejectedError struct {
	ID    int
	Bytes []byte
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("grammar: token %d (%q) is not allowed here", e.ID, e.Bytes)
}

// ErrComplete: Accept after the end-of-turn token ended the output.
var ErrComplete = errors.New("grammar: the output is complete")

// maxStates bounds the automaton's tables; past it they are rebuilt from
// the current state (a grammar that keeps making new states, such as a
// deeply nested JSON value, then recomputes more masks).
const maxStates = 1 << 14

// NewMatcher starts a generation at g's start rule over v's ids; endIDs are
// the end-of-turn (stop) tokens, allowed only where the grammar may end.
func NewMatcher(g *Grammar, v *Vocab, endIDs []int) *Matcher {
	mt := &Matcher{m: newMachine(g), v: v, words: (v.size + 63) / 64}
	for _, id := range endIDs {
		if id >= 0 && id < v.size {
			mt.end = append(mt.end, int32(id))
		}
	}
	mt.state = mt.m.start()
	mt.empty = make([]uint64, mt.words)
	return mt
}

// CanEnd reports whether the output so far is a whole sentence of the
// grammar.
func (mt *Matcher) CanEnd() bool {
	return mt.state >= 0 && mt.m.states[mt.state].accept
}

// Done reports whether an end-of-turn id has been accepted.
func (mt *Matcher) Done() bool { return mt.done }

// Mask returns the ids allowed next as a bit set (bit id%64 of word id/64)
// of Size ids: tokens whose bytes keep the output a prefix of the grammar,
// and the end-of-turn ids where it may end. It is empty once Done. The
// slice is the matcher's and is valid until the next Accept.
//
// A state's mask is computed once. The trie walk is paid per cut state
// (the stacks' top frames, see machine.truncate), which many states share
// (every string of a JSON document): it finds the tokens accepted whatever
// lies below the cut, and the few subtrees that reach below it (a string's
// closing quote and what follows), which are then walked from the full
// state.
func (mt *Matcher) Mask() []uint64 {
	if mt.done || mt.state < 0 {
		return mt.empty
	}
	m, s := mt.m, mt.state
	if mask := m.states[s].mask; mask != nil {
		return mask
	}
	mask := make([]uint64, mt.words)
	t := m.truncate(s)
	if t == s {
		mt.walk(s, 0, int32(len(mt.v.depth)), mask, nil)
	} else {
		if m.states[t].tokMask == nil {
			tm := make([]uint64, mt.words)
			var unc []int32
			mt.walk(t, 0, int32(len(mt.v.depth)), tm, &unc)
			m.states[t].tokMask, m.states[t].uncertain = tm, unc
		}
		copy(mask, m.states[t].tokMask)
		for _, r := range m.states[t].uncertain {
			mt.walkFrom(s, r, mask)
		}
	}
	if m.states[s].accept {
		for _, id := range mt.end {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
	m.states[s].mask = mask
	return mask
}

// walk sets the bits of the tokens of trie nodes from..to-1 (a run of
// whole subtrees whose parent's state is s) that state s accepts: one
// pass in depth-first order, each node's state being its parent's stepped
// by the node's byte; a refused byte skips the subtree. With unc set, a
// node reached only through the opaque bottom is recorded there and its
// subtree skipped.
func (mt *Matcher) walk(s, from, to int32, mask []uint64, unc *[]int32) {
	v, m := mt.v, mt.m
	var path [maxTokenLen + 1]int32 // path[d]: the state at depth d
	path[v.depth[from]-1] = s
	for i := from; i < to; {
		d := v.depth[i]
		ps, c := path[d-1], v.char[i]
		ns := int32(transUnknown)
		if tr := m.states[ps].trans; tr != nil {
			ns = tr[c]
		}
		if ns == transUnknown {
			ns = m.step(ps, c)
		}
		if ns < 0 {
			i = v.skip[i]
			continue
		}
		if !m.states[ns].real {
			if unc != nil {
				*unc = append(*unc, i)
			}
			i = v.skip[i]
			continue
		}
		path[d] = ns
		for _, id := range v.ids[v.tok[i]:v.tok[i+1]] {
			mask[id>>6] |= 1 << (id & 63)
		}
		i++
	}
}

// walkFrom walks the subtree of trie node r from state s: the bytes down
// to r's parent first, then r's subtree.
func (mt *Matcher) walkFrom(s, r int32, mask []uint64) {
	v := mt.v
	prefix := v.prefix(r)
	for _, c := range prefix[:len(prefix)-1] {
		if s = mt.m.step(s, c); s < 0 {
			return
		}
	}
	mt.walk(s, r, v.skip[r], mask, nil)
}

// Allowed reports whether id is in the current mask.
func (mt *Matcher) Allowed(id int) bool {
	if id < 0 || id >= mt.v.size {
		return false
	}
	return mt.Mask()[id>>6]&(1<<(id&63)) != 0
}

// Accept advances the grammar by token id's bytes, or ends it with an
// end-of-turn id where it may end. A refused id is a RejectedError and
// leaves the state as it was.
func (mt *Matcher) Accept(id int) error {
	b := mt.v.Bytes(id)
	if mt.done {
		return ErrComplete
	}
	if slices.Contains(mt.end, int32(id)) {
		if !mt.CanEnd() {
			return &RejectedError{ID: id, Bytes: b}
		}
		mt.done = true
		return nil
	}
	if len(b) == 0 {
		return &RejectedError{ID: id, Bytes: b}
	}
	s := mt.state
	for _, c := range b {
		if s = mt.m.step(s, c); s < 0 {
			return &RejectedError{ID: id, Bytes: b}
		}
	}
	mt.state = s
	if len(mt.m.states) > maxStates {
		mt.rebuild()
	}
	return nil
}

// AcceptBytes advances by text that is not a token (a prefix the caller
// forces); it fails where the grammar refuses a byte, leaving the state.
func (mt *Matcher) AcceptBytes(b []byte) error {
	s := mt.state
	for i, c := range b {
		if s = mt.m.step(s, c); s < 0 {
			return fmt.Errorf("grammar: byte %d of %q is not allowed", i, b)
		}
	}
	mt.state = s
	return nil
}

// rebuild drops the automaton's tables, keeping the current state.
func (mt *Matcher) rebuild() {
	old := mt.m
	stacks := old.states[mt.state].stacks
	nm := newMachine(old.g)
	var out []int32
	for _, id := range stacks {
		out = append(out, nm.copyStack(old, id))
	}
	mt.m = nm
	mt.state = nm.intern(out)
}

// copyStack interns old's stack id in m.
func (m *machine) copyStack(old *machine, id int32) int32 {
	if id == 0 {
		return 0
	}
	n := old.nodes[id]
	return m.node(n.pos, m.copyStack(old, n.next))
}

// Count is the number of ids set in a mask.
func Count(mask []uint64) int {
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	return n
}
