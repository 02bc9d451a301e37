package app

import (
	"context"
	"errors"
	"os"
	"sync"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
)

// engineOpener opens conversations through the one model loader
// (inference.Load): engine choice with its reason and fallback, cache
// config, tokenizer, template, stop set and vocabulary check.
type engineOpener struct {
	prefs    *Prefs              // may be nil
	getenv   func(string) string // the native library search's environment
	programs *chatPrograms       // what the Serve switch's server shares (app/serve.go); may be nil
}

// NewOpener returns the Opener the window uses.
func NewOpener(prefs *Prefs) Opener {
	return &engineOpener{prefs: prefs, getenv: os.Getenv, programs: &chatPrograms{}}
}

func (o *engineOpener) library() string {
	if o.prefs != nil {
		return o.prefs.RunnerLibrary()
	}
	return ""
}

// OpenEngine picks an engine the way conversations do (auto: the native
// engine on a GPU, else the CPU engine).
func (o *engineOpener) OpenEngine(kind string) (engine.Engine, error) {
	sel, err := inference.SelectEngine(kind, engine.Config{Library: o.library(), Getenv: o.getenv})
	return sel.Engine, err
}

func (o *engineOpener) Open(ctx context.Context, info *ModelInfo, s Settings, history []Message, progress func(Progress)) (Session, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	lo := inference.LoadOptions{Engine: s.Engine, Library: o.library(), Getenv: o.getenv, NeedTokenizer: true, Numerics: s.LoadNumerics(),
		Progress: func(st inference.LoadStep) { progress(Progress{Stage: "loading", Done: st.Done, Total: st.Total}) }}
	if info.Kind == modelinfo.OffGraph {
		lo.Policy = s.Policy()
	}
	m, err := inference.Load(ctx, info.Path, lo)
	if err != nil {
		return nil, err
	}
	gen := m.Generation(s.MaxNewTokens, samplingOf(s))
	cs := &convSession{engine: m.Engine, prefill: func(done, total int) {}}
	gen.OnPrefill = func(done, total int) { cs.prefill(done, total) }
	cs.gen = gen
	var conv *inference.Conversation
	if len(history) > 0 {
		// The history is read into the cache after the window shows the
		// conversation (Warm), not before: opening costs no wait.
		conv, cs.warm, err = m.ResumeCold(inference.Restored(history, m.Chat.TurnEndIDs), gen)
	} else {
		conv, err = m.NewConversation(s.SystemPrompt, gen)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	cs.conv, cs.sess = conv, m.Session
	cs.prefill = func(done, total int) {
		if cs.progress != nil {
			cs.progress(Progress{Stage: "prefill", Done: done, Total: total})
		}
	}
	cs.progress = progress
	return o.programs.share(info.Path, cs), nil
}

func samplingOf(s Settings) sampler.Sampling {
	return sampler.Sampling{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, Seed: uint64(s.Seed)}
}

// convSession is a Session over inference.Conversation. mu holds one
// conversation call at a time: an action holds it for its whole run, and
// DraftTokens (from the window's goroutine) only tries it.
type convSession struct {
	mu       sync.Mutex
	conv     *inference.Conversation
	sess     engine.Session
	engine   inference.Selection
	gen      inference.Options
	prefill  func(done, total int)
	progress func(Progress)
	// warm reads a reopened conversation's history into the cache; nil
	// for a new one.
	warm *inference.Warm
}

// Warm reads the rest of a reopened conversation's history into the
// cache, reporting progress after each prefill chunk; a canceled ctx stops
// it between chunks (what was read stays). The next action waits for the
// chunk in progress: Warm holds the session for its whole run.
func (c *convSession) Warm(ctx context.Context, progress func(held, total int)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warm == nil {
		return nil
	}
	return c.warm.Run(ctx, progress)
}

// ToWarm is the tokens the cache holds and those it will hold once Warm
// has run (equal when there is nothing to read).
func (c *convSession) ToWarm() (held, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warm == nil {
		return c.conv.Len(), c.conv.Len()
	}
	return c.warm.Remaining()
}

// stream feeds f the reply's text.
func (c *convSession) stream(f func(string)) func(inference.Token) error {
	return func(t inference.Token) error {
		if f != nil && t.Text != "" {
			f(t.Text)
		}
		return nil
	}
}

// Pending is the transcript with the reply in progress (its last message,
// marked incomplete), from the conversation's own record of the turn.
func (c *convSession) Pending() ([]Message, int, bool) {
	ms, n, ok := c.conv.Pending()
	if !ok {
		return nil, 0, false
	}
	ms[len(ms)-1].StopReason = StopIncomplete
	return ms, n, true
}

func (c *convSession) Send(ctx context.Context, text string, f func(string)) (*Reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.conv.Send(ctx, text, c.stream(f))
	if r == nil && err != nil {
		// No reply: the turn is taken back whole, so the text can go back
		// into the message box and be sent again.
		if ms := c.conv.Messages(); len(ms) > 0 && ms[len(ms)-1].Role == inference.RoleUser && ms[len(ms)-1].Text == text {
			if _, uerr := c.conv.UndoTurn(context.WithoutCancel(ctx)); uerr != nil {
				return nil, errors.Join(err, uerr)
			}
		}
	}
	return r, err
}

func (c *convSession) Regenerate(ctx context.Context, f func(string)) (*Reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.conv.Regenerate(ctx, c.stream(f))
	return r, err
}

func (c *convSession) EditLast(ctx context.Context, text string, f func(string)) (*Reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.conv.EditLast(ctx, text, c.stream(f))
	return r, err
}

func (c *convSession) UndoTurn(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.conv.UndoTurn(ctx)
	return err
}

func (c *convSession) UndoTokens(ctx context.Context, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// n counts the tokens shown, the whole history: what is not read yet
	// is read first.
	if c.warm != nil {
		if err := c.warm.Run(ctx, func(done, total int) {
			c.progress(Progress{Stage: "rebuilding", Done: done, Total: total})
		}); err != nil {
			return err
		}
	}
	_, err := c.conv.UndoTokens(ctx, n)
	return err
}

func (c *convSession) Reset(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conv.Reset()
}

func (c *convSession) Switch(ctx context.Context, msgs []Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.conv.Switch(ctx, inference.Restored(msgs, c.gen.TurnEndIDs))
	return err
}

func (c *convSession) SetSampling(s Settings) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gen
	g.Sampling, g.MaxNewTokens = samplingOf(s), s.MaxNewTokens
	if err := c.conv.SetGeneration(g); err != nil {
		return err
	}
	c.gen = g
	return nil
}

func (c *convSession) DraftTokens(text string) (added, total int, ok bool) {
	if !c.mu.TryLock() {
		return 0, 0, false
	}
	defer c.mu.Unlock()
	added, total, err := c.conv.DraftTokens(text)
	return added, total, err == nil
}

// Messages is the transcript; a history not yet read into the cache keeps
// its stored tokens (what a save keeps).
func (c *convSession) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warm != nil {
		return c.warm.Messages()
	}
	return c.conv.Messages()
}

// Position and UndoInstant wait for the conversation call in progress (a
// warm's chunk): they read what it changes.
func (c *convSession) Position() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conv.Len()
}

func (c *convSession) Capacity() int { return c.conv.Capacity() }

func (c *convSession) UndoInstant() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conv.CanUndoInstantly()
}
func (c *convSession) Engine() EngineInfo {
	return EngineInfo{Name: c.engine.Name, Device: c.engine.Device, Reason: c.engine.Reason, Fallback: c.engine.Fallback, Numerics: c.engine.Numerics}
}

// Close waits for a warm's chunk in progress (the caller cancels the warm
// first).
func (c *convSession) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.Close()
}

// CloseIdle closes what the session's engine keeps for reuse after its
// sessions close (the native engine parks one per model and cache config).
func (c *convSession) CloseIdle() error {
	if r, ok := c.engine.Engine.(interface{ CloseIdle() error }); ok {
		return r.CloseIdle()
	}
	return nil
}
