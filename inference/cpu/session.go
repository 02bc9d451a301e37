package cpu

import (
	"context"
	"errors"
	"fmt"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	g "etchat/inference/mlxgraph"
)

// arena hands out float buffers for one forward pass; reset makes the
// memory reusable, so a steady decode loop allocates nothing new. It
// grows by chunks that it keeps: the first pass's buffers are the ones
// every later pass reuses (growing one buffer to the last pass's need
// left the first pass's allocations as garbage beside a fresh,
// untouched buffer, whose page faults then slowed the next pass).
type arena struct {
	chunks [][]float32
	cur    int // the chunk being handed out
	used   int // elements of chunks[cur] handed out
	bumped int // elements newly handed out in this pass (not reused)
	// with track (liveness.go): this pass's blocks, and those released
	track  bool
	blocks []arenaBlock
	free   []int
	taken  []int // blocks handed out since the last releaseScratch
}

// arenaChunk is the elements of a chunk (16 MiB); a larger request gets
// a chunk of its own size.
const arenaChunk = 4 << 20

func (a *arena) alloc(n int) []float32 {
	if !a.track {
		return a.bump(n)
	}
	if b, ok := a.reuse(n); ok {
		return b
	}
	b := a.bump(n)
	a.taken = append(a.taken, len(a.blocks))
	a.blocks = append(a.blocks, arenaBlock{b: b})
	return b
}

func (a *arena) bump(n int) []float32 {
	a.bumped += n
	for ; a.cur < len(a.chunks); a.cur, a.used = a.cur+1, 0 {
		if c := a.chunks[a.cur]; a.used+n <= len(c) {
			b := c[a.used : a.used+n : a.used+n]
			a.used += n
			// not cleared: every op writes all of its output
			return b
		}
	}
	c := make([]float32, max(n, arenaChunk))
	a.chunks = append(a.chunks, c)
	a.used = n
	return c[:n:n]
}

// reset recycles the arena's chunks for the next pass; track: whether
// it reuses released blocks within the pass.
func (a *arena) reset(track bool) {
	a.cur, a.used, a.bumped, a.track = 0, 0, 0, track
	clear(a.blocks)
	a.blocks, a.free, a.taken = a.blocks[:0], a.free[:0], a.taken[:0]
}

func (a *arena) bytes() int64 {
	var n int64
	for _, c := range a.chunks {
		n += int64(len(c)) * 4
	}
	return n
}

// session is one conversation on a loaded model.
type session struct {
	m       *model
	threads int
	// the main chain's fused instructions (m.acts, or nil with fusion
	// off) and the rotary embeddings computed ahead of their add
	acts     []fuseAct
	ropeHeld []*tensor
	olds     []*tensor // values the running instruction replaces (holdReplaced)

	// off-graph cache
	cfg   *kvcache.Config
	seq   *kvcache.Sequence
	kv    []kvPool
	plans []kvcache.Plan

	// in-graph cache: the mutable buffers by tensor slot, and the length
	mut    map[g.Tid]*tensor
	length int
	capac  int

	slots     []*tensor
	vals      []value
	arena     arena
	kbuf      []float32
	vbuf      []float32
	logits    []float32 // the last step's result, a view of logitsBuf
	logitsBuf []float32
	peak      int64
	closed    bool
	// lastOnly: this step needs the last row of logits only; ip is the
	// instruction being executed.
	lastOnly bool
	ip       int
	// The step's tensor headers, scratch shapes and input copies.
	hdrs    hdrs
	scratch [4][]int
	cat     []*tensor
	idsBuf  []int64
	posBuf  []int64
	rowsBuf []int64 // a LogitsSelected program's row indices
	wm      wmat    // addmm's weight view
	mm      mmJob   // addmm's matmul, shared with the workers
	qparts  []qPart
	un      unaryArgs // a shared unary op's arguments
	// skip: instructions after this one that it ran too (a fused run)
	skip     int
	scoreBuf []float32
	spare    map[g.Tid][]float32 // in-graph: last step's buffers, to reuse
	// init: this is the scratch session that runs the init chain at load,
	// which may write constant slots.
	init bool
}

var _ engine.Session = (*session)(nil)

func newSession(m *model, cfg *kvcache.Config, threads int) (*session, error) {
	gr := m.graph
	s := &session{m: m, threads: threads, slots: make([]*tensor, gr.NumTensors()), vals: make([]value, gr.NumValues)}
	if m.offgraph {
		if cfg == nil {
			return nil, errors.New("cpu: this model keeps its KV cache off-graph and needs a cache config")
		}
		if len(gr.MutableBuffers) > 0 {
			return nil, errors.New("cpu: off-graph model with mutable buffers is not supported")
		}
		seq, err := kvcache.NewSequence(cfg)
		if err != nil {
			return nil, fmt.Errorf("cpu: cache config: %w", err)
		}
		s.seq = seq
		s.cfg = seq.Config()
		s.kv = make([]kvPool, len(s.cfg.Layers))
		for i, l := range s.cfg.Layers {
			s.kv[i] = kvPool{heads: l.KVHeads, dim: l.HeadDim, dt: s.cfg.DType}
			s.kv[i].grow(s.cfg.PoolRows(l, 0))
		}
		// Every UpdateAndAttend must name a configured cache (its
		// layer_id is a cache index: layers may share one).
		for _, in := range gr.Instructions {
			if n, ok := in.Op.(*g.UpdateAndAttendNode); ok {
				if n.LayerID == nil {
					return nil, errors.New("cpu: UpdateAndAttend names no cache (layer_id not set)")
				}
				if id := int(*n.LayerID); id < 0 || id >= len(s.kv) {
					return nil, fmt.Errorf("cpu: UpdateAndAttend on cache %d (its layer_id) outside the cache config's %d caches", id, len(s.kv))
				}
			}
		}
	} else {
		if cfg != nil {
			return nil, errors.New("cpu: this model keeps its KV cache in-graph; pass no cache config")
		}
		if len(gr.MutableBuffers) == 0 {
			return nil, errors.New("cpu: model has neither an off-graph cache nor mutable buffers")
		}
		s.mut = map[g.Tid]*tensor{}
		s.spare = map[g.Tid][]float32{}
		s.capac = m.maxCtx
		for _, mb := range gr.MutableBuffers {
			meta := gr.Meta(g.Tid(mb.Idx))
			if !mb.IsTensor() || meta == nil || !isFloatST(meta.DType) {
				return nil, fmt.Errorf("cpu: mutable buffer slot %d has no float tensor metadata", mb.Idx)
			}
			shape := make([]int, len(meta.Shape))
			for i, d := range meta.Shape {
				if d.Value < 0 {
					return nil, fmt.Errorf("cpu: mutable buffer slot %d has a dynamic shape", mb.Idx)
				}
				shape[i] = int(d.Value)
			}
			if _, err := checkElems(shape); err != nil {
				return nil, fmt.Errorf("cpu: mutable buffer: %w", err)
			}
			// [1, H, ctx, D] caches bound the context.
			if len(shape) == 4 && (s.capac == 0 || shape[2] < s.capac) {
				s.capac = shape[2]
			}
			s.mut[g.Tid(mb.Idx)] = &tensor{dt: meta.DType, shape: shape}
		}
		if s.capac <= 0 {
			return nil, errors.New("cpu: in-graph model publishes no context length")
		}
		s.resetMutable()
	}
	return s, nil
}

func (s *session) resetMutable() {
	for _, t := range s.mut {
		t.f = make([]float32, t.numel())
		t.strides = contiguousStrides(t.shape)
		t.off = 0
	}
	s.length = 0
}

func (s *session) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, _, err := s.forward(ctx, ids, positions, true)
	return out, err
}

// ForwardAll returns every position's logits; a program that keeps only
// the last position's (get_logits_to_keep_mode 1) has them for a step of
// one token only, and a longer step is refused before it runs.
func (s *session) ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error) {
	if s.m.logitsMode == engine.LogitsLast && len(ids) > 1 {
		return nil, fmt.Errorf("cpu: %d tokens: %w", len(ids), engine.ErrLastRowOnly)
	}
	out, _, err := s.forward(ctx, ids, positions, false)
	return out, err
}

// LogitsMode is the program's get_logits_to_keep_mode.
func (s *session) LogitsMode() engine.LogitsMode { return s.m.logitsMode }

// bindRows feeds a LogitsSelected program's third input: the last row
// for a step's next token, every row where all are asked for.
func (s *session) bindRows(n int, lastOnly bool) {
	if s.m.logitsMode != engine.LogitsSelected {
		return
	}
	s.rowsBuf = s.rowsBuf[:0]
	if lastOnly {
		s.rowsBuf = append(s.rowsBuf, int64(n-1))
	} else {
		for i := range n {
			s.rowsBuf = append(s.rowsBuf, int64(i))
		}
	}
	s.slots[s.m.inRows] = s.newI(stI64, []int{len(s.rowsBuf)}, s.rowsBuf)
}

// logitRows is how many logits rows a step of n tokens returns: one for a
// last-row program, the selected ones for a selected-rows program, else
// n, or one where the head ran for the last row only.
func (s *session) logitRows(n int, lastOnly bool) int {
	switch {
	case s.lastOnly, s.m.logitsMode == engine.LogitsLast:
		return 1
	case s.m.logitsMode == engine.LogitsSelected && lastOnly:
		return 1
	}
	return n
}

// forward runs one step. With lastOnly it returns the last row's logits
// and, where the graph allows, computes only that row of the LM head.
func (s *session) forward(ctx context.Context, ids, positions []int64, lastOnly bool) ([]float32, int, error) {
	if s.closed {
		return nil, 0, engine.ErrClosed
	}
	n := len(ids)
	switch {
	case n == 0:
		return nil, 0, errors.New("cpu: forward of no tokens")
	case len(positions) != n:
		return nil, 0, fmt.Errorf("cpu: %d ids but %d positions", n, len(positions))
	case n > s.m.maxStep:
		return nil, 0, fmt.Errorf("cpu: %d tokens in one step; the program accepts at most %d (feed prompts in chunks)", n, s.m.maxStep)
	case s.cfg != nil && s.cfg.MaxWrite > 0 && n > s.cfg.MaxWrite:
		return nil, 0, fmt.Errorf("cpu: %d tokens in one step exceed the cache's max_write %d", n, s.cfg.MaxWrite)
	case !s.CanExtend(n):
		return nil, 0, fmt.Errorf("cpu: %w: %d tokens after %d exceed capacity %d", engine.ErrCacheFull, n, s.Len(), s.Capacity())
	}
	for i, p := range positions {
		if p != int64(s.Len()+i) {
			return nil, 0, fmt.Errorf("cpu: position %d at index %d; positions must run from Len() = %d", p, i, s.Len())
		}
	}
	for _, id := range ids {
		if id < 0 || id >= int64(s.m.vocab) {
			return nil, 0, fmt.Errorf("cpu: token id %d outside the vocabulary (0..%d)", id, s.m.vocab-1)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}

	gr := s.m.graph
	clear(s.slots)
	clear(s.vals)
	copy(s.slots, s.m.consts)
	for _, it := range s.m.initSlots {
		s.slots[it.t] = it.x
	}
	for t, x := range s.mut {
		s.slots[t] = x
	}
	s.hdrs.reset()
	s.idsBuf = append(s.idsBuf[:0], ids...)
	s.posBuf = append(s.posBuf[:0], positions...)
	s.slots[s.m.inIDs] = s.newI(stI64, []int{1, n}, s.idsBuf)
	s.slots[s.m.inPos] = s.newI(stI64, []int{n}, s.posBuf)
	s.bindRows(n, lastOnly)
	s.arena.reset(s.m.reusesBuffers(n))
	s.plans = s.plans[:0]
	s.lastOnly = lastOnly && s.m.skipsRows()

	s.acts = nil
	if fuseRoPE {
		s.acts = s.m.acts
	}
	if err := s.run(ctx, gr.Instructions); err != nil {
		return nil, 0, err
	}

	lt, err := s.get(s.m.logits)
	if err != nil {
		return nil, 0, fmt.Errorf("cpu: logits: %w", err)
	}
	V := s.m.vocab
	rows := s.logitRows(n, lastOnly)
	if lt.numel() != rows*V || lt.shape[len(lt.shape)-1] != V {
		return nil, 0, fmt.Errorf("cpu: logits of shape %v, want [1, %d, %d]", lt.shape, rows, V)
	}
	if cap(s.logitsBuf) < rows*V {
		s.logitsBuf = make([]float32, rows*V)
	}
	s.logits = s.logitsBuf[:rows*V]
	copy(s.logits, lt.floats(s.logits[:0]))
	if lastOnly && rows == n && n > 1 {
		s.logits = s.logits[(n-1)*V:]
	}

	if s.seq != nil {
		if len(s.plans) == 0 {
			return nil, 0, errors.New("cpu: the graph wrote no cache")
		}
		for _, p := range s.plans {
			s.seq.Commit(p)
		}
	} else {
		for t := range s.mut {
			x := s.slots[t]
			if x == nil || x.f == nil || !x.contiguous() || x.off != 0 {
				return nil, 0, fmt.Errorf("cpu: mutable buffer slot %d lost its storage", t)
			}
			// x is a step header: the buffer keeps copies.
			if m := s.mut[t]; m != x {
				if len(m.f) > 0 && len(x.f) > 0 && &m.f[0] != &x.f[0] {
					s.spare[t] = m.f
				}
				m.dt, m.f, m.h, m.i, m.off = x.dt, x.f, x.h, x.i, x.off
				m.shape = append(m.shape[:0], x.shape...)
				m.strides = append(m.strides[:0], x.strides...)
			}
		}
		// A replaced buffer is reused next step unless a buffer still
		// holds it.
		for t, old := range s.spare {
			for _, m := range s.mut {
				if len(m.f) > 0 && &m.f[0] == &old[0] {
					delete(s.spare, t)
					break
				}
			}
		}
		s.length += n
	}
	clear(s.slots)
	s.ip = -1
	s.peak = max(s.peak, s.Memory().ActiveBytes)
	return s.logits, n, nil
}

// run executes the instruction chain. A graph that passed Parse and
// checkNodes can still be inconsistent in ways the interpreter only meets
// at run time; a panic from such a graph becomes an error naming the
// instruction instead of taking the process down.
func (s *session) run(ctx context.Context, chain []g.Instruction) (err error) {
	i := 0
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cpu: instruction %d (%s): malformed graph: %v", i, chain[i].Kind, r)
		}
	}()
	for ; i < len(chain); i++ {
		s.ip = i
		if i&7 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if s.acts != nil && s.acts[i].kind != actRun {
			if err := s.fused(s.acts[i]); err != nil {
				return fmt.Errorf("cpu: instruction %d (%s, fused): %w", i, chain[i].Kind, err)
			}
			if s.arena.track {
				s.release(i, i)
			}
			continue
		}
		if s.arena.track {
			s.holdReplaced(i)
		}
		if err := s.exec(chain[i]); err != nil {
			return fmt.Errorf("cpu: instruction %d (%s): %w", i, chain[i].Kind, err)
		}
		if s.arena.track {
			s.release(i, i+s.skip)
		}
		i += s.skip
		s.skip = 0
	}
	return nil
}

// fused does a main-chain instruction's part in a fused plan (fuseAct).
func (s *session) fused(a fuseAct) error {
	switch a.kind {
	case actRoPE:
		if len(s.ropeHeld) < len(s.m.ropes) {
			s.ropeHeld = make([]*tensor, len(s.m.ropes))
		}
		t, err := s.ropeCompute(int(a.k))
		s.ropeHeld[a.k] = t
		return err
	case actRoPESet:
		t := s.ropeHeld[a.k]
		s.ropeHeld[a.k] = nil
		if t == nil {
			return errors.New("rotary embedding set before it was computed")
		}
		return s.set(s.m.ropes[a.k].out, t)
	}
	return nil // actSkip
}

func (s *session) Rewind(newLen int) error {
	if s.closed {
		return engine.ErrClosed
	}
	if s.seq == nil {
		if newLen == s.length {
			return nil
		}
		return fmt.Errorf("cpu: rewind of an in-graph model: %w", engine.ErrUnsupported)
	}
	return s.seq.Rewind(newLen)
}

// CanRewind reports whether Rewind(newLen) would be accepted: what the
// cache sequence allows (no sliding-window cache has overwritten cells the
// shorter length needs); an in-graph cache only stays where it is.
func (s *session) CanRewind(newLen int) bool {
	if s.closed {
		return false
	}
	if s.seq == nil {
		return newLen == s.length
	}
	return s.seq.CanRewind(newLen)
}

func (s *session) Clear() error {
	if s.closed {
		return engine.ErrClosed
	}
	if s.seq != nil {
		s.seq.Clear()
		return nil
	}
	s.resetMutable()
	return nil
}

func (s *session) Len() int {
	if s.seq != nil {
		return s.seq.Len()
	}
	return s.length
}

func (s *session) Capacity() int {
	if s.seq != nil {
		return s.seq.Capacity()
	}
	return s.capac
}

func (s *session) CanExtend(n int) bool {
	if s.seq != nil {
		return s.seq.CanExtend(n)
	}
	return n >= 0 && s.length+n <= s.capac
}

func (s *session) Vocab() int { return s.m.vocab }

func (s *session) Memory() engine.Memory {
	var kv int64
	for i := range s.kv {
		kv += s.kv[i].bytes()
	}
	for _, t := range s.mut {
		kv += int64(len(t.f)) * 4
	}
	// The program's heap (init-chain results, converted quantization
	// scales) counts too; its mapped weights do not.
	active := kv + s.arena.bytes() + int64(cap(s.logitsBuf)+cap(s.kbuf)+cap(s.vbuf))*4 + s.m.heapBytes
	return engine.Memory{KVBytes: kv, ActiveBytes: active, PeakBytes: max(s.peak, active)}
}

func (s *session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.kv, s.mut, s.slots = nil, nil, nil
	return s.m.done()
}
