package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"etchat/inference"
	"etchat/inference/chattmpl"
	"etchat/inference/cpu"
	"etchat/inference/kvcache"
	"etchat/inference/mlx"
	"etchat/inference/tokenizer"
)

// engineOpener opens conversations on the real engines: the CPU engine, or
// the Metal runner through the library the preferences name.
type engineOpener struct {
	prefs *Prefs // may be nil
}

// NewOpener returns the Opener the window uses.
func NewOpener(prefs *Prefs) Opener { return &engineOpener{prefs: prefs} }

// selectEngine picks the engine for a conversation.
func (o *engineOpener) selectEngine(kind string) (inference.Engine, string, error) {
	lib := ""
	if o.prefs != nil {
		lib = o.prefs.RunnerLibrary()
	}
	metalCtor := func() (inference.Engine, error) { return mlx.New(mlx.Options{Library: lib}) }
	cpuCtor := func() (inference.Engine, error) { return cpu.New(cpu.Options{}), nil }
	switch kind {
	case "", "auto":
		e, err := metalCtor()
		if err == nil {
			return e, "metal", nil
		}
		return cpuCtor2(cpuCtor)
	case "cpu":
		return cpuCtor2(cpuCtor)
	case "metal":
		e, err := metalCtor()
		if err != nil {
			return nil, "", fmt.Errorf("the Metal engine is not available: %v (set the runner library path in Preferences, or choose the cpu engine)", err)
		}
		return e, "metal", nil
	}
	return nil, "", fmt.Errorf("unknown engine %q: choose auto, cpu or metal", kind)
}

// OpenEngine picks an engine the way conversations do (auto: Metal when its
// runner library loads, else the CPU engine).
func (o *engineOpener) OpenEngine(kind string) (inference.Engine, error) {
	e, _, err := o.selectEngine(kind)
	return e, err
}

func cpuCtor2(f func() (inference.Engine, error)) (inference.Engine, string, error) {
	e, err := f()
	return e, "cpu", err
}

// rawTokenizer adapts the tokenizer to the conversation's interface.
type rawTokenizer struct{ *tokenizer.Tokenizer }

func (t rawTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	return t.Tokenizer.Encode(text, addSpecial), nil
}

// tmplAdapter renders inference messages with a chat template.
type tmplAdapter struct{ t *chattmpl.Template }

func (a tmplAdapter) Render(msgs []inference.Message, addGen bool) (string, error) {
	cm := make([]chattmpl.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chattmpl.Message{Role: m.Role, Content: m.Text}
	}
	return a.t.Render(cm, chattmpl.RenderOptions{AddGenerationPrompt: addGen})
}

func (o *engineOpener) Open(ctx context.Context, info *ModelInfo, s Settings, history []Message, progress func(Progress)) (Session, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	if info.Tokenizer == "" {
		return nil, errors.New("no tokenizer.json next to the model")
	}
	progress(Progress{Stage: "loading", Done: 0, Total: 3})
	tok, err := tokenizer.Load(info.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("the tokenizer could not be read: %w", err)
	}
	dir := filepath.Dir(info.Path)
	tmpl, _, err := chattmpl.Choose(dir, "auto")
	if err != nil {
		return nil, fmt.Errorf("the chat template could not be read: %w", err)
	}
	stops, err := chattmpl.StopTokens(dir, tmpl, tok)
	if err != nil {
		return nil, fmt.Errorf("the stop tokens could not be read: %w", err)
	}
	var turnEnd []int
	if tmpl != nil {
		if id, ok := tok.TokenID(tmpl.TurnEnd()); ok {
			turnEnd = []int{id}
		}
	}
	progress(Progress{Stage: "loading", Done: 1, Total: 3})

	var cfg *kvcache.Config
	chunk := info.PrefillChunk
	if info.Kind == KindOffGraph {
		if cfg, err = info.CacheConfig(s.Policy()); err != nil {
			return nil, fmt.Errorf("cache settings: %w", err)
		}
		chunk = cfg.MaxWrite
	}
	eng, name, err := o.selectEngine(s.Engine)
	if err != nil {
		return nil, err
	}
	engSess, err := eng.Open(ctx, info.Path, cfg)
	if err != nil {
		return nil, err
	}
	rec := &cacheRecord{}
	sess := recordCache(engSess, rec)
	progress(Progress{Stage: "loading", Done: 2, Total: 3})

	opts := inference.ConversationOptions{
		Tokenizer: rawTokenizer{tok},
		System:    s.SystemPrompt,
		Cache:     cfg,
		Generation: inference.Options{
			MaxNewTokens: s.MaxNewTokens,
			Sampling:     inference.Sampling{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, Seed: uint64(s.Seed)},
			StopIDs:      stops,
			TurnEndIDs:   turnEnd,
			PrefillChunk: chunk,
		},
	}
	if tmpl != nil && tmpl.Name != "none" {
		opts.Template = tmplAdapter{tmpl}
	}
	cs := &convSession{engine: name, prefill: func(done, total int) {}, rec: rec}
	opts.Generation.OnPrefill = func(done, total int) { cs.prefill(done, total) }
	var conv *inference.Conversation
	if len(history) > 0 {
		cs.prefill = func(done, total int) { progress(Progress{Stage: "rebuilding", Done: done, Total: total}) }
		conv, err = inference.Resume(ctx, sess, opts, toInference(history))
	} else {
		conv, err = inference.NewConversation(sess, opts)
	}
	if err != nil {
		sess.Close()
		return nil, err
	}
	cs.conv, cs.sess = conv, sess
	cs.prefill = func(done, total int) {
		if cs.progress != nil {
			cs.progress(Progress{Stage: "prefill", Done: done, Total: total})
		}
	}
	cs.progress = progress
	return cs, nil
}

// toInference turns stored messages into the conversation's, placing each
// message's tokens after the previous ones.
func toInference(msgs []Message) []inference.Message {
	out := make([]inference.Message, len(msgs))
	pos := 0
	for i, m := range msgs {
		out[i] = inference.Message{Role: m.Role, Text: m.Text, IDs: append([]int(nil), m.Tokens...), Start: pos}
		if m.Role == inference.RoleAssistant {
			out[i].Generated = append([]int(nil), m.Tokens...)
			if m.Partial {
				out[i].StopReason = stopIncomplete
			}
		}
		if r := m.Stats; r != nil {
			out[i].StopReason = r.StopReason
			st := &inference.Stats{PrefillTokPerSec: r.PrefillTokPerS, DecodeTokPerSec: r.DecodeTokPerS, TTFTSeconds: r.TTFT.Seconds()}
			st.NumPromptTokens, st.NumGeneratedTokens = int64(r.PromptTokens), int64(r.GeneratedTokens)
			out[i].Stats = st
		}
		pos += len(m.Tokens)
	}
	return out
}

// stopIncomplete is the stop reason a restored partial reply carries in
// the conversation, so Messages marks it Partial again.
const stopIncomplete = "incomplete"

// cacheRecord is the token ids in an engine session's cache, kept by
// recordCache's wrapper: what a reply saved mid-stream stores as its
// turn's prompt.
type cacheRecord struct{ ids []int }

func (r *cacheRecord) forwarded(ids, positions []int64, err error) {
	if err != nil || len(ids) == 0 {
		return
	}
	if len(positions) > 0 && int(positions[0]) <= len(r.ids) && positions[0] >= 0 {
		r.ids = r.ids[:positions[0]]
	}
	for _, id := range ids {
		r.ids = append(r.ids, int(id))
	}
}

// recordingSession passes everything to the engine session and keeps rec
// in step with its cache.
type recordingSession struct {
	inference.Session
	rec *cacheRecord
}

func (s *recordingSession) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, err := s.Session.Forward(ctx, ids, positions)
	s.rec.forwarded(ids, positions, err)
	return out, err
}

func (s *recordingSession) ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, err := s.Session.ForwardAll(ctx, ids, positions)
	s.rec.forwarded(ids, positions, err)
	return out, err
}

func (s *recordingSession) Rewind(n int) error {
	err := s.Session.Rewind(n)
	if err == nil && n < len(s.rec.ids) {
		s.rec.ids = s.rec.ids[:n]
	}
	return err
}

func (s *recordingSession) Clear() error {
	err := s.Session.Clear()
	if err == nil {
		s.rec.ids = nil
	}
	return err
}

// rewindingSession is a recordingSession over an engine session that can
// say whether a rewind would be served (the conversation asks).
type rewindingSession struct{ *recordingSession }

func (s rewindingSession) CanRewind(n int) bool {
	return s.Session.(interface{ CanRewind(int) bool }).CanRewind(n)
}

func recordCache(s inference.Session, rec *cacheRecord) inference.Session {
	r := &recordingSession{Session: s, rec: rec}
	if _, ok := s.(interface{ CanRewind(int) bool }); ok {
		return rewindingSession{r}
	}
	return r
}

// convSession is a Session over inference.Conversation.
type convSession struct {
	conv     *inference.Conversation
	sess     inference.Session
	engine   string
	prefill  func(done, total int)
	progress func(Progress)

	// The reply being generated, for Partial: the cache's ids, the
	// prompt's length in them (-1 before the first token), the reply's
	// ids and text so far.
	rec       *cacheRecord
	promptLen int
	genIDs    []int
	genText   strings.Builder
}

// stream feeds f the reply's text and keeps the reply so far for Partial.
func (c *convSession) stream(f func(string)) func(inference.Token) error {
	c.promptLen, c.genIDs = -1, nil
	c.genText.Reset()
	return func(t inference.Token) error {
		if t.ID >= 0 {
			if c.promptLen < 0 {
				c.promptLen = len(c.rec.ids) // the first token is sampled from the prompt's logits
			}
			c.genIDs = append(c.genIDs, t.ID)
		}
		c.genText.WriteString(t.Text)
		if f != nil && t.Text != "" {
			f(t.Text)
		}
		return nil
	}
}

func (c *convSession) Partial() []Message {
	if c.promptLen < 0 {
		return nil
	}
	msgs := c.Messages()
	last := len(msgs) - 1
	if last < 0 || msgs[last].Role != inference.RoleUser {
		return nil
	}
	// The messages before the turn hold the cache's first tokens; the
	// turn's prompt is the rest of what was prefilled.
	start := 0
	for _, m := range msgs[:last] {
		start += len(m.Tokens)
	}
	if start > c.promptLen || c.promptLen > len(c.rec.ids) {
		return nil
	}
	pos := 0
	for _, m := range msgs[:last] {
		if !slices.Equal(m.Tokens, c.rec.ids[pos:pos+len(m.Tokens)]) {
			return nil
		}
		pos += len(m.Tokens)
	}
	msgs[last].Tokens = append([]int(nil), c.rec.ids[start:c.promptLen]...)
	return append(msgs, Message{Role: inference.RoleAssistant, Text: c.genText.String(), Tokens: append([]int(nil), c.genIDs...), Partial: true})
}

func replyOf(r *inference.Reply) Reply {
	if r == nil || r.Result == nil {
		return Reply{}
	}
	st := r.Stats
	return Reply{PromptTokens: int(st.NumPromptTokens), GeneratedTokens: int(st.NumGeneratedTokens),
		PrefillTokPerS: st.PrefillTokPerSec, DecodeTokPerS: st.DecodeTokPerSec,
		TTFT: time.Duration(st.TTFTSeconds * float64(time.Second)), StopReason: r.StopReason,
		Stats: st.Stats}
}

func (c *convSession) Send(ctx context.Context, text string, f func(string)) (Reply, error) {
	r, err := c.conv.Send(ctx, text, c.stream(f))
	return replyOf(r), err
}

func (c *convSession) Regenerate(ctx context.Context, f func(string)) (Reply, error) {
	r, err := c.conv.Regenerate(ctx, c.stream(f))
	return replyOf(r), err
}

func (c *convSession) EditLast(ctx context.Context, text string, f func(string)) (Reply, error) {
	r, err := c.conv.EditLast(ctx, text, c.stream(f))
	return replyOf(r), err
}

func (c *convSession) UndoTurn(ctx context.Context) error {
	_, err := c.conv.UndoTurn(ctx)
	return err
}

func (c *convSession) UndoTokens(ctx context.Context, n int) error {
	_, err := c.conv.UndoTokens(ctx, n)
	return err
}

func (c *convSession) Reset(ctx context.Context) error { return c.conv.Reset() }

func (c *convSession) Messages() []Message {
	ms := c.conv.Messages()
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i] = Message{Role: m.Role, Text: m.Text, Tokens: append([]int(nil), m.IDs...),
			Partial: m.Role == inference.RoleAssistant && m.StopReason == stopIncomplete}
		if m.Stats != nil {
			r := replyOf(&inference.Reply{Result: &inference.Result{Stats: *m.Stats, StopReason: m.StopReason}})
			out[i].Stats = &r
		}
	}
	return out
}

func (c *convSession) Position() int     { return c.conv.Len() }
func (c *convSession) Capacity() int     { return c.conv.Capacity() }
func (c *convSession) UndoInstant() bool { return c.conv.CanUndoInstantly() }
func (c *convSession) Engine() string    { return c.engine }
func (c *convSession) Close() error      { return c.sess.Close() }
