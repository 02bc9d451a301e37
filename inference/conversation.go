package inference

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"etchat/inference/kvcache"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation, as plain values the store can
// persist and Resume can restore.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
	// IDs are the tokens this message holds in the cache now, at positions
	// Start … Start+len(IDs)-1; the messages' IDs concatenated are the
	// cache. A user message holds the prompt tokens its turn prefilled
	// (template markup included, and any tail of the previous reply that
	// re-tokenized differently); a reply holds its generated tokens and the
	// committed turn end. A message whose tokens a later turn replaced holds
	// none.
	IDs   []int `json:"ids,omitempty"`
	Start int   `json:"start"`
	// Generated are a reply's tokens as sampled (stop token excluded).
	Generated []int `json:"generated,omitempty"`
	// StopReason, Capped and Stats describe how a reply was generated.
	StopReason string `json:"stop_reason,omitempty"`
	Capped     bool   `json:"capped,omitempty"`
	Stats      *Stats `json:"stats,omitempty"`
}

// End is the cache position after the message's tokens.
func (m *Message) End() int { return m.Start + len(m.IDs) }

// Tokenizer is what a conversation needs of a tokenizer.
type Tokenizer interface {
	Decoder
	Encode(text string, addSpecial bool) ([]int, error)
}

// Template renders a conversation into prompt text.
type Template interface {
	Render(messages []Message, addGenerationPrompt bool) (string, error)
}

// ConversationOptions configure a conversation.
type ConversationOptions struct {
	Tokenizer Tokenizer
	// Template renders the conversation; nil is raw text (the runner's
	// --chat 0): the messages' texts concatenated and encoded with the
	// tokenizer's special tokens.
	Template Template
	// System, when not empty, opens the conversation as a system message.
	System string
	// Generation: budget, sampling, stop and turn-end ids, prefill chunk.
	// OnToken is ignored (each call takes its own).
	Generation Options
	// Cache, when set, lets the conversation predict rewinds for sessions
	// that cannot say themselves (see CanUndoInstantly).
	Cache *kvcache.Config
}

// Conversation is a chat with one engine session: the messages, the
// tokens in the cache and which message each belongs to, and the
// operations on them. Every turn re-renders the whole conversation, keeps
// the longest cached prefix that agrees with it, and prefills the rest.
// Undo always succeeds: when the cache refuses a rewind (a sliding-window
// layer has overwritten the cells), it is cleared and the kept tokens are
// prefilled again. The CLI's --interactive, the GUI chat and the tests all
// use it. Not safe for concurrent use.
type Conversation struct {
	sess    Session
	tracked *trackedSession
	tok     Tokenizer
	tmpl    Template
	gen     Options
	sampler *Sampler
	msgs    []Message
	cache   []int
}

// NewConversation starts an empty conversation on sess; the session's
// cache is cleared.
func NewConversation(sess Session, opts ConversationOptions) (*Conversation, error) {
	if sess == nil {
		return nil, errors.New("no session")
	}
	if opts.Tokenizer == nil {
		return nil, errors.New("no tokenizer")
	}
	c := &Conversation{tok: opts.Tokenizer, tmpl: opts.Template}
	c.tracked = newTracked(sess, opts.Cache)
	c.sess = c.tracked
	if err := c.SetGeneration(opts.Generation); err != nil {
		return nil, err
	}
	if sess.Len() > 0 {
		if err := c.sess.Clear(); err != nil {
			return nil, fmt.Errorf("clearing the session: %w", err)
		}
	}
	if opts.System != "" {
		c.msgs = append(c.msgs, Message{Role: RoleSystem, Text: opts.System})
	}
	return c, nil
}

// Resume restores a stored conversation: msgs as State returned them. The
// messages' cached tokens are prefilled so the conversation continues
// exactly where it stopped; messages without IDs (or IDs that no longer fit
// the cache) are kept as text and rendered at the next turn.
func Resume(ctx context.Context, sess Session, opts ConversationOptions, msgs []Message) (*Conversation, error) {
	opts.System = ""
	c, err := NewConversation(sess, opts)
	if err != nil {
		return nil, err
	}
	var ids []int
	vocab := sess.Vocab()
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		for _, id := range m.IDs {
			if id < 0 || (vocab > 0 && id >= vocab) {
				return nil, fmt.Errorf("message %d: token %d outside the vocabulary (%d)", i, id, vocab)
			}
		}
		ids = append(ids, m.IDs...)
	}
	c.msgs = cloneMessages(msgs)
	if len(ids) == 0 || !sess.CanExtend(len(ids)+1) {
		for i := range c.msgs {
			c.msgs[i].IDs = nil
		}
		c.fixStarts()
		return c, nil
	}
	if _, err := prefill(ctx, c.sess, ids, c.gen.PrefillChunk, c.gen.OnPrefill, &Stats{}); err != nil {
		c.reconcile(ids)
		return c, fmt.Errorf("resuming: %w", err)
	}
	c.cache = ids
	c.fixStarts()
	return c, nil
}

// SetGeneration replaces the generation options (budget, sampling, stop
// set); a new sampler starts from opts.Sampling.
func (c *Conversation) SetGeneration(opts Options) error {
	s, err := NewSampler(opts.Sampling)
	if err != nil {
		return err
	}
	opts.Sampler, opts.OnToken = nil, nil
	c.gen, c.sampler = opts, s
	return nil
}

// Session is the engine session the conversation drives.
func (c *Conversation) Session() Session { return c.tracked.Session }

// Messages returns a copy of the messages.
func (c *Conversation) Messages() []Message { return cloneMessages(c.msgs) }

// State is the conversation as plain values for the store: the messages
// with their cached token ids, positions, and reply stats.
func (c *Conversation) State() []Message { return c.Messages() }

// CacheIDs returns a copy of the tokens in the cache.
func (c *Conversation) CacheIDs() []int { return append([]int(nil), c.cache...) }

// Len is the number of tokens in the cache.
func (c *Conversation) Len() int { return len(c.cache) }

// Capacity is the cache's capacity.
func (c *Conversation) Capacity() int { return c.sess.Capacity() }

// Reply is the outcome of Send, Regenerate or EditLast.
type Reply struct {
	Message Message // the new assistant message
	*Result
	// Reused is how many cached tokens agreed with the new rendering;
	// Prefilled how many new prompt tokens the turn fed. Reprefilled: the
	// cache refused to rewind to Reused, so it was cleared and the Reused
	// tokens were prefilled again first.
	Reused, Prefilled int
	Reprefilled       bool
}

// Send adds a user message and generates the reply, streaming tokens to
// onToken (may be nil).
func (c *Conversation) Send(ctx context.Context, text string, onToken func(Token) error) (*Reply, error) {
	if n := len(c.msgs); n > 0 && c.msgs[n-1].Role == RoleUser {
		return nil, errors.New("the last message has no reply yet: regenerate or edit it")
	}
	return c.attempt(ctx, onToken, func() error {
		c.msgs = append(c.msgs, Message{Role: RoleUser, Text: text, Start: len(c.cache)})
		return nil
	})
}

// Regenerate drops the last reply and generates it again.
func (c *Conversation) Regenerate(ctx context.Context, onToken func(Token) error) (*Reply, error) {
	return c.attempt(ctx, onToken, func() error {
		u := c.lastUser()
		if u < 0 {
			return errors.New("nothing to regenerate")
		}
		c.msgs = c.msgs[:u+1]
		return nil
	})
}

// EditLast replaces the last user message's text, drops its reply, and
// generates a new one.
func (c *Conversation) EditLast(ctx context.Context, text string, onToken func(Token) error) (*Reply, error) {
	return c.attempt(ctx, onToken, func() error {
		u := c.lastUser()
		if u < 0 {
			return errors.New("no user message to edit")
		}
		c.msgs = c.msgs[:u+1]
		c.msgs[u].Text = text
		return nil
	})
}

// attempt changes the messages and answers them; when that fails before
// the cache changed (a template error, a conversation too long), the
// messages are as they were.
func (c *Conversation) attempt(ctx context.Context, onToken func(Token) error, change func() error) (*Reply, error) {
	saved, cached := cloneMessages(c.msgs), append([]int(nil), c.cache...)
	if err := change(); err != nil {
		return nil, err
	}
	r, err := c.respond(ctx, onToken)
	if r == nil && err != nil && equalIDs(c.cache, cached) {
		c.msgs = saved
		c.fixStarts()
	}
	return r, err
}

func equalIDs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// UndoResult says what an undo did.
type UndoResult struct {
	Len         int  // tokens in the cache after
	Dropped     int  // tokens dropped
	Reprefilled bool // the cache refused the rewind; it was cleared and the kept tokens prefilled again
	Messages    int  // messages removed
}

// UndoTurn removes the last user message and its reply, and rewinds the
// cache to where that turn began.
func (c *Conversation) UndoTurn(ctx context.Context) (UndoResult, error) {
	u := c.lastUser()
	if u < 0 {
		return UndoResult{Len: len(c.cache)}, errors.New("nothing to undo")
	}
	return c.cut(ctx, u, c.msgs[u].Start)
}

// UndoTokens drops the last n tokens from the cache. A reply cut short
// keeps its remaining tokens; a user message that loses tokens, or is left
// without a reply, is removed with the rest of its turn (so more than n
// tokens may go; UndoResult.Dropped says how many).
func (c *Conversation) UndoTokens(ctx context.Context, n int) (UndoResult, error) {
	if n < 0 {
		return UndoResult{Len: len(c.cache)}, fmt.Errorf("cannot undo %d tokens", n)
	}
	target := max(0, len(c.cache)-n)
	first := len(c.msgs) // first message to remove
	for i := range c.msgs {
		m := &c.msgs[i]
		if m.End() <= target || len(m.IDs) == 0 && m.Start < target {
			continue
		}
		if m.Role == RoleAssistant && m.Start < target {
			// Shorten the reply.
			kept := target - m.Start
			m.IDs = m.IDs[:kept]
			m.Generated = m.Generated[:min(len(m.Generated), kept)]
			m.Text = c.tok.Decode(m.Generated, true)
			first = i + 1
		} else {
			first = i
		}
		break
	}
	// A user message left without its reply goes too.
	for first > 0 && first <= len(c.msgs) && c.msgs[first-1].Role == RoleUser {
		first--
	}
	if first < len(c.msgs) {
		target = min(target, c.msgs[first].Start)
	}
	return c.cut(ctx, first, target)
}

// cut removes messages from index first on and brings the cache to target
// tokens.
func (c *Conversation) cut(ctx context.Context, first, target int) (UndoResult, error) {
	before := len(c.cache)
	res := UndoResult{Messages: len(c.msgs) - first}
	c.msgs = c.msgs[:first]
	re, err := c.keep(ctx, target)
	res.Reprefilled = re
	res.Len = len(c.cache)
	res.Dropped = before - res.Len
	return res, err
}

// Reset clears the cache and the messages (a system message stays, out of
// the cache).
func (c *Conversation) Reset() error {
	err := c.sess.Clear()
	var kept []Message
	if len(c.msgs) > 0 && c.msgs[0].Role == RoleSystem {
		kept = []Message{{Role: RoleSystem, Text: c.msgs[0].Text}}
	}
	c.msgs, c.cache = kept, nil
	return err
}

// CanUndoInstantly reports whether UndoTurn would rewind the cache without
// prefilling again (false when there is nothing to undo, or when it cannot
// be known).
func (c *Conversation) CanUndoInstantly() bool {
	u := c.lastUser()
	if u < 0 {
		return false
	}
	return c.canRewind(c.msgs[u].Start)
}

// CanRegenerateInstantly reports whether Regenerate would keep the cache
// up to the last prompt token without prefilling again.
func (c *Conversation) CanRegenerateInstantly() bool {
	u := c.lastUser()
	if u < 0 {
		return false
	}
	return c.canRewind(max(0, c.msgs[u].End()-1))
}

// CanEditInstantly reports whether EditLast would keep the cache up to
// where the last user message begins without prefilling again (the new
// text may agree with a little more).
func (c *Conversation) CanEditInstantly() bool {
	return c.CanUndoInstantly()
}

func (c *Conversation) canRewind(n int) bool {
	if n == len(c.cache) {
		return true
	}
	return c.tracked.CanRewind(n)
}

func (c *Conversation) lastUser() int {
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].Role == RoleUser {
			return i
		}
	}
	return -1
}

// render is the prompt for the conversation so far, with the generation
// prompt.
func (c *Conversation) render() ([]int, error) {
	if c.tmpl == nil {
		var b strings.Builder
		for _, m := range c.msgs {
			b.WriteString(m.Text)
		}
		return c.tok.Encode(b.String(), true)
	}
	text, err := c.tmpl.Render(c.msgs, true)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return c.tok.Encode(text, false)
}

// respond answers the last message, which is the user's.
func (c *Conversation) respond(ctx context.Context, onToken func(Token) error) (*Reply, error) {
	full, err := c.render()
	if err != nil {
		return nil, err
	}
	if len(full) == 0 {
		return nil, errors.New("the rendered prompt is empty")
	}
	if len(full)+1 > c.sess.Capacity() {
		return nil, fmt.Errorf("%w: the conversation is %d tokens, capacity %d (undo or reset)", ErrPromptTooLong, len(full), c.sess.Capacity())
	}
	reuse := commonPrefix(c.cache, full)
	if reuse == len(full) {
		reuse-- // the last prompt token is fed again for its logits
	}
	reply := &Reply{Reused: reuse, Prefilled: len(full) - reuse}
	// Keep the agreeing prefix; when the cache refuses the rewind it is
	// prefilled again, and its tokens stay with the messages they were in.
	if reply.Reprefilled, err = c.keep(ctx, reuse); err != nil {
		return nil, err
	}
	// The turn's new prompt tokens belong to the message being answered.
	last := len(c.msgs) - 1
	c.msgs[last].IDs = append([]int(nil), full[c.msgs[last].Start:reuse]...)
	c.fixStarts()

	opts := c.gen
	opts.Sampler, opts.OnToken, opts.Decoder = c.sampler, onToken, c.tok
	res, err := Generate(ctx, c.sess, full[reuse:], opts)
	if res == nil {
		c.reconcile(full)
		return nil, err
	}
	held := append(append([]int(nil), full...), res.GeneratedIDs...)
	if res.TurnEnd {
		held = append(held, res.StopID)
	}
	c.reconcile(held)
	gen := append([]int(nil), res.GeneratedIDs...)
	msg := Message{Role: RoleAssistant, Text: c.tok.Decode(gen, true), Start: len(full), Generated: gen,
		StopReason: res.StopReason, Capped: res.Capped}
	if len(held) > len(full) && len(c.cache) > len(full) {
		msg.IDs = append([]int(nil), c.cache[len(full):]...)
	}
	// reconcile gave the reply's tokens to the user message; hand them over.
	m := &c.msgs[last]
	if m.End() > len(full) {
		m.IDs = m.IDs[:len(full)-m.Start]
	}
	st := res.Stats
	msg.Stats = &st
	c.msgs = append(c.msgs, msg)
	c.fixStarts()
	reply.Message = msg
	reply.Result = res
	return reply, err
}

// rewind brings the cache to n tokens (a prefix of what it holds). When
// the cache refuses, it is cleared instead and rewind reports so; the
// records are then left for the caller to bring in line.
func (c *Conversation) rewind(n int) (cleared bool, err error) {
	if n == len(c.cache) {
		return false, nil
	}
	if err := c.sess.Rewind(n); err == nil {
		c.truncate(n)
		return false, nil
	} else if !errors.Is(err, ErrRewindRefused) && !errors.Is(err, ErrUnsupported) {
		return false, fmt.Errorf("rewinding the cache to %d: %w", n, err)
	}
	if err := c.sess.Clear(); err != nil {
		return false, fmt.Errorf("clearing the cache: %w", err)
	}
	return true, nil
}

// keep brings the cache to its first n tokens, prefilling them again when
// the cache refuses to rewind. It reports whether it did.
func (c *Conversation) keep(ctx context.Context, n int) (bool, error) {
	cleared, err := c.rewind(n)
	if err != nil || !cleared {
		return false, err
	}
	if n == 0 {
		c.truncate(0)
		return false, nil
	}
	kept := c.cache[:n]
	_, err = prefill(ctx, c.sess, kept, c.gen.PrefillChunk, c.gen.OnPrefill, &Stats{})
	c.truncate(min(n, c.sess.Len()))
	if err != nil {
		return true, fmt.Errorf("prefilling the kept %d tokens again: %w", n, err)
	}
	return true, nil
}

// truncate shortens the cache record to n tokens and trims the messages'
// IDs to match.
func (c *Conversation) truncate(n int) {
	if n < len(c.cache) {
		c.cache = c.cache[:n]
	}
	for i := range c.msgs {
		m := &c.msgs[i]
		switch {
		case m.Start >= n:
			m.IDs = nil
		case m.End() > n:
			m.IDs = m.IDs[:n-m.Start]
		}
	}
	c.fixStarts()
}

// reconcile sets the cache record to the prefix of ids the session holds,
// giving tokens past the messages' to the last message.
func (c *Conversation) reconcile(ids []int) {
	n := min(c.sess.Len(), len(ids))
	c.cache = append(c.cache[:0:0], ids[:n]...)
	owned := 0
	for i := range c.msgs {
		owned += len(c.msgs[i].IDs)
	}
	if owned > n {
		c.truncate(n)
		return
	}
	if last := len(c.msgs) - 1; last >= 0 && owned < n {
		c.msgs[last].IDs = append(c.msgs[last].IDs, c.cache[owned:n]...)
	}
	c.fixStarts()
}

func (c *Conversation) fixStarts() {
	pos := 0
	for i := range c.msgs {
		c.msgs[i].Start = pos
		pos += len(c.msgs[i].IDs)
	}
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func cloneMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.IDs = append([]int(nil), m.IDs...)
		m.Generated = append([]int(nil), m.Generated...)
		if len(m.IDs) == 0 {
			m.IDs = nil
		}
		if len(m.Generated) == 0 {
			m.Generated = nil
		}
		if m.Stats != nil {
			st := *m.Stats
			m.Stats = &st
		}
		out[i] = m
	}
	return out
}

// trackedSession mirrors the session's cache control in a kvcache.Sequence
// so a conversation can ask whether a rewind would be served, for sessions
// that cannot say themselves.
type trackedSession struct {
	Session
	seq *kvcache.Sequence
}

type rewindChecker interface{ CanRewind(newLen int) bool }

func newTracked(s Session, cfg *kvcache.Config) *trackedSession {
	t := &trackedSession{Session: s}
	if cfg != nil {
		if seq, err := kvcache.NewSequence(cfg); err == nil {
			t.seq = seq
		}
	}
	return t
}

func (t *trackedSession) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, err := t.Session.Forward(ctx, ids, positions)
	t.mirror(err)
	return out, err
}

func (t *trackedSession) ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error) {
	out, err := t.Session.ForwardAll(ctx, ids, positions)
	t.mirror(err)
	return out, err
}

// mirror brings the shadow sequence to the session's length after a
// forward.
func (t *trackedSession) mirror(err error) {
	if t.seq == nil {
		return
	}
	for n := t.Session.Len(); t.seq.Len() < n; {
		T := n - t.seq.Len()
		if mw := t.seq.Config().MaxWrite; mw > 0 {
			T = min(T, mw)
		}
		p, perr := t.seq.Plan(0, t.seq.Len(), T)
		if perr != nil {
			t.seq = nil // out of step with the engine: stop predicting
			return
		}
		t.seq.Commit(p)
	}
	if t.seq.Len() > t.Session.Len() {
		t.seq = nil
	}
}

// Rewind refuses, without asking the engine, a rewind the shadow sequence
// knows would need overwritten cells: an engine that follows ExecuTorch's
// SequenceCache (length - window) would accept some of those and attend
// to stale rows.
func (t *trackedSession) Rewind(n int) error {
	if t.seq != nil && n != t.seq.Len() && !t.seq.CanRewind(n) && n <= t.Session.Len() {
		return fmt.Errorf("%w: a sliding-window layer has overwritten cells that length %d needs", ErrRewindRefused, n)
	}
	err := t.Session.Rewind(n)
	if err == nil && t.seq != nil && t.seq.Rewind(n) != nil {
		t.seq = nil
	}
	return err
}

func (t *trackedSession) Clear() error {
	err := t.Session.Clear()
	if err == nil && t.seq != nil {
		t.seq.Clear()
	}
	return err
}

// CanRewind asks the session when it can say, else the shadow sequence.
func (t *trackedSession) CanRewind(n int) bool {
	if n == t.Session.Len() {
		return true
	}
	if rc, ok := t.Session.(rewindChecker); ok {
		return rc.CanRewind(n)
	}
	return t.seq != nil && t.seq.CanRewind(n)
}
