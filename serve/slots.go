package serve

// Slots: several conversations cached per model, as llama-server's slots.
// Each slot is a session with its own cache on the model's engine (the CPU
// engine shares one loaded program among them; the native engine loads
// the weights again for each, so it defaults to one). A request goes to
// the slot whose cache continues its prompt furthest, else to a slot not
// opened yet, else to the least recently used one. Slots are caches, not
// parallelism: generations on one model still take turns.

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"etchat/inference"
)

// DefaultSlots is --slots' default on the CPU engine; other engines get
// one (the native engine's sessions each hold a copy of the weights).
const DefaultSlots = 4

// slot is one session of a model with its prefix cache.
type slot struct {
	id       int
	m        *inference.Model
	pc       *inference.PrefixCache
	lastUsed time.Time
	// promptLen is the last request's prompt length: a request that
	// shares all of it continues this slot's conversation.
	promptLen int
	// For Status, which reads them without the model's turn: the tokens
	// cached after the last generation, requests answered, last use (ns).
	tokens, uses, usedNs atomic.Int64
}

// settled publishes the slot's state after a generation.
func (sl *slot) settled() {
	sl.tokens.Store(int64(sl.pc.Len()))
}

func newSlot(id int, m *inference.Model) (*slot, error) {
	pc, err := inference.NewPrefixCache(m.Session, m.Cache)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &slot{id: id, m: m, pc: pc}, nil
}

// slotCount is how many slots a model on engine sel may have.
func (s *Server) slotCount(sel inference.Selection) int {
	switch {
	case s.opts.Slots > 0:
		return s.opts.Slots
	case sel.Name == "cpu":
		return DefaultSlots
	}
	return 1
}

// pick is the slot to answer prompt on; the caller holds e's turn and e
// is loaded. A slot continues the prompt when it holds the whole prompt
// of its last request (a chat's next turn resends its history; every
// chat shares its template's first tokens, and a long system prompt,
// with every other, which must not count); of those, the one sharing the
// most. Else an empty slot, else a new one while there is room, else the
// least recently used one.
func (s *Server) pick(ctx context.Context, e *entry, prompt []int) (*slot, *apiError) {
	var best, lru, empty *slot
	bestLen := -1
	for _, sl := range e.slots {
		if sl.pc.Len() == 0 && empty == nil {
			empty = sl
		}
		if n := sl.pc.Shared(prompt); n > 0 && n >= sl.promptLen && n > bestLen {
			best, bestLen = sl, n
		}
		if lru == nil || sl.lastUsed.Before(lru.lastUsed) {
			lru = sl
		}
	}
	chosen := lru
	switch {
	case best != nil:
		chosen = best
	case empty != nil:
		chosen = empty
	case len(e.slots) < s.slotCount(e.loaded.Engine):
		sl, ae := s.openSlot(ctx, e)
		if ae != nil {
			return nil, ae
		}
		chosen = sl
	}
	chosen.lastUsed = time.Now()
	chosen.promptLen = len(prompt)
	chosen.uses.Add(1)
	chosen.usedNs.Store(chosen.lastUsed.UnixNano())
	return chosen, nil
}

// openSlot opens another session of e on slot 0's engine (no probe, no
// fallback: the engine has run this program).
func (s *Server) openSlot(ctx context.Context, e *entry) (*slot, *apiError) {
	m, err := e.prep.WithPolicy(e.policy)
	if err == nil {
		sel := e.loaded.Engine
		sel.Auto = false
		err = m.OpenOn(ctx, sel)
	}
	if err != nil {
		return nil, serverError(fmt.Errorf("opening slot %d of %s: %w", len(e.slots), e.id, err))
	}
	sl, err := newSlot(len(e.slots), m)
	if err != nil {
		return nil, serverError(err)
	}
	s.loadMu.Lock()
	e.slots = append(e.slots, sl)
	s.loadMu.Unlock()
	return sl, nil
}

// SlotStatus is one slot of a served model (GET /slots).
type SlotStatus struct {
	ID       int       `json:"id"`
	Tokens   int       `json:"n_cached_tokens"`
	Uses     int64     `json:"n_requests"`
	LastUsed time.Time `json:"last_used"`
}

// ModelStatus is a served model's state (GET /slots).
type ModelStatus struct {
	Model  string       `json:"model"`
	Loaded bool         `json:"loaded"`
	Engine string       `json:"engine,omitempty"`
	Busy   bool         `json:"busy"`
	Queued int64        `json:"queued"`
	Max    int          `json:"max_slots"`
	Slots  []SlotStatus `json:"slots"`
}

// Status is every model's slots and queue. A slot's counts are read
// without its model's turn: a generation may be changing them.
func (s *Server) Status() []ModelStatus {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	out := make([]ModelStatus, 0, len(s.models))
	for _, e := range s.models {
		st := ModelStatus{Model: e.id, Loaded: e.loaded != nil, Busy: e.runningSince.Load() != 0, Queued: e.queued.Load(), Slots: []SlotStatus{}}
		if st.Busy {
			st.Queued-- // queued counts the request running too
		}
		if e.loaded != nil {
			st.Engine, st.Max = e.loaded.Engine.Name, s.slotCount(e.loaded.Engine)
		}
		for _, sl := range e.slots {
			st.Slots = append(st.Slots, SlotStatus{ID: sl.id, Tokens: int(sl.tokens.Load()), Uses: sl.uses.Load(), LastUsed: time.Unix(0, sl.usedNs.Load())})
		}
		out = append(out, st)
	}
	return out
}
