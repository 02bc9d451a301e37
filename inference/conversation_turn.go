// One turn: Send, Regenerate and EditLast, the reply they generate, Pending while it runs, and the too-long error.

package inference

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

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
	gen := append(append([]int(nil), f.prior...), f.gen...)
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

	opts := c.flightOptions(onToken)
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

// flightOptions are the conversation's generation options for the reply in
// flight: its sampler and decoder, and each token recorded in c.flight
// (what a Stop or an error keeps) before onToken sees it.
func (c *Conversation) flightOptions(onToken func(Token) error) Options {
	opts := c.gen
	opts.Sampler, opts.Decoder = c.sampler, c.tok
	opts.OnToken = func(t Token) error {
		c.flight.gen = append(c.flight.gen, t.ID)
		if onToken != nil {
			return onToken(t)
		}
		return nil
	}
	return opts
}
