package serve

// GET /metrics (Prometheus text format, version 0.0.4) and GET /slots
// (the models' slots and queues, as JSON), and llama-server's /tokenize
// and /detokenize with a model field. All need the API key when one is
// set (they tell what is served and asked); /health does not.

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ttftBuckets are the time-to-first-token histogram's upper bounds, in
// seconds.
var ttftBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// metrics are the server's counters since it started.
type metrics struct {
	mu       sync.Mutex
	requests map[[3]string]int64 // endpoint, model, status
	tokens   map[[2]string]int64 // model, kind (prompt, completion, cached)
	ttft     map[string]*histogram
}

type histogram struct {
	counts []int64 // per bucket, not cumulative
	sum    float64
	n      int64
}

func newMetrics() *metrics {
	return &metrics{requests: map[[3]string]int64{}, tokens: map[[2]string]int64{}, ttft: map[string]*histogram{}}
}

// request counts one answered or refused request.
func (m *metrics) request(endpoint, model string, status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[[3]string{endpoint, model, strconv.Itoa(status)}]++
}

// generated counts a request's tokens and each choice's time to first
// token.
func (m *metrics) generated(model string, o *outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gen, _ := o.counts()
	m.tokens[[2]string{model, "prompt"}] += int64(len(o.prompt))
	m.tokens[[2]string{model, "completion"}] += int64(gen)
	h := m.ttft[model]
	if h == nil {
		h = &histogram{counts: make([]int64, len(ttftBuckets))}
		m.ttft[model] = h
	}
	for _, c := range o.choices {
		if c.res == nil || c.res.Result == nil {
			continue
		}
		m.tokens[[2]string{model, "cached"}] += int64(c.res.Cached)
		if v := c.res.Stats.TTFTSeconds; v > 0 {
			h.sum += v
			h.n++
			if i := sort.SearchFloat64s(ttftBuckets, v); i < len(h.counts) {
				h.counts[i]++
			}
		}
	}
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r, "GET"))
		return
	}
	var b strings.Builder
	m := s.metrics
	m.mu.Lock()
	family(&b, "etchat_requests_total", "counter", "Completion requests by endpoint, model and HTTP status.")
	for _, k := range sortedKeys(m.requests, func(k [3]string) string { return strings.Join(k[:], "\x00") }) {
		fmt.Fprintf(&b, "etchat_requests_total{endpoint=%q,model=%q,status=%q} %d\n", k[0], k[1], k[2], m.requests[k])
	}
	family(&b, "etchat_tokens_total", "counter", "Tokens by model and kind: prompt (whole prompts), cached (prompt tokens the cache held), completion (generated).")
	for _, k := range sortedKeys(m.tokens, func(k [2]string) string { return k[0] + "\x00" + k[1] }) {
		fmt.Fprintf(&b, "etchat_tokens_total{model=%q,kind=%q} %d\n", k[0], k[1], m.tokens[k])
	}
	family(&b, "etchat_time_to_first_token_seconds", "histogram", "Time from the start of the prefill to the first token, per generated choice (the engine's, queueing excluded).")
	for _, model := range sortedKeys(m.ttft, func(k string) string { return k }) {
		h, cum := m.ttft[model], int64(0)
		for i, le := range ttftBuckets {
			cum += h.counts[i]
			fmt.Fprintf(&b, "etchat_time_to_first_token_seconds_bucket{model=%q,le=%q} %d\n", model, strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(&b, "etchat_time_to_first_token_seconds_bucket{model=%q,le=\"+Inf\"} %d\n", model, h.n)
		fmt.Fprintf(&b, "etchat_time_to_first_token_seconds_sum{model=%q} %g\n", model, h.sum)
		fmt.Fprintf(&b, "etchat_time_to_first_token_seconds_count{model=%q} %d\n", model, h.n)
	}
	m.mu.Unlock()
	st := s.Status()
	family(&b, "etchat_queue_depth", "gauge", "Requests waiting for a model's turn (the one running excluded).")
	for _, ms := range st {
		fmt.Fprintf(&b, "etchat_queue_depth{model=%q} %d\n", ms.Model, ms.Queued)
	}
	family(&b, "etchat_busy", "gauge", "1 while a model is generating.")
	for _, ms := range st {
		fmt.Fprintf(&b, "etchat_busy{model=%q} %d\n", ms.Model, b2i(ms.Busy))
	}
	family(&b, "etchat_slots", "gauge", "A model's slots by state: open (sessions with a cache), max (--slots).")
	for _, ms := range st {
		fmt.Fprintf(&b, "etchat_slots{model=%q,state=\"open\"} %d\n", ms.Model, len(ms.Slots))
		fmt.Fprintf(&b, "etchat_slots{model=%q,state=\"max\"} %d\n", ms.Model, ms.Max)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	io.WriteString(w, b.String())
}

func family(b *strings.Builder, name, kind, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

func sortedKeys[K comparable, V any](m map[K]V, key func(K) string) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func (s *Server) handleSlots(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, methodNotAllowed(r, "GET"))
		return
	}
	writeJSON(w, map[string]any{"object": "list", "data": s.Status()})
}

// tokenizeBody is /tokenize's and /detokenize's request.
type tokenizeBody struct {
	Model      *string `json:"model"`
	Content    *string `json:"content"`
	AddSpecial bool    `json:"add_special"`
	WithPieces bool    `json:"with_pieces"`
	Tokens     *[]int  `json:"tokens"`
}

// decodeTokenize reads a /tokenize (detok false) or /detokenize body.
func decodeTokenize(body []byte, detok bool) (*tokenizeBody, *apiError) {
	var tb tokenizeBody
	if e := unmarshal(body, &tb); e != nil {
		return nil, e
	}
	if tb.Model == nil || *tb.Model == "" {
		return nil, badRequest("model", "model is required (GET /v1/models lists them)")
	}
	if detok {
		if tb.Tokens == nil {
			return nil, badRequest("tokens", "tokens is required")
		}
		for i, id := range *tb.Tokens {
			if id < 0 {
				return nil, badRequest("tokens", "tokens[%d] is %d, not a token id", i, id)
			}
		}
		return &tb, nil
	}
	if tb.Content == nil {
		return nil, badRequest("content", "content is required")
	}
	return &tb, nil
}

// handleTokenize is llama-server's POST /tokenize with a model field:
// {"model", "content", "add_special", "with_pieces"} → {"tokens": [...]}
// (ids, or {"id", "piece"} with with_pieces).
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	tb, e, ok := s.tokenizeRequest(w, r, false)
	if !ok {
		return
	}
	select {
	case s.tokenizing <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	ids, err := e.prep.Chat.Tokenizer.Encode(*tb.Content, tb.AddSpecial)
	<-s.tokenizing
	if err != nil {
		s.fail(w, r, badRequest("content", "tokenizing: %v", err))
		return
	}
	if !tb.WithPieces {
		writeJSON(w, map[string]any{"tokens": nonNil(ids)})
		return
	}
	pieces := make([]any, len(ids))
	for i, id := range ids {
		pieces[i] = map[string]any{"id": id, "piece": e.tokenText(id)}
	}
	writeJSON(w, map[string]any{"tokens": pieces})
}

// handleDetokenize is llama-server's POST /detokenize with a model field:
// {"model", "tokens"} → {"content"} (special tokens kept).
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	tb, e, ok := s.tokenizeRequest(w, r, true)
	if !ok {
		return
	}
	if vocab := e.prep.Info.VocabSize; vocab > 0 {
		for i, id := range *tb.Tokens {
			if id >= vocab {
				s.fail(w, r, badRequest("tokens", "tokens[%d] is %d, outside the vocabulary of %s (%d)", i, id, e.id, vocab))
				return
			}
		}
	}
	writeJSON(w, map[string]any{"content": e.prep.Chat.Tokenizer.Decode(*tb.Tokens, false)})
}

// tokenizeRequest reads and checks a /tokenize or /detokenize request;
// false when it has answered.
func (s *Server) tokenizeRequest(w http.ResponseWriter, r *http.Request, detok bool) (*tokenizeBody, *entry, bool) {
	if r.Method != http.MethodPost {
		writeError(w, methodNotAllowed(r, "POST"))
		return nil, nil, false
	}
	body, ae := s.readBody(w, r)
	if ae == nil {
		var tb *tokenizeBody
		if tb, ae = decodeTokenize(body, detok); ae == nil {
			e, ok := s.byID[*tb.Model]
			if ok {
				return tb, e, true
			}
			ae = notFound(*tb.Model)
		}
	}
	s.fail(w, r, ae)
	return nil, nil, false
}
