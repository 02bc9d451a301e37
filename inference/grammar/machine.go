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
//
// Stack id 1 is the opaque bottom: a stack cut below its top frames (see
// truncate) ends in it, and a path that pops into it, or goes on after
// that, is marked by it (the opaque stack) in the states it reaches.
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
	real   bool    // holds a stack other than the opaque one
	trans  *[256]int32
	mask   []uint64 // the mask (a full state's; see Matcher.Mask)
	trunc  int32    // the state with stacks cut to their top frames; -1 unknown

	// For a cut state: the tokens accepted whatever lies below the cut,
	// and the trie nodes whose subtrees depend on it.
	tokMask   []uint64
	uncertain []int32
}

// opaqueStack is the bottom that stands for frames cut away.
const opaqueStack = 1

// cutDepth is how many frames a lone stack keeps when cut.
const cutDepth = 3

// Transition table values besides a state id.
const (
	transUnknown = -1
	transDead    = -2
)

func newMachine(g *Grammar) *machine {
	m := &machine{g: g, nodeIdx: map[stackNode]int32{}, stateIdx: map[string]int32{}}
	m.nodes = append(m.nodes, stackNode{pos: -1}, stackNode{pos: -2})
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
			if below <= opaqueStack {
				return append(out, below)
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
	real := len(own) > 1 || own[0] != opaqueStack
	m.states = append(m.states, stateRec{stacks: own, accept: own[0] == 0, real: real, trunc: -1})
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
		if id == opaqueStack {
			out = append(out, opaqueStack)
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

// truncate is s with its stacks cut (the cut marked by the opaque
// bottom): at the deepest frames all of them share (the caller of a
// string, below both its content's stacks and its closing quote's), or,
// for one stack, below its top cutDepth frames; each keeps its top frame.
// It is s itself when nothing is cut. Any cut is sound (what lies below a
// cut is checked from the full state); this one makes the states of every
// string of a JSON document cut to one.
func (m *machine) truncate(s int32) int32 {
	if t := m.states[s].trunc; t >= 0 {
		return t
	}
	stacks := m.states[s].stacks
	common := m.commonSuffix(stacks)
	var out []int32
	for _, id := range stacks {
		out = append(out, m.cut(id, common, cutDepth, 0))
	}
	t := m.intern(out)
	m.states[s].trunc = t
	return t
}

// commonSuffix is the frame nearest the top that every real stack of
// stacks holds below its top (-1 for none, or fewer than two stacks).
func (m *machine) commonSuffix(stacks []int32) int32 {
	var real []int32
	for _, id := range stacks {
		if id > opaqueStack {
			real = append(real, id)
		}
	}
	if len(real) < 2 {
		return -1
	}
	// Below each top: a stack's top frame is never cut.
	count := map[int32]int{}
	for _, id := range real {
		for id = m.nodes[id].next; id > opaqueStack; id = m.nodes[id].next {
			count[id]++
		}
	}
	for id := m.nodes[real[0]].next; id > opaqueStack; id = m.nodes[id].next {
		if count[id] == len(real) {
			return id
		}
	}
	return -1
}

// cut copies stack id down to the frame common (or, without one, keep
// frames) and ends it in the opaque bottom; kept frames are above.
func (m *machine) cut(id, common int32, keep, kept int) int32 {
	if id <= opaqueStack {
		return id
	}
	if kept > 0 && (id == common || common < 0 && kept == keep) {
		return opaqueStack
	}
	n := m.nodes[id]
	return m.node(n.pos, m.cut(n.next, common, keep, kept+1))
}
