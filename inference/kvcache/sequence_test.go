package kvcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// bruteCache is an independent model of the sequence cache: every layer's
// storage as ints (a unique stamp per write), and the stamps the current
// timeline's positions were written with. It knows nothing of Floor or
// plans; it checks them.
type bruteCache struct {
	cfg     *Config
	rows    [][]int // per layer: the stamp in each physical row (0 = never written)
	current []int   // current[p]: stamp of position p in the current timeline
	stamp   int
}

func newBrute(cfg *Config) *bruteCache {
	b := &bruteCache{cfg: cfg}
	for _, l := range cfg.Layers {
		b.rows = append(b.rows, make([]int, cfg.Rows(l)))
	}
	return b
}

func (b *bruteCache) row(layer, pos int) int {
	l := b.cfg.Layers[layer]
	if l.Kind == Ring {
		return pos % b.cfg.RingRows(l)
	}
	return pos
}

// holds reports whether every layer still has every position a step at
// length n reads besides its own: flat layers 0..n-1, ring layers
// max(0, n-w+1)..n-1.
func (b *bruteCache) holds(n int) bool {
	for li, l := range b.cfg.Layers {
		from := 0
		if l.Kind == Ring {
			from = max(0, n-l.Window+1)
		}
		for p := from; p < n; p++ {
			if b.rows[li][b.row(li, p)] != b.current[p] {
				return false
			}
		}
	}
	return true
}

func randomConfig(r *rand.Rand) *Config {
	cfg := &Config{Capacity: 1 + r.IntN(96), InitialCapacity: r.IntN(8), DType: Float32}
	if r.IntN(4) > 0 {
		cfg.MaxWrite = 1 + r.IntN(8)
	}
	n := 1 + r.IntN(4)
	for i := 0; i < n; i++ {
		l := Layer{Kind: Flat, KVHeads: 1, HeadDim: 2}
		if r.IntN(3) > 0 {
			l.Kind, l.Window = Ring, 1+r.IntN(12)
		}
		cfg.Layers = append(cfg.Layers, l)
	}
	return cfg
}

// maxStep is the largest step every layer accepts.
func maxStep(cfg *Config) int {
	m := cfg.Capacity
	for _, l := range cfg.Layers {
		if l.Kind == Ring {
			if cfg.MaxWrite > 0 {
				m = min(m, cfg.MaxWrite)
			} else {
				m = min(m, l.Window)
			}
		}
	}
	return m
}

func TestSequenceAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 11))
	var rewinds, refused, full int
	for trial := 0; trial < 400; trial++ {
		cfg := randomConfig(r)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("random config invalid: %v", err)
		}
		seq, err := NewSequence(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := newBrute(cfg)
		ms := maxStep(cfg)
		desc := fmt.Sprintf("trial %d cap=%d max_write=%d layers=%+v", trial, cfg.Capacity, cfg.MaxWrite, cfg.Layers)
		var history []string
		fail := func(format string, a ...any) {
			t.Helper()
			t.Fatalf("%s\nhistory %v\n%s", desc, history, fmt.Sprintf(format, a...))
		}
		for op := 0; op < 120; op++ {
			length := seq.Len()
			if length != len(b.current) {
				fail("length %d, brute %d", length, len(b.current))
			}
			// Admission matches len+n ≤ capacity.
			if n := r.IntN(cfg.Capacity + 3); seq.CanExtend(n) != (length+n <= cfg.Capacity) {
				fail("CanExtend(%d) at %d = %v", n, length, seq.CanExtend(n))
			}
			if seq.CanExtend(-1) {
				fail("CanExtend(-1) accepted")
			}
			switch k := r.IntN(10); {
			case k < 6: // a step at the end
				T := 1 + r.IntN(ms)
				history = append(history, fmt.Sprintf("step%d", T))
				if length+T > cfg.Capacity {
					full++
					for li := range cfg.Layers {
						if _, err := seq.Plan(li, length, T); !errors.Is(err, ErrCacheFull) {
							fail("plan of %d at %d past capacity: err %v", T, length, err)
						}
					}
					continue
				}
				b.stamp++
				base := b.stamp * 1000
				for p := length; p < length+T; p++ {
					b.current = append(b.current, base+p-length+1)
				}
				var plans []Plan
				for li, l := range cfg.Layers {
					p, err := seq.Plan(li, length, T)
					if err != nil {
						fail("plan layer %d, %d tokens at %d: %v", li, T, length, err)
					}
					// Writes cover the step's positions, in order.
					pos := length
					for _, w := range p.Writes() {
						for i := 0; i < w.Len; i++ {
							if got, want := w.Start+i, b.row(li, pos); got != want {
								fail("layer %d writes position %d to row %d, want %d", li, pos, got, want)
							}
							b.rows[li][w.Start+i] = b.current[pos]
							pos++
						}
					}
					if pos != length+T {
						fail("layer %d wrote %d positions, want %d", li, pos-length, T)
					}
					plans = append(plans, p)
					_ = l
				}
				// Reads (after every write) hold exactly their positions.
				for li, l := range cfg.Layers {
					p := plans[li]
					wantBase := 0
					if l.Kind == Ring {
						wantBase = max(0, length-l.Window+1)
					}
					if p.ReadBase != wantBase || p.End() != length+T {
						fail("layer %d reads from %d to %d, want %d to %d", li, p.ReadBase, p.End(), wantBase, length+T)
					}
					pos := p.ReadBase
					for _, rr := range p.Reads() {
						for i := 0; i < rr.Len; i++ {
							if got := b.rows[li][rr.Start+i]; got != b.current[pos] {
								fail("layer %d reads row %d for position %d: holds stamp %d, want %d", li, rr.Start+i, pos, got, b.current[pos])
							}
							pos++
						}
					}
				}
				seq.Commit(plans[r.IntN(len(plans))])
				if seq.Len() != length+T {
					fail("length after commit %d, want %d", seq.Len(), length+T)
				}
			case k < 9: // rewind, sometimes past the end
				n := r.IntN(length + 2)
				if r.IntN(3) == 0 && length > 0 {
					n = length - 1 - r.IntN(min(length, 3))
				}
				history = append(history, fmt.Sprintf("rewind%d", n))
				want := n <= length && b.holds(n)
				rewinds++
				if can := seq.CanRewind(n); can != want {
					fail("CanRewind(%d) at %d = %v, brute force %v (floor %d)", n, length, can, want, seq.Floor())
				}
				err := seq.Rewind(n)
				if (err == nil) != want {
					fail("Rewind(%d) at %d: err %v, brute force says %v (floor %d)", n, length, err, want, seq.Floor())
				}
				if err != nil {
					refused++
					if !errors.Is(err, ErrRewindRefused) {
						fail("refusal %v does not wrap ErrRewindRefused", err)
					}
					if seq.Len() != length {
						fail("refused rewind changed length to %d", seq.Len())
					}
					continue
				}
				b.current = b.current[:n]
			default:
				history = append(history, "clear")
				seq.Clear()
				b.current = b.current[:0]
			}
		}
	}
	if refused == 0 || refused == rewinds || full == 0 {
		t.Fatalf("weak coverage: %d rewinds, %d refused, %d full steps", rewinds, refused, full)
	}
	t.Logf("%d rewinds (%d refused), %d steps refused for capacity", rewinds, refused, full)
}

func TestSequencePlanRejectsBadSteps(t *testing.T) {
	cfg := &Config{Capacity: 32, InitialCapacity: 4, DType: BFloat16, MaxWrite: 4,
		Layers: []Layer{{Kind: Flat, KVHeads: 1, HeadDim: 2}, {Kind: Ring, Window: 6, KVHeads: 1, HeadDim: 2}}}
	seq, err := NewSequence(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ layer, pos, T int }{{2, 0, 1}, {-1, 0, 1}, {0, 0, 0}, {0, -1, 1}, {1, 0, 5}, {0, 30, 3}} {
		if _, err := seq.Plan(c.layer, c.pos, c.T); err == nil {
			t.Errorf("Plan(%d, %d, %d) accepted", c.layer, c.pos, c.T)
		}
	}
	if _, err := seq.Plan(0, 0, 32); err != nil {
		t.Errorf("flat layer refused a step of the capacity: %v", err)
	}
}

// The cases where ExecuTorch's floor (length - window) is wrong, fixed here.
func TestSequenceRingRewindFloor(t *testing.T) {
	step := func(seq *Sequence, T int) {
		t.Helper()
		p, err := seq.Plan(0, seq.Len(), T)
		if err != nil {
			t.Fatal(err)
		}
		seq.Commit(p)
	}
	ring := func(window, maxWrite int) *Sequence {
		seq, err := NewSequence(&Config{Capacity: 128, DType: BFloat16, MaxWrite: maxWrite,
			Layers: []Layer{{Kind: Ring, Window: window, KVHeads: 1, HeadDim: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}

	// gemma3 fixture geometry (window 8, chunk 8: 15 rows): the multi-turn
	// rewind from 28 to 20 is served.
	seq := ring(8, 8)
	for seq.Len() < 20 {
		step(seq, min(8, 20-seq.Len()))
	}
	for seq.Len() < 28 {
		step(seq, 1)
	}
	if err := seq.Rewind(20); err != nil {
		t.Errorf("rewind 28→20 in a 15-row ring: %v", err)
	}
	// A second rewind below what the rows still hold is refused: after 28
	// tokens rows hold positions 13..27; length 14 needs 7..13.
	if err := seq.Rewind(14); !errors.Is(err, ErrRewindRefused) {
		t.Errorf("second rewind 20→14 accepted (positions 7..12 were overwritten): %v", err)
	}
	// A ring that has not wrapped holds everything.
	seq = ring(8, 8)
	step(seq, 8)
	step(seq, 4) // 12 tokens in 15 rows
	if err := seq.Rewind(1); err != nil {
		t.Errorf("rewind 12→1 before the ring wrapped: %v", err)
	}
	// max_write below the window: 11 rows; after 20 tokens they hold 9..19,
	// so length 12 (needing 5..11) is gone although 20-8 = 12.
	seq = ring(8, 4)
	for seq.Len() < 20 {
		step(seq, 4)
	}
	if err := seq.Rewind(12); !errors.Is(err, ErrRewindRefused) {
		t.Errorf("rewind 20→12 with 11 rows accepted")
	}
	if err := seq.Rewind(16); err != nil {
		t.Errorf("rewind 20→16 with 11 rows: %v", err)
	}
	// A rewind to 0 is a clear.
	if err := seq.Rewind(0); err != nil || seq.Floor() != 0 {
		t.Errorf("rewind to 0: %v, floor %d", err, seq.Floor())
	}
}
