package grammar

import (
	"slices"
	"unsafe"
)

// machine is the pushdown automaton of one grammar, built as it is walked.
// A stack is a linked list of grammar positions, interned (id 0 is the
// empty stack: the grammar has matched a whole sentence): its top is a
// byte element, those below are where to go on when the rule above ends.
// A state is a set of stacks, interned too, with its transitions by each
// byte (computed on first use) and its mask (see Matcher).
type machine struct {
	g        *Grammar
	nodes    []stackNode
	nodeIdx  map[stackNode]int32
	states   []stateRec
	stateIdx map[string]int32
	scratch  []int32
}

type stackNode struct {
	pos  int32 // a position in g.elems
	next int32 // the stack below (0: none)
}

type stateRec struct {
	stacks []int32 // sorted
	accept bool    // holds the empty stack: the output may end here
	trans  *[256]int32
	mask   []uint64
}

// Transition table values besides a state id.
const (
	transUnknown = -1
	transDead    = -2
)

func newMachine(g *Grammar) *machine {
	m := &machine{g: g, nodeIdx: map[stackNode]int32{}, stateIdx: map[string]int32{}}
	m.nodes = append(m.nodes, stackNode{pos: -1})
	return m
}

// start is the state before any byte: root's alternatives expanded.
func (m *machine) start() int32 {
	out := m.scratch[:0]
	for _, a := range m.g.rules[m.g.root] {
		out = m.resolve(a, 0, out)
	}
	m.scratch = out
	return m.intern(out)
}

func (m *machine) node(pos, next int32) int32 {
	k := stackNode{pos, next}
	if id, ok := m.nodeIdx[k]; ok {
		return id
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, k)
	m.nodeIdx[k] = id
	return id
}

// resolve appends the stacks that continue at pos with below under it,
// each with a byte element on top: an alternative's end returns to the
// stack below, a reference expands into its rule's alternatives. A
// reference that ends its alternative pushes nothing (its rule returns
// straight to below), so right recursion keeps stacks flat.
func (m *machine) resolve(pos, below int32, out []int32) []int32 {
	for {
		e := &m.g.elems[pos]
		switch e.kind {
		case eByte:
			return append(out, m.node(pos, below))
		case eEnd:
			if below == 0 {
				return append(out, 0)
			}
			n := m.nodes[below]
			pos, below = n.pos, n.next
			continue
		}
		next := below
		if m.g.elems[pos+1].kind != eEnd {
			next = m.node(pos+1, below)
		}
		alts := m.g.rules[e.ref]
		for _, a := range alts[:len(alts)-1] {
			out = m.resolve(a, next, out)
		}
		pos, below = alts[len(alts)-1], next
	}
}

// intern returns the id of the state made of stacks (sorted and deduplicated
// in place), or transDead for none.
func (m *machine) intern(stacks []int32) int32 {
	if len(stacks) == 0 {
		return transDead
	}
	slices.Sort(stacks)
	stacks = slices.Compact(stacks)
	key := unsafe.String((*byte)(unsafe.Pointer(&stacks[0])), 4*len(stacks))
	if id, ok := m.stateIdx[key]; ok {
		return id
	}
	own := slices.Clone(stacks)
	id := int32(len(m.states))
	m.states = append(m.states, stateRec{stacks: own, accept: own[0] == 0})
	m.stateIdx[string(unsafe.Slice((*byte)(unsafe.Pointer(&own[0])), 4*len(own)))] = id
	return id
}

// step is the state after byte c from state s, or transDead.
func (m *machine) step(s int32, c byte) int32 {
	st := &m.states[s]
	if st.trans == nil {
		st.trans = new([256]int32)
		for i := range st.trans {
			st.trans[i] = transUnknown
		}
	} else if t := st.trans[c]; t != transUnknown {
		return t
	}
	out := m.scratch[:0]
	for _, id := range st.stacks {
		if id == 0 {
			continue
		}
		n := m.nodes[id]
		if m.g.elems[n.pos].set.has(c) {
			out = m.resolve(n.pos+1, n.next, out)
		}
	}
	m.scratch = out[:0]
	t := m.intern(out)
	m.states[s].trans[c] = t // m.states may have grown: index again
	return t
}
