package inference

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/sampler"
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
	sess    engine.Session
	tracked *trackedSession
	tok     Tokenizer
	tmpl    Template
	gen     Options
	sampler *sampler.Sampler
	msgs    []Message
	cache   []int
	// flight is the turn being answered (nil between turns), for Pending.
	flight *flight
}

// flight is a turn in progress: the prompt as rendered, which message owns
// each of its tokens, and the reply's tokens so far.
type flight struct {
	full, bounds []int
	gen          []int
}

// NewConversation starts an empty conversation on sess; the session's
// cache is cleared.
func NewConversation(sess engine.Session, opts ConversationOptions) (*Conversation, error) {
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

// Restored are stored messages as Resume and Switch take them: each
// message's tokens placed after the previous ones, and a reply's generated
// tokens its tokens without a committed turn end (one of turnEnd), unless
// the message keeps its own. msgs is not changed.
func Restored(msgs []Message, turnEnd []int) []Message {
	out := make([]Message, len(msgs))
	pos := 0
	for i, m := range msgs {
		m.IDs = append([]int(nil), m.IDs...)
		m.Start = pos
		if m.Role == RoleAssistant && len(m.Generated) == 0 {
			gen := m.IDs
			if n := len(gen); n > 0 && slices.Contains(turnEnd, gen[n-1]) {
				gen = gen[:n-1]
			}
			m.Generated = append([]int(nil), gen...)
		}
		out[i] = m
		pos += len(m.IDs)
	}
	return out
}

// Resume restores a stored conversation: msgs as State returned them. The
// messages' cached tokens are prefilled so the conversation continues
// exactly where it stopped; messages without IDs (or IDs that no longer fit
// the cache) are kept as text and rendered at the next turn.
func Resume(ctx context.Context, sess engine.Session, opts ConversationOptions, msgs []Message) (*Conversation, error) {
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
	s, err := sampler.New(opts.Sampling)
	if err != nil {
		return err
	}
	opts.Sampler, opts.OnToken = nil, nil
	c.gen, c.sampler = opts, s
	return nil
}

// Session is the engine session the conversation drives.
func (c *Conversation) Session() engine.Session { return c.tracked.Session }

// Messages returns a copy of the messages.
func (c *Conversation) Messages() []Message { return cloneMessages(c.msgs) }

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
	if r == nil && err != nil && slices.Equal(c.cache, cached) {
		c.msgs = saved
		c.fixStarts()
	}
	return r, err
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

// UndoTokens takes back the last n tokens the user sees: a reply cut short
// keeps its remaining tokens (its text and stats follow); a committed turn
// end, which is not shown, goes with the reply's last token. A user
// message that loses tokens, or is left without a reply, is removed with
// the rest of its turn (so more than n tokens may go; UndoResult.Dropped
// says how many), as the CLI's /undo N does.
func (c *Conversation) UndoTokens(ctx context.Context, n int) (UndoResult, error) {
	if n < 0 {
		return UndoResult{Len: len(c.cache)}, fmt.Errorf("cannot undo %d tokens", n)
	}
	// n counts what the meter counts: a closed reply's turn end is its last
	// token, so undo n moves the meter by exactly n (it used to add the
	// turn end on top: Undo 5 took 6).
	target := max(0, len(c.cache)-n)
	first := len(c.msgs) // first message to remove
	for i := range c.msgs {
		m := &c.msgs[i]
		if m.End() <= target || len(m.IDs) == 0 && m.Start < target {
			continue
		}
		if m.Role == RoleAssistant && m.Start < target {
			// Shorten the reply; what is shown and counted follows.
			kept := target - m.Start
			m.IDs = m.IDs[:kept]
			m.Generated = append([]int(nil), m.IDs...) // what it holds now (re-rendered replies hold their text's tokens)
			m.Text = c.tok.Decode(m.Generated, true)
			if m.Stats != nil {
				st := *m.Stats
				st.NumGeneratedTokens = int64(len(m.Generated))
				m.Stats = &st
			}
			m.StopReason = StopUndone
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

// StopUndone is the stop reason of a reply that Undo Tokens shortened.
const StopUndone = "shortened by undo"

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

// renderText is the conversation's prompt text up to and with msgs.
func (c *Conversation) renderText(msgs []Message, addGen bool) (string, error) {
	if c.tmpl == nil {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString(m.Text)
		}
		return b.String(), nil
	}
	text, err := c.tmpl.Render(msgs, addGen)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return text, nil
}

func (c *Conversation) encode(text string) ([]int, error) {
	return c.tok.Encode(text, c.tmpl == nil) // raw text: the tokenizer's own specials (BOS)
}

// render is the prompt for the conversation so far, with the generation
// prompt, as the template renders it (earlier replies as text, the way
// the reference runners re-render a chat), and bounds[i], the end of
// message i's tokens in it. Each message owns the tokens that render it:
// a user message its text, its turn end and the reply's header (the
// generation prompt); a reply its text and its turn end. So what the
// transcript shows and what the cache holds are one thing. Where the
// template's output cannot be mapped back to the messages, they keep the
// tokens the cache agrees on.
func (c *Conversation) render() (full, bounds []int, err error) { return c.renderFrom(0) }

// renderFrom is render that maps only the messages from index first on
// back to their tokens (the earlier ones keep the tokens the cache agrees
// on): DraftTokens needs only the last boundary, on every keystroke.
func (c *Conversation) renderFrom(first int) (full, bounds []int, err error) {
	text, err := c.renderText(c.msgs, true)
	if err != nil {
		return nil, nil, err
	}
	if full, err = c.encode(text); err != nil {
		return nil, nil, err
	}
	n := len(c.msgs)
	bounds = make([]int, n)
	starts, ends := c.contentSpans(text)
	turnEnd := idSet(c.gen.TurnEndIDs)
	// tokensTo is the number of tokens of text[:off], when they are a
	// prefix of full (a boundary the tokenizer does not merge across).
	tokensTo := func(off int) int {
		ids, err := c.encode(text[:off])
		if err != nil || commonPrefix(ids, full) != len(ids) {
			return -1
		}
		return len(ids)
	}
	for i := 0; i < n-1; i++ {
		bounds[i] = -1
		if starts == nil || i < first {
			continue
		}
		if c.msgs[i].Role != RoleAssistant && c.msgs[i+1].Role == RoleAssistant {
			bounds[i] = tokensTo(starts[i+1]) // up to the reply's text
			continue
		}
		k := tokensTo(ends[i])
		if k >= 0 && k < len(full) && turnEnd[full[k]] {
			for k++; k < len(full) && strings.TrimSpace(c.tok.Decode(full[k:k+1], false)) == ""; k++ {
			}
		}
		bounds[i] = k
	}
	agree := commonPrefix(c.cache, full)
	for i := 0; i < n-1; i++ {
		if bounds[i] < 0 {
			bounds[i] = min(c.msgs[i].End(), agree)
		}
		if i > 0 {
			bounds[i] = max(bounds[i], bounds[i-1])
		}
	}
	if n > 0 {
		bounds[n-1] = len(full)
	}
	return full, bounds, nil
}

// Marks around each message's text while the template renders, to find
// where each text lands in the prompt.
const markStart, markEnd = "\uE000", "\uE001"

// contentSpans are the byte offsets in text (the unmarked rendering) where
// each message's text starts and ends; nil when the template's output
// cannot be mapped (it rewrites the texts beyond trimming them).
func (c *Conversation) contentSpans(text string) (starts, ends []int) {
	for _, trim := range []bool{false, true} {
		msgs := make([]Message, len(c.msgs))
		for i, m := range c.msgs {
			t := m.Text
			if trim {
				t = strings.TrimSpace(t)
			}
			msgs[i] = Message{Role: m.Role, Text: markStart + t + markEnd}
		}
		marked, err := c.renderText(msgs, true)
		if err != nil {
			return nil, nil
		}
		var b strings.Builder
		starts, ends = starts[:0], ends[:0]
		for i := 0; i < len(marked); {
			switch {
			case strings.HasPrefix(marked[i:], markStart):
				starts = append(starts, b.Len())
				i += len(markStart)
			case strings.HasPrefix(marked[i:], markEnd):
				ends = append(ends, b.Len())
				i += len(markEnd)
			default:
				b.WriteByte(marked[i])
				i++
			}
		}
		if b.String() == text && len(starts) == len(c.msgs) && len(ends) == len(c.msgs) {
			return starts, ends
		}
	}
	return nil, nil
}

// PromptTooLongError: a turn does not fit in the cache. Alone is the
// length of the new message rendered on its own (with the system prompt):
// when that alone does not fit, undoing the history does not help.
type PromptTooLongError struct {
	Tokens, Alone, Capacity int
}

func (e *PromptTooLongError) Error() string {
	if e.Alone+1 > e.Capacity {
		return fmt.Sprintf("the message alone is %d tokens and the cache holds %d", e.Alone, e.Capacity)
	}
	return fmt.Sprintf("the conversation with this message is %d tokens and the cache holds %d", e.Tokens, e.Capacity)
}

func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }

// tooLong builds the error for a prompt of n tokens.
func (c *Conversation) tooLong(n int) error {
	e := &PromptTooLongError{Tokens: n, Alone: n, Capacity: c.sess.Capacity()}
	if u := c.lastUser(); u >= 0 {
		alone := &Conversation{tok: c.tok, tmpl: c.tmpl, gen: c.gen}
		if c.msgs[0].Role == RoleSystem && u > 0 {
			alone.msgs = append(alone.msgs, Message{Role: RoleSystem, Text: c.msgs[0].Text})
		}
		alone.msgs = append(alone.msgs, Message{Role: RoleUser, Text: c.msgs[u].Text})
		if ids, _, err := alone.render(); err == nil {
			e.Alone = len(ids)
		}
	}
	return e
}

// assign gives each message its tokens of full (ending at bounds) up to the
// first n, and records full[:n] as the cache.
func (c *Conversation) assign(full, bounds []int, n int) {
	c.cache = append(c.cache[:0:0], full[:n]...)
	start := 0
	for i := range c.msgs {
		end := min(bounds[i], n)
		c.msgs[i].IDs = nil
		if end > start {
			c.msgs[i].IDs = append([]int(nil), full[start:end]...)
		}
		start = max(start, end)
	}
	c.fixStarts()
}

// Pending is the turn being answered as the transcript will hold it: the
// messages with the answered one's prompt tokens, the reply so far (its
// tokens and text), and the tokens that makes. ok is false between turns.
// Call it from the turn's callbacks (OnToken, OnPrefill): the conversation
// is not safe for concurrent use.
func (c *Conversation) Pending() (msgs []Message, tokens int, ok bool) {
	f := c.flight
	if f == nil {
		return nil, 0, false
	}
	msgs = cloneMessages(c.msgs)
	start := 0
	for i := range msgs {
		msgs[i].IDs = append([]int(nil), f.full[start:f.bounds[i]]...)
		msgs[i].Start = start
		start = f.bounds[i]
	}
	gen := append([]int(nil), f.gen...)
	msgs = append(msgs, Message{Role: RoleAssistant, Text: c.tok.Decode(gen, true), IDs: gen, Generated: gen, Start: len(f.full)})
	return msgs, len(f.full) + len(gen), true
}

// respond answers the last message, which is the user's.
func (c *Conversation) respond(ctx context.Context, onToken func(Token) error) (*Reply, error) {
	full, bounds, err := c.render()
	if err != nil {
		return nil, err
	}
	if len(full) == 0 {
		return nil, errors.New("the rendered prompt is empty")
	}
	if len(full)+1 > c.sess.Capacity() {
		return nil, c.tooLong(len(full))
	}
	reuse := commonPrefix(c.cache, full)
	if reuse == len(full) {
		reuse-- // the last prompt token is fed again for its logits
	}
	reply := &Reply{Reused: reuse, Prefilled: len(full) - reuse}
	c.flight = &flight{full: full, bounds: bounds}
	defer func() { c.flight = nil }()
	// Keep the agreeing prefix; when the cache refuses the rewind it is
	// prefilled again.
	if reply.Reprefilled, err = c.keep(ctx, reuse); err != nil {
		c.assign(full, bounds, len(c.cache))
		return nil, err
	}
	c.assign(full, bounds, len(c.cache))

	opts := c.gen
	opts.Sampler, opts.Decoder = c.sampler, c.tok
	opts.OnToken = func(t Token) error {
		c.flight.gen = append(c.flight.gen, t.ID)
		if onToken != nil {
			return onToken(t)
		}
		return nil
	}
	res, err := Generate(ctx, c.sess, full[reuse:], opts)
	if res == nil {
		c.assign(full, bounds, min(c.sess.Len(), len(full)))
		return nil, err
	}
	held := append(append([]int(nil), full...), res.GeneratedIDs...)
	if res.TurnEnd {
		held = append(held, res.StopID)
	}
	if fed := c.sess.Len(); errors.Is(err, context.Canceled) && fed >= len(full) && fed < len(held) && !res.TurnEnd &&
		c.sess.CanExtend(len(held)-fed) {
		// Stopped between sampling a token and feeding it: the user saw
		// it, so the cache takes it too.
		_, _ = prefill(context.WithoutCancel(ctx), c.sess, held[fed:], c.gen.PrefillChunk, nil, &Stats{})
	}
	n := min(c.sess.Len(), len(held))
	c.assign(full, bounds, min(n, len(full)))
	// The reply shows what the cache holds: a token sampled but never fed
	// (an engine failure, a stream callback's error) is not shown.
	gen := append([]int(nil), res.GeneratedIDs[:min(len(res.GeneratedIDs), max(0, n-len(full)))]...)
	msg := Message{Role: RoleAssistant, Text: c.tok.Decode(gen, true), Start: len(full), Generated: gen,
		StopReason: res.StopReason, Capped: res.Capped}
	if n > len(full) {
		msg.IDs = append([]int(nil), held[len(full):n]...)
		c.cache = append(c.cache, msg.IDs...)
	}
	st := res.Stats
	st.NumGeneratedTokens = int64(len(gen))
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
	} else if !errors.Is(err, engine.ErrRewindRefused) && !errors.Is(err, engine.ErrUnsupported) {
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
	engine.Session
	seq *kvcache.Sequence
}

type rewindChecker interface{ CanRewind(newLen int) bool }

func newTracked(s engine.Session, cfg *kvcache.Config) *trackedSession {
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
		return fmt.Errorf("%w: a sliding-window layer has overwritten cells that length %d needs", engine.ErrRewindRefused, n)
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

// DraftTokens is how many tokens a message of text would hold if sent now
// (its turn's markup and the reply's header included), and the tokens the
// prompt would then hold in all.
func (c *Conversation) DraftTokens(text string) (own, total int, err error) {
	if n := len(c.msgs); n > 0 && c.msgs[n-1].Role == RoleUser {
		return 0, 0, errors.New("the last message has no reply yet")
	}
	saved := c.msgs
	c.msgs = append(cloneMessages(saved), Message{Role: RoleUser, Text: text})
	full, bounds, err := c.renderFrom(len(saved) - 1)
	c.msgs = saved
	if err != nil {
		return 0, 0, err
	}
	start := 0
	if n := len(bounds); n > 1 {
		start = bounds[n-2]
	}
	return len(full) - start, len(full), nil
}

// Switch makes msgs (another branch of the conversation, with the tokens
// each message held) the conversation: the cache keeps the prefix it
// shares with msgs and the rest is prefilled, as after an undo.
func (c *Conversation) Switch(ctx context.Context, msgs []Message) (UndoResult, error) {
	var ids []int
	vocab := c.sess.Vocab()
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		default:
			return UndoResult{Len: len(c.cache)}, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		for _, id := range m.IDs {
			if id < 0 || (vocab > 0 && id >= vocab) {
				return UndoResult{Len: len(c.cache)}, fmt.Errorf("message %d: token %d outside the vocabulary (%d)", i, id, vocab)
			}
		}
		ids = append(ids, m.IDs...)
	}
	if len(ids)+1 > c.sess.Capacity() {
		return UndoResult{Len: len(c.cache)}, c.tooLong(len(ids))
	}
	before := len(c.cache)
	k := commonPrefix(c.cache, ids)
	re, err := c.keep(ctx, k)
	res := UndoResult{Reprefilled: re, Messages: len(c.msgs)}
	if err == nil && len(ids) > k {
		_, err = prefill(ctx, c.sess, ids[k:], c.gen.PrefillChunk, c.gen.OnPrefill, &Stats{})
	}
	c.msgs = cloneMessages(msgs)
	c.reconcileAll(ids)
	res.Len, res.Dropped = len(c.cache), max(0, before-k)
	return res, err
}

// reconcileAll records the prefix of ids the session holds as the cache,
// each message keeping its part of it.
func (c *Conversation) reconcileAll(ids []int) {
	bounds := make([]int, len(c.msgs))
	end := 0
	for i := range c.msgs {
		end += len(c.msgs[i].IDs)
		bounds[i] = end
	}
	c.assign(ids, bounds, min(c.sess.Len(), len(ids)))
}
