package inference

import (
	"context"
	"fmt"
	"strings"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// zeroEngine is a zero-cost engine for testing the loop: its logits are a
// deterministic function of every token in the cache (a running hash), so
// two sessions that hold the same tokens produce the same next token, and a
// cache that holds anything else very likely does not. Admission and rewind
// follow kvcache.Sequence, ring layers included.
type zeroEngine struct {
	vocab int
	cfg   *kvcache.Config
	// boost, when set, gives token boost(prefixHash) a large logit (to steer
	// generation, e.g. towards a stop token).
	boost func(h uint64, pos int) int
}

func (e *zeroEngine) Name() string { return "zero" }

func (e *zeroEngine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	if cfg == nil {
		cfg = e.cfg
	}
	seq, err := kvcache.NewSequence(cfg)
	if err != nil {
		return nil, err
	}
	return &zeroSession{e: e, seq: seq, logits: make([]float32, e.vocab)}, nil
}

type zeroSession struct {
	e        *zeroEngine
	seq      *kvcache.Sequence
	ids      []int64
	hashes   []uint64 // hash of ids[:i+1]
	logits   []float32
	forwards int
	tokensIn int
	closed   bool
	failAt   int // Forward fails when the cache would pass this length (0 = never)
}

func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>31
}

func (s *zeroSession) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	all, err := s.ForwardAll(ctx, ids, positions)
	if err != nil {
		return nil, err
	}
	return all[len(all)-s.e.vocab:], nil
}

func (s *zeroSession) ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error) {
	if s.closed {
		return nil, engine.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 || len(ids) != len(positions) {
		return nil, fmt.Errorf("bad step: %d ids, %d positions", len(ids), len(positions))
	}
	n := s.seq.Len()
	for i, p := range positions {
		if int(p) != n+i {
			return nil, fmt.Errorf("position %d at index %d, want %d", p, i, n+i)
		}
	}
	if s.failAt > 0 && n+len(ids) > s.failAt {
		return nil, fmt.Errorf("injected failure")
	}
	for l := range s.seq.Config().Layers {
		if _, err := s.seq.Plan(l, n, len(ids)); err != nil {
			return nil, err
		}
	}
	plan, _ := s.seq.Plan(0, n, len(ids))
	s.seq.Commit(plan)
	s.forwards++
	s.tokensIn += len(ids)
	out := make([]float32, 0, len(ids)*s.e.vocab)
	for _, id := range ids {
		if id < 0 || int(id) >= s.e.vocab {
			return nil, fmt.Errorf("token %d out of vocabulary %d", id, s.e.vocab)
		}
		h := uint64(0)
		if len(s.hashes) > 0 {
			h = s.hashes[len(s.hashes)-1]
		}
		h = mix(h, uint64(id))
		s.ids = append(s.ids, id)
		s.hashes = append(s.hashes, h)
		for v := 0; v < s.e.vocab; v++ {
			s.logits[v] = float32(mix(h, uint64(v))>>40) / float32(1<<24) * 8
		}
		if s.e.boost != nil {
			s.logits[s.e.boost(h, len(s.ids))] = 100
		}
		out = append(out, s.logits...)
	}
	return out, nil
}

func (s *zeroSession) Rewind(newLen int) error {
	if err := s.seq.Rewind(newLen); err != nil {
		return err
	}
	s.ids, s.hashes = s.ids[:newLen], s.hashes[:newLen]
	return nil
}

func (s *zeroSession) Clear() error {
	s.seq.Clear()
	s.ids, s.hashes = s.ids[:0], s.hashes[:0]
	return nil
}

func (s *zeroSession) Len() int                  { return s.seq.Len() }
func (s *zeroSession) Capacity() int             { return s.seq.Capacity() }
func (s *zeroSession) CanExtend(n int) bool      { return s.seq.CanExtend(n) }
func (s *zeroSession) Vocab() int                { return s.e.vocab }
func (s *zeroSession) Memory() engine.Memory     { return engine.Memory{KVBytes: int64(s.seq.Len()) * 64} }
func (s *zeroSession) Close() error              { s.closed = true; return nil }
func (s *zeroSession) CanRewind(newLen int) bool { return s.seq.CanRewind(newLen) }

func flatConfig(capacity, maxWrite int) *kvcache.Config {
	return &kvcache.Config{Capacity: capacity, InitialCapacity: 16, DType: kvcache.Float32, MaxWrite: maxWrite,
		Layers: []kvcache.Layer{{Kind: kvcache.Flat, KVHeads: 1, HeadDim: 4}, {Kind: kvcache.Flat, KVHeads: 1, HeadDim: 4}}}
}

func ringConfig(capacity, maxWrite, window int) *kvcache.Config {
	c := flatConfig(capacity, maxWrite)
	c.Layers[1] = kvcache.Layer{Kind: kvcache.Ring, Window: window, KVHeads: 1, HeadDim: 4}
	return c
}

func openZero(e *zeroEngine, cfg *kvcache.Config) *zeroSession {
	s, err := e.Open(context.Background(), "", cfg)
	if err != nil {
		panic(err)
	}
	return s.(*zeroSession)
}

// byteTok is a byte-level tokenizer: ids 0..255 are bytes, 256.. are
// special tokens written <name> in text.
type byteTok struct{ specials []string }

func newByteTok() *byteTok {
	return &byteTok{specials: []string{"<s>", "</s>", "<u>", "<a>", "<e>"}}
}

func (t *byteTok) vocab() int { return 256 + len(t.specials) }

func (t *byteTok) special(name string) int {
	for i, s := range t.specials {
		if s == name {
			return 256 + i
		}
	}
	return -1
}

func (t *byteTok) Encode(text string, addSpecial bool) ([]int, error) {
	var out []int
	if addSpecial {
		out = append(out, t.special("<s>"))
	}
outer:
	for i := 0; i < len(text); {
		for j, s := range t.specials {
			if strings.HasPrefix(text[i:], s) {
				out = append(out, 256+j)
				i += len(s)
				continue outer
			}
		}
		out = append(out, int(text[i]))
		i++
	}
	return out, nil
}

func (t *byteTok) Decode(ids []int, skipSpecial bool) string {
	var b []byte
	for _, id := range ids {
		switch {
		case id >= 0 && id < 256:
			b = append(b, byte(id))
		case id >= 256 && id < t.vocab() && !skipSpecial:
			b = append(b, t.specials[id-256]...)
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// tagTemplate renders <s><u>text<e><a>reply<e>… with a generation prompt
// <a>.
type tagTemplate struct{}

func (tagTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	b.WriteString("<s>")
	for _, m := range msgs {
		switch m.Role {
		case RoleUser, RoleSystem:
			b.WriteString("<u>")
		case RoleAssistant:
			b.WriteString("<a>")
		default:
			return "", fmt.Errorf("role %q", m.Role)
		}
		b.WriteString(strings.TrimSpace(m.Text))
		b.WriteString("<e>")
	}
	if addGenerationPrompt {
		b.WriteString("<a>")
	}
	return b.String(), nil
}
