package mlx

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// sessionPool keeps closed off-graph sessions for reuse, one per model and
// cache config. Each native session is a loaded "forward" with its own
// cache, and loading it reads the program again; a chat app opens a
// session per conversation. So Close parks a healthy off-graph session
// here, cleared, and Open of the same file with the same config takes it
// back instead of loading anything; Open of another file or config closes
// the parked ones first, so switching models never holds two programs'
// sessions where one would do. In-graph sessions cannot be cleared and are
// never parked.
//
// What is parked is bounded: at most maxParked sessions (the oldest is
// closed first), none whose KV pools grew past maxParkedKV (a clear keeps a
// pool's grown size, which a parked session would go on holding), and by
// size against the device's working set: the parked sessions together hold
// at most 1/parkShare of it, counting each one's KV pools and, where MLX
// copies the weights into each session (its CPU and CUDA allocators; or a
// library that does not share them), its weights; on Metal the sessions of
// one model share one copy, and parking costs a cache, not a model.
// The app calls Engine.CloseIdle when it unloads a model or changes engine.
type sessionPool struct {
	mu   sync.Mutex
	idle []idleSession
}

// The bounds of the pool (variables for the tests).
var (
	maxParked   = 2
	maxParkedKV = int64(512 << 20)
	parkShare   = int64(4)
)

// parkBudget is the most the parked sessions may hold together: a
// parkShare-th of the working set, unbounded where the library cannot say.
func (l *library) parkBudget() int64 {
	if l.limits.WorkingSet <= 0 {
		return math.MaxInt64
	}
	return l.limits.WorkingSet / parkShare
}

// sessionWeights is what a session of a model with weights bytes holds
// alone: nothing where MLX wraps the library's shared copy (Metal, with a
// library that shares and sharing not turned off), else a copy.
func (l *library) sessionWeights(weights int64) int64 {
	if l.dev.Kind == "metal" && l.sharedWeights != nil && os.Getenv(EnvSharedWeights) != "0" {
		return 0
	}
	return weights
}

// EnvSharedWeights set to 0 turns the library's weight sharing off (each
// session's program mapped and copied on its own, as before it existed);
// the library reads it when a program or session is opened.
const EnvSharedWeights = "ETCHAT_SHARED_WEIGHTS"

type idleSession struct {
	key      string
	h        sessionHandle
	vocab    int
	capacity int
	maxLen   int
	mode     engine.LogitsMode
	weights  int64 // the weights it holds alone (Session.weights)
	bytes    int64 // what it holds parked: KV pools and weights
}

// poolKey names what a session is bound to: the file (by absolute path,
// size and modification time, so a re-export is not mistaken for the old
// program) and every field of the cache config. "" (never pooled) for
// in-graph sessions, and for a file that cannot be read: the library then
// reports why.
func poolKey(path string, cfg *kvcache.Config) string {
	if cfg == nil {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	st, err := os.Stat(abs)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return fmt.Sprintf("%s|%d|%d|%d/%d/%d/%d|%v", abs, st.Size(), st.ModTime().UnixNano(),
		cfg.Capacity, cfg.InitialCapacity, cfg.DType, cfg.MaxWrite, cfg.Layers)
}

// take removes and returns the idle session for key, if any.
func (p *sessionPool) take(key string) (idleSession, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.idle {
		if s.key == key {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return s, true
		}
	}
	return idleSession{}, false
}

// others removes and returns the idle sessions not bound to key.
func (p *sessionPool) others(key string) []idleSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out, keep []idleSession
	for _, s := range p.idle {
		if s.key == key {
			keep = append(keep, s)
		} else {
			out = append(out, s)
		}
	}
	p.idle = keep
	return out
}

// put parks s; it returns the sessions displaced (to close): one parked
// for the same key, then the oldest beyond maxParked or while the parked
// sessions hold more than budget bytes together (s, the newest, stays: the
// caller parks nothing larger than budget).
func (p *sessionPool) put(s idleSession, budget int64) []idleSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []idleSession
	total := s.bytes
	keep := []idleSession{}
	for _, old := range p.idle {
		if old.key == s.key {
			out = append(out, old)
			continue
		}
		keep = append(keep, old)
		total += old.bytes
	}
	p.idle = append(keep, s)
	for len(p.idle) > 1 && (len(p.idle) > max(maxParked, 0) || total > budget) {
		out = append(out, p.idle[0])
		total -= p.idle[0].bytes
		p.idle = p.idle[1:]
	}
	if len(p.idle) > max(maxParked, 0) { // maxParked 0: park nothing
		out = append(out, p.idle...)
		p.idle = nil
	}
	return out
}

// closeAll closes the sessions given; the first error is returned.
func (l *library) closeIdle(ss []idleSession) error {
	var first error
	for _, s := range ss {
		if err := l.closeSession(s.h); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// CloseIdle closes the sessions parked for reuse (see Open), releasing
// their methods and caches; the app calls it when it unloads a model or
// changes engine.
func (e *Engine) CloseIdle() error {
	err := e.lib.closeIdle(e.lib.pool.others("\x00"))
	// What they freed is in MLX's buffer cache until it is cleared.
	if cerr := e.lib.dropCache(); err == nil {
		err = cerr
	}
	return err
}

// Idle is the number of sessions parked for reuse.
func (e *Engine) Idle() int {
	e.lib.pool.mu.Lock()
	defer e.lib.pool.mu.Unlock()
	return len(e.lib.pool.idle)
}
