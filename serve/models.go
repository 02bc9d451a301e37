package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"etchat/inference"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/tokenizer"
)

// entry is one served model: prepared at start, loaded on first use (and
// closed again when another model needs the room).
type entry struct {
	id, path string
	created  int64 // the file's mtime, seconds: /v1/models' created
	prep     *inference.Model
	policy   kvcache.Policy
	// tokenBytes is the longest token's length in bytes (its vocabulary
	// string, added tokens included), for the bound on a prompt's text.
	tokenBytes int
	// turn is the model's one generation slot: whoever holds it may use
	// loaded and pc.
	turn   chan struct{}
	queued atomic.Int64 // requests waiting or running
	avgNs  atomic.Int64 // a running mean of service times (turn held), for Retry-After
	// runningSince is when the request holding the turn took it (Unix
	// ns; 0: none), for Retry-After.
	runningSince atomic.Int64

	loaded   *inference.Model // slot 0's model: the engine, the cache config
	slots    []*slot          // the sessions open, slots[0] on loaded
	prog     *Program         // the Host's program loaded is opened on; nil: the server's own
	lastUsed time.Time
}

// ModelID is the id a model is served as: its folder's name for a
// model.pte (an export's usual layout), else the file's name without
// .pte, as the app's library names it.
func ModelID(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // model.pte in the working folder is that folder's model
	}
	base := filepath.Base(path)
	if strings.EqualFold(base, "model.pte") {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func prepare(path string, o inference.LoadOptions) (*entry, error) {
	m, err := inference.Prepare(path, o)
	if err != nil {
		return nil, err
	}
	if m.Info.Kind != modelinfo.OffGraph {
		return nil, fmt.Errorf("%s is an %s model; serving needs an off-graph KV cache, which rewinds between requests (re-export with --use-offgraph-cache)", path, m.Info.Kind)
	}
	if m.Chat == nil { // the API speaks text
		return nil, &inference.TokenizerError{Path: filepath.Join(filepath.Dir(path), modelinfo.TokenizerFile), Given: o.Tokenizer != "", Err: os.ErrNotExist}
	}
	e := &entry{id: ModelID(path), path: path, prep: m, policy: o.Policy, turn: make(chan struct{}, 1), tokenBytes: longestToken(m.Chat.HF)}
	if fi, err := os.Stat(path); err == nil {
		e.created = fi.ModTime().Unix()
	}
	return e, nil
}

// longestToken is the length in bytes of t's longest token string: a
// vocabulary string is never shorter than the text it stands for
// (byte-level "Ġ" is 2 bytes for a space's 1, SentencePiece's "▁" 3,
// a byte-fallback token 6 for 1 byte). nil (no tokenizer.json): unbounded.
func longestToken(t *tokenizer.Tokenizer) int {
	if t == nil {
		return 0
	}
	n := 0
	for id := range t.VocabSize() {
		if s, ok := t.Token(id); ok {
			n = max(n, len(s))
		}
	}
	for _, a := range t.AddedTokens() {
		n = max(n, len(a.Content))
	}
	return n
}

// promptSlack allows for normalizers that shrink text before it is
// tokenized (Unicode composition joins up to three code points into one;
// accent stripping drops combining marks).
const promptSlack = 4

// maxPromptBytes is the longest prompt text that could fit the context:
// any longer one is more than Capacity tokens, however it tokenizes.
func (e *entry) maxPromptBytes() int {
	if e.tokenBytes == 0 {
		return math.MaxInt
	}
	return e.prep.Capacity() * e.tokenBytes * promptSlack
}

// unload closes the model's session; the caller holds its turn (or the
// server is shut down).
func (e *entry) unload() {
	for _, sl := range e.slots {
		sl.m.Close()
	}
	e.loaded, e.slots, e.prog = nil, nil, nil
}

// retryAfter estimates when one place in the queue frees up: when the
// request holding the model's turn is done, that is the mean of the
// recent service times less what the running request has had already
// (at least a tenth of the mean: it may be a long one). Only one place is
// waited for, not the whole queue: the client retrying takes the first
// place that frees.
func (e *entry) retryAfter() time.Duration {
	avg := time.Duration(e.avgNs.Load())
	if avg <= 0 {
		return time.Second // nothing measured yet
	}
	left := avg
	if since := e.runningSince.Load(); since != 0 {
		left -= time.Since(time.Unix(0, since))
	}
	return max(left, avg/10, time.Millisecond)
}

// note folds a request's duration into the running mean.
func (e *entry) note(d time.Duration) {
	old := e.avgNs.Load()
	if old == 0 {
		e.avgNs.Store(int64(d))
		return
	}
	e.avgNs.Store((3*old + int64(d)) / 4)
}

// acquire queues for the model's turn: a 429 when the queue is full, nil
// error and a release function once the turn is ours. A client that gives
// up while waiting leaves the queue.
func (s *Server) acquire(ctx context.Context, e *entry) (func(), *apiError) {
	if n := e.queued.Add(1); n > int64(1+max(0, s.opts.QueueLimit)) {
		e.queued.Add(-1)
		return nil, busy(e.retryAfter(), fmt.Sprintf("model %q is busy: %d requests are queued (the limit is %d); retry later",
			e.id, n-2, max(0, s.opts.QueueLimit)))
	}
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		e.queued.Add(-1)
		return nil, unavailable("the request was canceled while queued")
	case <-s.stopping:
		e.queued.Add(-1)
		return nil, unavailable("the server is shutting down")
	}
	if s.closing.Load() { // the turn came free as the shutdown began
		<-e.turn
		e.queued.Add(-1)
		return nil, unavailable("the server is shutting down")
	}
	e.runningSince.Store(time.Now().UnixNano())
	return func() { e.runningSince.Store(0); <-e.turn; e.queued.Add(-1) }, nil
}

// load opens the model if it is not open; the caller holds e's turn.
// With a Host the session is opened on the host's program (reopened when
// the host has loaded the file anew); else, when MaxModels are open, the
// least recently used idle one is closed first.
func (s *Server) load(ctx context.Context, e *entry) *apiError {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	var prog *Program
	if s.opts.Host != nil {
		var err error
		if prog, err = s.opts.Host.Program(e.path); err != nil {
			e.unload() // the host closed it: so does the server
			return unavailable(err.Error())
		}
	}
	if e.loaded != nil && e.prog == prog {
		e.lastUsed = time.Now()
		return nil
	}
	e.unload() // a program the host has replaced
	if s.closing.Load() {
		return unavailable("the server is shutting down")
	}
	if prog == nil {
		if ae := s.makeRoom(e); ae != nil {
			return ae
		}
	}
	return s.open(ctx, e, prog)
}

// makeRoom closes idle models until fewer than MaxModels are open; the
// caller holds loadMu.
func (s *Server) makeRoom(e *entry) *apiError {
	for s.openCount() >= s.opts.MaxModels {
		victim := s.idleLRU()
		if victim == nil {
			return busy(e.retryAfter(), fmt.Sprintf("%d models are loaded (--max-models) and all are busy; retry later", s.opts.MaxModels))
		}
		victim.unload()
		<-victim.turn
	}
	return nil
}

func (s *Server) openCount() int {
	n := 0
	for _, o := range s.models {
		if o.loaded != nil {
			n++
		}
	}
	return n
}

// idleLRU is the least recently used open model nobody is using, with
// its turn taken (so that no request starts on it while it closes); nil
// when every open model is busy.
func (s *Server) idleLRU() *entry {
	var victim *entry
	for _, o := range s.models {
		if o.loaded == nil || (victim != nil && !o.lastUsed.Before(victim.lastUsed)) {
			continue
		}
		select {
		case o.turn <- struct{}{}: // idle: take its turn to close it
			if victim != nil {
				<-victim.turn
			}
			victim = o
		default:
		}
	}
	return victim
}

// open opens e's session: on prog's engine when the server shares a
// host's program, else on the engine the load options choose.
func (s *Server) open(ctx context.Context, e *entry, prog *Program) *apiError {
	m, err := e.prep.WithPolicy(e.policy)
	switch {
	case err != nil:
	case prog != nil:
		sel := prog.Engine
		// The host's session has run on this engine: no probe, and no
		// fallback to another engine (which would load a second program).
		sel.Auto = false
		err = m.OpenOn(ctx, sel)
	default:
		err = m.Open(ctx)
	}
	if err != nil {
		return serverError(fmt.Errorf("loading %s: %w", e.id, err))
	}
	sl, err := newSlot(0, m)
	if err != nil {
		return serverError(err)
	}
	e.loaded, e.slots, e.prog, e.lastUsed = m, []*slot{sl}, prog, time.Now()
	s.logf("loaded %s (%s; up to %d slots)", e.id, m.Engine.String(), s.slotCount(m.Engine))
	return nil
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r, "GET"))
		return
	}
	data := make([]map[string]any, 0, len(s.models))
	for _, e := range s.models {
		data = append(data, e.object())
	}
	writeJSON(w, map[string]any{"object": "list", "data": data})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r, "GET"))
		return
	}
	e, ok := s.byID[r.PathValue("id")]
	if !ok {
		writeError(w, notFound(r.PathValue("id")))
		return
	}
	writeJSON(w, e.object())
}

func (e *entry) object() map[string]any {
	return map[string]any{"id": e.id, "object": "model", "created": e.created, "owned_by": "etchat",
		"context_length": e.prep.Capacity(), "etchat": modelDetails(e.prep)}
}

// modelDetails is what etchat adds to a model object: the largest step,
// the vocabulary, the program's logits-to-keep mode and activation dtype
// (newer exports publish them), and the KV storage dtype with where it came
// from.
func modelDetails(m *inference.Model) map[string]any {
	md := m.Info.Metadata
	d := map[string]any{"prefill_chunk": m.PrefillChunk(), "vocab_size": m.Info.VocabSize, "logits_to_keep": md.LogitsMode.String()}
	if md.ActivationDType != 0 {
		d["activation_dtype"] = md.ActivationDType.Flag()
	}
	if m.Cache != nil {
		d["kv_dtype"], d["kv_dtype_from"] = m.Cache.DType.Flag(), m.Cache.DTypeFrom
	}
	return d
}

func methodNotAllowed(r *http.Request, want string) *apiError {
	return &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
		Message: fmt.Sprintf("%s %s: use %s", r.Method, clip(r.URL.Path), want)}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
