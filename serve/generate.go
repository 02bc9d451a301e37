package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"etchat/inference"
	"etchat/inference/sampler"
)

// errStopSequence ends a generation whose text reached a stop sequence.
var errStopSequence = errors.New("stop sequence")

// outcome is one answered request, for the response and the stored runs.
type outcome struct {
	prompt  []int
	choices []*choice // generated one after another (n)
	seed    uint64    // the sampler's seed: the request's, else the clock's
	err     error     // a failure (the client's departure included)
	status  int       // the HTTP status sent
	queued  time.Duration
	started time.Time
}

// choice is one generation of a request.
type choice struct {
	index  int
	res    *inference.PrefixResult
	text   string
	finish string // stop, length; "" when it failed
	err    error
	// toks are the generated tokens with their logprobs (when asked);
	// pending those not yet sent with a streamed chunk.
	toks, pending []inference.Token
	offset        int // text bytes sent (a completion's logprobs.text_offset)
	// calls are the tool calls read from the reply (tools.go); text is
	// then the rest of it.
	calls []inference.ToolCall
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) }

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) }

// complete answers a chat or text completion request.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	started := time.Now()
	if r.Method != http.MethodPost {
		writeError(w, methodNotAllowed(r, "POST"))
		return
	}
	body, ae := s.readBody(w, r)
	if ae != nil {
		s.fail(w, r, ae)
		return
	}
	decode := decodeCompletion
	if chat {
		decode = decodeChat
	}
	req, ae := decode(body)
	if ae == nil {
		ae = req.decodeResponseFormat(body)
	}
	if ae == nil && chat {
		ae = req.decodeTools(body)
	}
	if ae != nil {
		s.fail(w, r, ae)
		return
	}
	e, ok := s.byID[req.Model]
	if !ok {
		s.fail(w, r, notFound(req.Model))
		return
	}
	prompt, ae := s.tokenize(r.Context(), e, req)
	if ae != nil {
		s.fail(w, r, ae)
		return
	}
	if !s.enter() {
		s.fail(w, r, unavailable("the server is shutting down"))
		return
	}
	defer s.flight.Done()
	// A generation ends when its client leaves or the server is stopped.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()

	release, ae := s.acquire(ctx, e)
	if ae != nil {
		s.fail(w, r, ae)
		return
	}
	defer release()
	o := &outcome{prompt: prompt, queued: time.Since(started), started: started}
	if ae := s.load(ctx, e); ae != nil {
		s.fail(w, r, ae)
		return
	}
	s.served.Add(1)
	if req.Stream {
		s.stream(ctx, w, e, req, o)
	} else {
		s.answer(ctx, w, e, req, o)
	}
	e.note(time.Since(started) - o.queued)
	s.metrics.request(r.URL.Path, e.id, o.status)
	s.metrics.generated(e.id, o)
	s.record(e, req, body, o)
	s.storeConversation(e, req, o)
	s.logRequest(r, e, o)
}

// readBody reads a POST's JSON body, up to MaxBodyBytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if ae := jsonBody(r); ae != nil {
		return nil, ae
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
				Message: fmt.Sprintf("the request body is over %d bytes", mb.Limit)}
		}
		return nil, badRequest("", "reading the request body: %v", err)
	}
	return body, nil
}

// enter counts a request in flight unless the server is shutting down.
func (s *Server) enter() bool {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.flight.Add(1)
	return true
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, e *apiError) {
	writeError(w, e)
	s.metrics.request(r.URL.Path, "", e.Status)
	s.logf("%s %s %d %s", r.Method, r.URL.Path, e.Status, e.Message)
}

// tokenize is the request's prompt: messages rendered with the model's
// chat template (as the app's chat renders them), or the completion's text
// with the tokenizer's special tokens, or its ids. A prompt that does not
// fit the cache with one generated token is a 400 with the numbers; a text
// too long to fit whatever its tokens (longer than the context times the
// longest token) is refused before it is tokenized, and at most
// GOMAXPROCS prompts are tokenized at once.
func (s *Server) tokenize(ctx context.Context, e *entry, req *request) ([]int, *apiError) {
	if ae := e.prepareTools(req); ae != nil {
		return nil, ae
	}
	ids, ae := s.encode(ctx, e, req)
	if ae != nil {
		return nil, ae
	}
	if len(ids) == 0 {
		return nil, badRequest("messages", "the prompt is empty")
	}
	if c := e.prep.Capacity(); len(ids)+1 > c {
		return nil, tooLong(req, fmt.Sprintf("this model's context is %d tokens; the prompt is %d tokens, and the reply needs at least 1", c, len(ids)))
	}
	return ids, nil
}

// tooLong is the context_length_exceeded 400.
func tooLong(req *request, msg string) *apiError {
	ae := badRequest("messages", "%s", msg)
	if !req.IsChat {
		ae.Param = "prompt"
	}
	ae.Code = "context_length_exceeded"
	return ae
}

// checkIDs refuses prompt token ids outside the model's vocabulary.
func (e *entry) checkIDs(ids []int) *apiError {
	vocab := e.prep.Info.VocabSize
	for i, id := range ids {
		if vocab > 0 && id >= vocab {
			return badRequest("prompt", "prompt token %d is %d, outside the vocabulary of %s (%d)", i, id, e.id, vocab)
		}
	}
	return nil
}

func messageBytes(msgs []inference.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Text)
	}
	return n
}

// checkBytes refuses n bytes of prompt text that cannot fit the context
// however they tokenize.
func (e *entry) checkBytes(req *request, n int) *apiError {
	if limit := e.maxPromptBytes(); n > limit {
		return tooLong(req, fmt.Sprintf("this model's context is %d tokens; the prompt's text is %d bytes, more than any %d tokens of its tokenizer can hold (%d bytes)",
			e.prep.Capacity(), n, e.prep.Capacity(), limit))
	}
	return nil
}

// encode renders and tokenizes the request's prompt (no length check).
func (s *Server) encode(ctx context.Context, e *entry, req *request) ([]int, *apiError) {
	chat := e.prep.Chat
	text, addSpecial := req.Prompt, true
	if req.IsChat {
		// Every template renders each message's text: the texts alone
		// bound the prompt before a long one is rendered.
		if ae := e.checkBytes(req, messageBytes(req.Messages)); ae != nil {
			return nil, ae
		}
	}
	switch {
	case req.IsChat && chat.Template == nil:
		var b strings.Builder
		for _, m := range req.Messages {
			b.WriteString(m.Text)
		}
		text = b.String()
	case req.IsChat:
		var err error
		if text, err = renderTools(chat.Template, req); err != nil {
			return nil, badRequest("messages", "the chat template of %s refuses these messages: %v", e.id, err)
		}
		addSpecial = false
	case req.PromptID != nil:
		return req.PromptID, e.checkIDs(req.PromptID)
	}
	if ae := e.checkBytes(req, len(text)); ae != nil {
		return nil, ae
	}
	select {
	case s.tokenizing <- struct{}{}:
		defer func() { <-s.tokenizing }()
	case <-ctx.Done():
		return nil, unavailable("the request was canceled while waiting to be tokenized")
	}
	ids, err := chat.Tokenizer.Encode(text, addSpecial)
	if err != nil {
		return nil, badRequest("", "tokenizing the prompt: %v", err)
	}
	return ids, nil
}

// run generates req.N choices for req on e's session (the caller holds
// e's turn) with one sampler, whose random stream goes on from one choice
// to the next, passing safe text to emit as it comes (stop sequences held
// back) with the tokens it came from.
func (s *Server) run(ctx context.Context, e *entry, req *request, o *outcome, emit emitFunc) {
	smp, err := sampler.New(req.Sampling)
	if err != nil {
		o.err = err
		return
	}
	o.seed = smp.Seed()
	for i := 0; i < req.N && o.err == nil; i++ {
		c := &choice{index: i}
		o.choices = append(o.choices, c)
		s.runChoice(ctx, e, req, o.prompt, c, smp, emit)
		o.err = c.err
	}
}

// emitFunc passes one choice's text on (its pending tokens are those the
// text came from).
type emitFunc func(c *choice, text string) error

// runChoice generates one choice.
func (s *Server) runChoice(ctx context.Context, e *entry, req *request, prompt []int, c *choice, smp *sampler.Sampler, emit emitFunc) {
	room := e.loaded.Capacity() - len(prompt)
	maxNew := room
	if req.MaxTokens >= 0 {
		maxNew = min(req.MaxTokens, room) // clamped to the capacity
	}
	gen := e.loaded.Generation(maxNew, req.Sampling)
	gen.Sampler = smp
	gen.Logprobs, gen.TopLogprobs = req.Logprobs, req.TopLogprobs
	if err := constrain(e.loaded, req, &gen); err != nil {
		c.err = err // each choice gets its own matcher
		return
	}
	sink := &textSink{stops: req.Stop}
	send := func(text string) error {
		if emit == nil {
			return nil
		}
		return emit(c, text)
	}
	gen.OnToken = func(t inference.Token) error {
		if t.ID >= 0 && req.Logprobs {
			c.toks = append(c.toks, t)
			c.pending = append(c.pending, t)
		}
		out, hit := sink.push(t.Text)
		if out != "" {
			if err := send(out); err != nil {
				return err
			}
		}
		if hit {
			return errStopSequence
		}
		return nil
	}
	res, err := s.generate(ctx, e, prompt, gen)
	c.res = res
	c.finish, err = finish(res, err, sink, send)
	if err != nil {
		c.finish, err = "", s.canceled(ctx, err)
	}
	c.err, c.text = err, sink.text()
	readCalls(req, c)
}

// generate runs the prompt on the prefix cache of the slot that
// continues it furthest, in the program's turn (a host's chat may be
// generating on the same program).
func (s *Server) generate(ctx context.Context, e *entry, prompt []int, gen inference.Options) (*inference.PrefixResult, error) {
	release, err := e.prog.take(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	sl, ae := s.pick(ctx, e, prompt)
	if ae != nil {
		return nil, ae
	}
	if s.opts.NoPrefixReuse {
		if err := sl.pc.Reset(); err != nil {
			return nil, fmt.Errorf("clearing the cache: %w", err)
		}
	}
	defer sl.settled()
	return sl.pc.Generate(ctx, prompt, gen)
}

// finish is a generation's finish reason, once the text held back for a
// stop sequence that never came is passed on; an error ends it without one.
func finish(res *inference.PrefixResult, err error, sink *textSink, emit func(string) error) (string, error) {
	switch {
	case errors.Is(err, errStopSequence):
		return "stop", nil
	case err != nil:
		return "", err
	}
	if rest := sink.flush(); rest != "" && emit != nil {
		if err := emit(rest); err != nil {
			return "", err
		}
	}
	if res.StopReason == inference.StopEOS {
		return "stop", nil
	}
	return "length", nil
}

// canceled says why a generation whose context ended stopped: the server
// shut down or the client left. Other failures are returned as they are.
func (s *Server) canceled(ctx context.Context, err error) error {
	switch {
	case ctx.Err() == nil:
		return err
	case s.ctx.Err() != nil:
		return errors.New("canceled: the server shut down")
	case errors.Is(context.Cause(ctx), context.Canceled):
		return errors.New("canceled: the client disconnected")
	}
	return fmt.Errorf("canceled: %w", context.Cause(ctx))
}

// answer is the non-streaming response.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, e *entry, req *request, o *outcome) {
	s.run(ctx, e, req, o, nil)
	if o.err != nil {
		if ctx.Err() != nil {
			o.status = 499 // nobody to answer (nginx's "client closed request", for the log)
			if s.ctx.Err() != nil {
				o.status = http.StatusServiceUnavailable
				writeError(w, unavailable(o.err.Error()))
			}
			return
		}
		o.status = http.StatusInternalServerError
		writeError(w, serverError(o.err))
		return
	}
	id, now := newID(req.IsChat), time.Now().Unix()
	choices := make([]any, len(o.choices))
	for i, c := range o.choices {
		ch := map[string]any{"index": i, "finish_reason": c.finish, "logprobs": e.logprobsDoc(req, c, c.toks)}
		if req.IsChat {
			ch["message"] = messageDoc(c)
		} else {
			ch["text"] = c.text
		}
		if req.ReturnIDs {
			ch["token_ids"] = nonNil(c.res.GeneratedIDs)
		}
		choices[i] = ch
	}
	doc := map[string]any{"id": id, "object": object(req.IsChat, false), "created": now, "model": e.id,
		"choices": choices, "usage": o.usage()}
	if req.ReturnIDs {
		doc["prompt_token_ids"] = o.prompt
	}
	o.status = http.StatusOK
	writeJSON(w, doc)
}

// stream is the server-sent events response: per choice (one after
// another, each with its index) a chunk per piece of text and one with
// the finish reason; then the usage when asked, then [DONE].
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, e *entry, req *request, o *outcome) {
	x := startEvents(w, req, e.id)
	o.status = http.StatusOK
	if req.IsChat {
		if err := x.send(x.roleChunk(0)); err != nil {
			o.err, o.status = fmt.Errorf("canceled: the client disconnected (%v)", err), 499
			return
		}
	}
	smp, err := sampler.New(req.Sampling)
	if err != nil {
		o.err = err
		s.streamFailed(ctx, x, o)
		return
	}
	o.seed = smp.Seed()
	for i := 0; i < req.N; i++ {
		c := &choice{index: i}
		o.choices = append(o.choices, c)
		if i > 0 && req.IsChat {
			if err := x.send(x.roleChunk(i)); err != nil {
				o.err, o.status = fmt.Errorf("canceled: the client disconnected (%v)", err), 499
				return
			}
		}
		s.streamChoice(ctx, x, e, req, o, c, smp)
		if o.err != nil {
			s.streamFailed(ctx, x, o)
			return
		}
		last := x.chunk(i, "", c.finish, e.logprobsDoc(req, c, c.pending))
		if req.ReturnIDs {
			last["choices"].([]any)[0].(map[string]any)["token_ids"] = nonNil(c.res.GeneratedIDs)
			last["prompt_token_ids"] = o.prompt
		}
		if err := x.send(last); err != nil {
			return
		}
	}
	if req.IncludeUsage {
		_ = x.send(map[string]any{"id": x.id, "object": object(req.IsChat, true), "created": x.created, "model": x.model,
			"choices": []any{}, "usage": o.usage()})
	}
	x.done()
}

// streamChoice generates choice c, its text sent as it comes (a reply
// that may call tools held back from where a call could begin: tools.go),
// setting o.err when it fails.
func (s *Server) streamChoice(ctx context.Context, x *eventStream, e *entry, req *request, o *outcome, c *choice, smp *sampler.Sampler) {
	send := func(c *choice, text string) error {
		err := x.send(x.chunk(c.index, text, nil, e.logprobsDoc(req, c, c.pending)))
		c.offset += len(text)
		c.pending = nil
		return err
	}
	hold := newToolHold(req)
	emit := send
	if hold != nil {
		emit = func(c *choice, text string) error {
			if out := hold.push(text); out != "" {
				return send(c, out)
			}
			return nil
		}
	}
	s.runChoice(ctx, e, req, o.prompt, c, smp, emit)
	if o.err = c.err; o.err == nil && hold != nil {
		o.err = x.sendHeld(c, hold, send)
	}
}

// streamFailed ends a stream whose generation failed: with the error as
// an event when someone is still reading (the server's failure or its
// shutdown), silently when the client left.
func (s *Server) streamFailed(ctx context.Context, x *eventStream, o *outcome) {
	if ctx.Err() == nil || s.ctx.Err() != nil {
		ae := serverError(o.err)
		if s.ctx.Err() != nil {
			ae = unavailable(o.err.Error())
		}
		_ = x.send(map[string]any{"error": ae})
		x.done()
	}
	if ctx.Err() != nil && s.ctx.Err() == nil {
		o.status = 499
	}
}

// eventStream writes one response's server-sent events.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	req     *request
	id      string
	model   string
	created int64
}

// startEvents sends the event stream's headers.
func startEvents(w http.ResponseWriter, req *request, model string) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: http.NewResponseController(w), req: req, id: newID(req.IsChat), model: model, created: time.Now().Unix()}
}

// send writes v as one event and flushes it.
func (x *eventStream) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(x.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return x.rc.Flush()
}

// done ends the stream.
func (x *eventStream) done() {
	fmt.Fprint(x.w, "data: [DONE]\n\n")
	_ = x.rc.Flush()
}

// chunk is one streamed piece of choice index: a chat delta or a
// completion's text, with its tokens' logprobs when asked.
func (x *eventStream) chunk(index int, delta string, finish, logprobs any) map[string]any {
	c := map[string]any{"index": index, "finish_reason": finish, "logprobs": logprobs}
	if x.req.IsChat {
		d := map[string]any{}
		if delta != "" {
			d["content"] = delta
		}
		c["delta"] = d
	} else {
		c["text"] = delta
	}
	doc := map[string]any{"id": x.id, "object": object(x.req.IsChat, true), "created": x.created, "model": x.model, "choices": []any{c}}
	if x.req.IncludeUsage {
		doc["usage"] = nil
	}
	return doc
}

// roleChunk opens a chat choice: the assistant's role, empty content.
func (x *eventStream) roleChunk(index int) map[string]any {
	first := x.chunk(index, "", nil, nil)
	first["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"role": "assistant", "content": ""}
	return first
}

// usage counts the prompt once and every choice's tokens; cached_tokens
// is the first choice's (the others find the whole prompt cached).
func (o *outcome) usage() map[string]any {
	gen, cached := o.counts()
	if len(o.choices) > 0 && o.choices[0].res != nil {
		cached = o.choices[0].res.Cached
	}
	return map[string]any{"prompt_tokens": len(o.prompt), "completion_tokens": gen, "total_tokens": len(o.prompt) + gen,
		"prompt_tokens_details": map[string]any{"cached_tokens": cached}}
}

// counts are the tokens generated over all choices and the cached
// prompt tokens of the last.
func (o *outcome) counts() (gen, cached int) {
	for _, c := range o.choices {
		if c.res != nil && c.res.Result != nil {
			gen += len(c.res.GeneratedIDs)
			cached = c.res.Cached
		}
	}
	return gen, cached
}

func object(chat, chunk bool) string {
	switch {
	case chat && chunk:
		return "chat.completion.chunk"
	case chat:
		return "chat.completion"
	}
	return "text_completion"
}

func newID(chat bool) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	if chat {
		return "chatcmpl-" + hex.EncodeToString(b[:])
	}
	return "cmpl-" + hex.EncodeToString(b[:])
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

func (s *Server) logRequest(r *http.Request, e *entry, o *outcome) {
	if s.opts.Log == nil {
		return
	}
	gen, cached := o.counts()
	msg := ""
	if len(o.choices) > 0 {
		msg = o.choices[len(o.choices)-1].finish
	}
	if o.err != nil {
		msg = o.err.Error()
	}
	s.logf("%s %s %s %d prompt=%d cached=%d completion=%d %s %.0fms", r.Method, r.URL.Path, e.id, o.status,
		len(o.prompt), cached, gen, msg, float64(time.Since(o.started).Microseconds())/1000)
}

// textSink collects a reply's text and holds back what may be the start
// of a stop sequence, so a client never sees part of one.
type textSink struct {
	stops []string
	all   strings.Builder
	sent  int // bytes of all passed on
	done  bool
}

// push adds t and returns the text now safe to pass on; hit is true when
// a stop sequence appeared (the text ends before it).
func (k *textSink) push(t string) (out string, hit bool) {
	if k.done {
		return "", true
	}
	k.all.WriteString(t)
	all := k.all.String()
	if len(k.stops) == 0 {
		out, k.sent = all[k.sent:], len(all)
		return out, false
	}
	from := max(0, k.sent-maxStopLen) // a stop may begin in held-back text
	cut := -1
	for _, stop := range k.stops {
		if i := strings.Index(all[from:], stop); i >= 0 && (cut < 0 || from+i < cut) {
			cut = from + i
		}
	}
	if cut >= 0 {
		cut = max(cut, k.sent)
		out = all[k.sent:cut]
		k.all.Reset()
		k.all.WriteString(all[:cut])
		k.sent, k.done = cut, true
		return out, true
	}
	hold := 0
	for _, stop := range k.stops {
		for l := min(len(stop)-1, len(all)-k.sent); l > hold; l-- {
			if strings.HasSuffix(all, stop[:l]) {
				hold = l
				break
			}
		}
	}
	out, k.sent = all[k.sent:len(all)-hold], len(all)-hold
	return out, false
}

// flush returns the text held back at the end of a generation.
func (k *textSink) flush() string {
	all := k.all.String()
	out := all[k.sent:]
	k.sent = len(all)
	return out
}

func (k *textSink) text() string { return k.all.String() }
