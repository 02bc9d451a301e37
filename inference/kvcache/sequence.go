package kvcache

import (
	"errors"
	"fmt"
)

var (
	// ErrRewindRefused: the cache cannot rewind to the asked length (it
	// would grow, or a ring layer has evicted the cells).
	ErrRewindRefused = errors.New("rewind refused")
	// ErrCacheFull: the step does not fit in the capacity.
	ErrCacheFull = errors.New("kv cache full")
)

// Run is a contiguous range of physical rows.
type Run struct{ Start, Len int }

// Plan is one layer's step: where its T new tokens are written and which
// rows its queries attend over. Read rows, concatenated in order, hold the
// logical positions ReadBase, ReadBase+1, … (a ring wraps into two runs).
type Plan struct {
	Write    [2]Run
	NWrite   int
	Read     [2]Run
	NRead    int
	ReadBase int
}

// Writes returns the write runs.
func (p *Plan) Writes() []Run { return p.Write[:p.NWrite] }

// Reads returns the read runs.
func (p *Plan) Reads() []Run { return p.Read[:p.NRead] }

// End is the logical length after the step.
func (p *Plan) End() int {
	end := p.ReadBase
	for _, r := range p.Reads() {
		end += r.Len
	}
	return end
}

// Sequence is the sequence cache's control state: one logical length shared
// by every layer. It holds no tensors.
type Sequence struct {
	cfg    Config
	length int
	// oldest[l] is the oldest position ring layer l still holds: rows are
	// reused every RingRows positions, and a rewind does not bring
	// overwritten cells back (0 for flat layers).
	oldest []int
}

// NewSequence makes the control state for cfg.
func NewSequence(cfg *Config) (*Sequence, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := *cfg
	c.Layers = append([]Layer(nil), cfg.Layers...)
	return &Sequence{cfg: c, oldest: make([]int, len(c.Layers))}, nil
}

// Config returns the configuration the sequence was made with.
func (s *Sequence) Config() *Config { return &s.cfg }

// Len is the logical length: tokens committed.
func (s *Sequence) Len() int { return s.length }

// Capacity is the most tokens admitted.
func (s *Sequence) Capacity() int { return s.cfg.Capacity }

// CanExtend reports whether n more tokens fit. Ring layers reuse rows, so
// only the capacity bounds it.
func (s *Sequence) CanExtend(n int) bool { return n >= 0 && s.length+n <= s.cfg.Capacity }

// Clear empties the cache.
func (s *Sequence) Clear() {
	s.length = 0
	clear(s.oldest)
}

// Floor is the shortest non-zero length a rewind may reach now (a rewind
// to 0 is a clear and always allowed). The next step after a rewind to n
// attends, in a ring layer of window w, to positions n-w+1 … n-1, so they
// must still be in its rows: n ≥ oldest+w-1.
//
// ExecuTorch's SequenceCache uses length-window here, which is right only
// for a ring of 2w-1 rows that has wrapped and not been rewound since: it
// refuses rewinds a ring that has not wrapped could serve, and accepts
// ones whose cells were overwritten (max_write < window, or a second
// rewind).
func (s *Sequence) Floor() int {
	floor := 0
	for i, l := range s.cfg.Layers {
		if l.Kind == Ring && l.Window > 1 && s.oldest[i] > 0 {
			floor = max(floor, s.oldest[i]+l.Window-1)
		}
	}
	return floor
}

// CanRewind reports whether Rewind(newLen) would succeed.
func (s *Sequence) CanRewind(newLen int) bool {
	return newLen == 0 || (newLen > 0 && newLen <= s.length && newLen >= s.Floor())
}

// Rewind sets the length to newLen, refusing to grow or to reach below
// Floor (except to 0).
func (s *Sequence) Rewind(newLen int) error {
	if newLen < 0 || newLen > s.length {
		return fmt.Errorf("%w: cannot rewind from %d to %d", ErrRewindRefused, s.length, newLen)
	}
	if !s.CanRewind(newLen) {
		return fmt.Errorf("%w: a sliding-window cache has overwritten cells that length %d needs (shortest rewind now %d, or 0)", ErrRewindRefused, newLen, s.Floor())
	}
	s.length = newLen
	for i := range s.oldest {
		s.oldest[i] = min(s.oldest[i], newLen)
	}
	return nil
}

// maxStep is the largest T a layer accepts.
func (s *Sequence) maxStep(l Layer) int {
	if l.Kind != Ring {
		return s.cfg.Capacity
	}
	if s.cfg.MaxWrite > 0 {
		return s.cfg.MaxWrite
	}
	return l.Window
}

// Plan is layer's plan for T tokens starting at position.
func (s *Sequence) Plan(layer, position, T int) (Plan, error) {
	if layer < 0 || layer >= len(s.cfg.Layers) {
		return Plan{}, fmt.Errorf("cache %d out of range (%d caches)", layer, len(s.cfg.Layers))
	}
	if T <= 0 || position < 0 {
		return Plan{}, fmt.Errorf("bad step: %d tokens at position %d", T, position)
	}
	if position+T > s.cfg.Capacity {
		return Plan{}, fmt.Errorf("%w: %d tokens at position %d exceed capacity %d", ErrCacheFull, T, position, s.cfg.Capacity)
	}
	l := s.cfg.Layers[layer]
	if m := s.maxStep(l); T > m {
		return Plan{}, fmt.Errorf("step of %d tokens exceeds max_write %d of cache %d", T, m, layer)
	}
	return planFor(l, s.cfg.RingRows(l), position, T), nil
}

func planFor(l Layer, ringRows, position, T int) Plan {
	var p Plan
	end := position + T
	if l.Kind != Ring {
		p.NWrite, p.Write[0] = 1, Run{position, T}
		p.NRead, p.Read[0] = 1, Run{0, end}
		return p
	}
	p.NWrite = splitRuns(position, T, ringRows, &p.Write)
	start := max(position-l.Window+1, 0)
	p.NRead = splitRuns(start, end-start, ringRows, &p.Read)
	p.ReadBase = start
	return p
}

func splitRuns(start, n, size int, out *[2]Run) int {
	phys := start % size
	first := min(n, size-phys)
	out[0] = Run{phys, first}
	if first < n {
		out[1] = Run{0, n - first}
		return 2
	}
	return 1
}

// Commit advances the length past a step that every layer has executed.
// The step's writes overwrote, in every ring layer, the cells of positions
// RingRows before them.
func (s *Sequence) Commit(p Plan) {
	end := p.End()
	for i, l := range s.cfg.Layers {
		if l.Kind == Ring {
			s.oldest[i] = max(s.oldest[i], end-s.cfg.RingRows(l))
		}
	}
	s.length = max(s.length, end)
}

// PoolRows is how many physical rows layer l's pool has once it holds need
// rows: a flat pool starts at the initial capacity and doubles, never beyond
// the capacity; a ring pool holds all its window+max_write-1 rows from the
// start (ExecuTorch's MLXSequenceCache allocates rings whole).
func (c *Config) PoolRows(l Layer, need int) int {
	limit := c.Rows(l)
	if l.Kind == Ring {
		return limit
	}
	rows := min(c.InitialCapacity, limit)
	if rows <= 0 && need > 0 {
		rows = 1
	}
	for rows < need && rows < limit {
		rows = min(rows*2, limit)
	}
	return rows
}
