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
)

// errStopSequence ends a generation whose text reached a stop sequence.
var errStopSequence = errors.New("stop sequence")

// outcome is one answered request, for the response and the stored run.
type outcome struct {
	prompt  []int
	res     *inference.PrefixResult
	text    string
	finish  string // stop, length; "" when it failed
	err     error  // a failure (the client's departure included)
	status  int    // the HTTP status sent
	queued  time.Duration
	started time.Time
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
	if ae := jsonBody(r); ae != nil {
		s.fail(w, r, ae)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
				Message: fmt.Sprintf("the request body is over %d bytes", mb.Limit)})
			return
		}
		writeError(w, badRequest("", "reading the request body: %v", err))
		return
	}
	decode := decodeCompletion
	if chat {
		decode = decodeChat
	}
	req, ae := decode(body)
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
	s.record(e, req, body, o)
	s.logRequest(r, e, o)
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
		n := 0
		for _, m := range req.Messages {
			n += len(m.Text)
		}
		if ae := e.checkBytes(req, n); ae != nil {
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
		if text, err = chat.Template.Render(req.Messages, true); err != nil {
			return nil, badRequest("messages", "the chat template of %s refuses these messages: %v", e.id, err)
		}
		addSpecial = false
	case req.PromptID != nil:
		vocab := e.prep.Info.VocabSize
		for i, id := range req.PromptID {
			if vocab > 0 && id >= vocab {
				return nil, badRequest("prompt", "prompt token %d is %d, outside the vocabulary of %s (%d)", i, id, e.id, vocab)
			}
		}
		return req.PromptID, nil
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

// run generates for req on e's session (the caller holds e's turn),
// passing safe text to emit as it comes (stop sequences held back).
func (s *Server) run(ctx context.Context, e *entry, req *request, o *outcome, emit func(string) error) {
	room := e.loaded.Capacity() - len(o.prompt)
	maxNew := room
	if req.MaxTokens >= 0 {
		maxNew = min(req.MaxTokens, room) // clamped to the capacity
	}
	gen := e.loaded.Generation(maxNew, req.Sampling)
	sink := &textSink{stops: req.Stop}
	gen.OnToken = func(t inference.Token) error {
		out, hit := sink.push(t.Text)
		if out != "" && emit != nil {
			if err := emit(out); err != nil {
				return err
			}
		}
		if hit {
			return errStopSequence
		}
		return nil
	}
	res, err := s.generate(ctx, e, o.prompt, gen)
	o.res = res
	o.finish, err = finish(res, err, sink, emit)
	if err != nil {
		o.finish, err = "", s.canceled(ctx, err)
	}
	o.err, o.text = err, sink.text()
}

// generate runs the prompt on e's prefix cache in the program's turn (a
// host's chat may be generating on the same program).
func (s *Server) generate(ctx context.Context, e *entry, prompt []int, gen inference.Options) (*inference.PrefixResult, error) {
	release, err := e.prog.take(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if s.opts.NoPrefixReuse {
		if err := e.pc.Reset(); err != nil {
			return nil, fmt.Errorf("clearing the cache: %w", err)
		}
	}
	return e.pc.Generate(ctx, prompt, gen)
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
	choice := map[string]any{"index": 0, "finish_reason": o.finish, "logprobs": nil}
	if req.IsChat {
		choice["message"] = map[string]any{"role": "assistant", "content": o.text}
	} else {
		choice["text"] = o.text
	}
	doc := map[string]any{"id": id, "object": object(req.IsChat, false), "created": now, "model": e.id,
		"choices": []any{choice}, "usage": o.usage()}
	if req.ReturnIDs {
		choice["token_ids"] = nonNil(o.res.GeneratedIDs)
		doc["prompt_token_ids"] = o.prompt
	}
	o.status = http.StatusOK
	writeJSON(w, doc)
}

// stream is the server-sent events response: a chunk per piece of text,
// one with the finish reason, the usage when asked, then [DONE].
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, e *entry, req *request, o *outcome) {
	x := startEvents(w, req, e.id)
	o.status = http.StatusOK
	if req.IsChat {
		first := x.chunk("", nil)
		first["choices"].([]any)[0].(map[string]any)["delta"] = map[string]any{"role": "assistant", "content": ""}
		if err := x.send(first); err != nil {
			o.err, o.status = fmt.Errorf("canceled: the client disconnected (%v)", err), 499
			return
		}
	}
	s.run(ctx, e, req, o, func(text string) error { return x.send(x.chunk(text, nil)) })
	if o.err != nil {
		s.streamFailed(ctx, x, o)
		return
	}
	last := x.chunk("", o.finish)
	if req.ReturnIDs {
		last["choices"].([]any)[0].(map[string]any)["token_ids"] = nonNil(o.res.GeneratedIDs)
		last["prompt_token_ids"] = o.prompt
	}
	if err := x.send(last); err != nil {
		return
	}
	if req.IncludeUsage {
		_ = x.send(map[string]any{"id": x.id, "object": object(req.IsChat, true), "created": x.created, "model": x.model,
			"choices": []any{}, "usage": o.usage()})
	}
	x.done()
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

// chunk is one streamed piece: a chat delta or a completion's text.
func (x *eventStream) chunk(delta string, finish any) map[string]any {
	c := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
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

func (o *outcome) usage() map[string]any {
	gen, cached := 0, 0
	if o.res != nil {
		gen, cached = len(o.res.GeneratedIDs), o.res.Cached
	}
	return map[string]any{"prompt_tokens": len(o.prompt), "completion_tokens": gen, "total_tokens": len(o.prompt) + gen,
		"prompt_tokens_details": map[string]any{"cached_tokens": cached}}
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
	gen, cached := 0, 0
	if o.res != nil {
		gen, cached = len(o.res.GeneratedIDs), o.res.Cached
	}
	msg := o.finish
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
