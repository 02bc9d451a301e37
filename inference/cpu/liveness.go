package cpu

import (
	"unsafe"

	g "etchat/inference/mlxgraph"
)

// Buffer reuse within a pass. A 128-token prefill of a 1B model hands
// out ~565 MB of intermediate buffers, each used by a few instructions;
// with the temporaries' last reads known (planDeaths) the arena takes
// back a buffer once no slot holds a view of it, and hands it out
// again. Only passes of liveMinRows rows or more do this: a decode
// step's buffers are small, and the check costs a scan of the slots.

// liveMinRows is the fewest input rows of a pass that reuses buffers.
const liveMinRows = 8

// reuseBuffers is settable for the tests (false: every buffer of a pass
// is its own).
var reuseBuffers = true

// reusesBuffers reports whether a pass of n rows reuses buffers.
func (m *model) reusesBuffers(n int) bool { return reuseBuffers && n >= liveMinRows && m.deaths != nil }

// planDeaths records, per main-chain instruction, the temporary slots
// whose value it reads last (before the slot is written again). A slot
// an instruction both reads and writes is not released there.
func (m *model) planDeaths() {
	gr := m.graph
	firstTemp := g.Tid(gr.NumConstantTensors + gr.NumInputTensors + gr.NumOutputTensors + gr.NumMutableBufferTensors)
	m.deaths = make([][]g.Tid, len(gr.Instructions))
	m.replaced = make([][]g.Tid, len(gr.Instructions))
	last := map[g.Tid]int{}
	die := func(t g.Tid) {
		if i, ok := last[t]; ok {
			m.deaths[i] = append(m.deaths[i], t)
			delete(last, t)
		}
	}
	for i, in := range gr.Instructions {
		reads, writes := tidUses(in.Op)
		for _, t := range reads {
			if t >= firstTemp {
				last[t] = i
			}
		}
		for _, t := range writes {
			if last[t] == i {
				// read and written here: the old value dies as the
				// instruction replaces it (release compares), the new
				// one lives on
				delete(last, t)
				m.replaced[i] = append(m.replaced[i], t)
				continue
			}
			die(t)
		}
	}
	for t := range last {
		die(t)
	}
}

// arenaBlock is one buffer the arena handed out in this pass.
type arenaBlock struct {
	b    []float32
	free bool
}

// release gives back the buffers of the slots that die at instructions
// [i0, i1] (an instruction and the followers a fused one ran) when no
// live slot or held rotary embedding is a view of them, and the
// instruction's scratch.
func (s *session) release(i0, i1 int) {
	s.releaseScratch()
	for _, x := range s.olds {
		s.releaseTensor(x)
	}
	clear(s.olds)
	s.olds = s.olds[:0]
	for i := i0; i <= i1 && i < len(s.m.deaths); i++ {
		for _, t := range s.m.deaths[i] {
			x := s.slots[t]
			s.slots[t] = nil
			s.releaseTensor(x)
		}
	}
}

// holdReplaced keeps, before instruction i runs, the values of the slots
// it reads and then replaces, for release to take their buffers back.
func (s *session) holdReplaced(i int) {
	for _, t := range s.m.replaced[i] {
		s.olds = append(s.olds, s.slots[t])
	}
}

// releaseTensor takes back x's block unless a live slot or a held rotary
// embedding views it.
func (s *session) releaseTensor(x *tensor) {
	if x == nil || x.f == nil {
		return
	}
	if k := s.arena.find(x.f); k >= 0 && !s.viewed(s.arena.blocks[k].b) {
		s.arena.blocks[k].free = true
		s.arena.free = append(s.arena.free, k)
	}
}

// viewed reports whether a slot or a held rotary embedding has storage
// within b.
func (s *session) viewed(b []float32) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(cap(b))*4
	in := func(x *tensor) bool {
		if x == nil || x.f == nil {
			return false
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(x.f)))
		return p < hi && p+uintptr(cap(x.f))*4 > lo
	}
	for _, x := range s.slots {
		if in(x) {
			return true
		}
	}
	for _, x := range s.ropeHeld {
		if in(x) {
			return true
		}
	}
	return false
}

// find is the index of this pass's block that holds f's storage, or −1.
func (a *arena) find(f []float32) int {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(f)))
	for k := len(a.blocks) - 1; k >= 0; k-- {
		b := a.blocks[k].b
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p >= lo && p < lo+uintptr(cap(b))*4 && !a.blocks[k].free {
			return k
		}
	}
	return -1
}

// reuse takes the smallest released block of at least n elements, if
// any.
func (a *arena) reuse(n int) ([]float32, bool) {
	best := -1
	for j, k := range a.free {
		// at most twice the request: a small scratch buffer must not
		// hold a large block for the rest of the pass
		if c := cap(a.blocks[k].b); c >= n && c <= 2*n && (best < 0 || c < cap(a.blocks[a.free[best]].b)) {
			best = j
		}
	}
	if best < 0 {
		return nil, false
	}
	k := a.free[best]
	a.free[best] = a.free[len(a.free)-1]
	a.free = a.free[:len(a.free)-1]
	a.blocks[k].free = false
	a.taken = append(a.taken, k)
	return a.blocks[k].b[:n], true
}

// releaseScratch takes back the blocks handed out since the last call
// that no live slot or held rotary embedding views: an instruction's
// scratch (gathered operands, copies for a kernel), which no slot's
// death would release.
func (s *session) releaseScratch() {
	a := &s.arena
	for _, k := range a.taken {
		if !a.blocks[k].free && !s.viewed(a.blocks[k].b) {
			a.blocks[k].free = true
			a.free = append(a.free, k)
		}
	}
	a.taken = a.taken[:0]
}
