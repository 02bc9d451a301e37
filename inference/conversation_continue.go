// Continue: more of a reply that stopped before its turn ended, appended to the same message.

package inference

import (
	"context"
	"errors"
	"slices"
)

// ErrNothingToContinue: the last message is not a reply that stopped
// before its turn ended (ContinueError says which case).
var ErrNothingToContinue = errors.New("nothing to continue")

// ContinueError says why the last message cannot be continued.
type ContinueError struct{ Reason string }

func (e *ContinueError) Error() string { return "cannot continue: " + e.Reason }
func (e *ContinueError) Unwrap() error { return ErrNothingToContinue }

// CanContinue reports whether Continue applies: the last message is a reply
// in the cache that stopped before the model ended its turn (at the token
// budget, at Stop, or shortened by Undo Tokens). nil when it does.
func (c *Conversation) CanContinue() error {
	n := len(c.msgs)
	if n == 0 || c.msgs[n-1].Role != RoleAssistant {
		return &ContinueError{"the last message is not a reply"}
	}
	m := &c.msgs[n-1]
	switch {
	case m.StopReason == StopEOS:
		return &ContinueError{"the reply ended its turn"}
	case len(m.IDs) == 0 || m.End() != len(c.cache):
		// A history kept as text (or still being read into the cache):
		// the tokens to continue from are not known yet.
		return &ContinueError{"the reply is not in the cache yet"}
	case c.replyEnd(m) == 0:
		return &ContinueError{"the reply is empty"}
	}
	return nil
}

// replyEnd is the cache position after the reply's own tokens: its IDs up
// to a turn end the template or a resume put after it (a cut reply that
// was followed by a turn, since undone, holds that turn's closing markup).
func (c *Conversation) replyEnd(m *Message) int {
	ids := m.IDs
	if i := slices.IndexFunc(ids, func(id int) bool { return slices.Contains(c.gen.TurnEndIDs, id) }); i >= 0 {
		ids = ids[:i]
	}
	return m.Start + len(ids)
}

// Continue generates more of the last reply, which stopped before the model
// ended its turn, and appends it to the same message: up to another
// MaxNewTokens tokens. The cache keeps the reply: a turn end committed
// after it is rewound first, then its last token is fed again for the
// logits it was sampled after, so greedy decoding gives exactly the tokens
// one generation with the larger budget would have. The Reply's Result is
// the continuation's; its Message is the whole reply, with the stats of
// both parts together.
func (c *Conversation) Continue(ctx context.Context, onToken func(Token) error) (*Reply, error) {
	if err := c.CanContinue(); err != nil {
		return nil, err
	}
	last := len(c.msgs) - 1
	end := c.replyEnd(&c.msgs[last])
	if end+1 > c.sess.Capacity() {
		return nil, c.tooLong(end)
	}
	whole := append([]int(nil), c.cache[:end]...)
	prev := c.msgs[last]
	reprefilled, err := c.keep(ctx, end-1)
	if err != nil {
		return nil, err
	}
	c.msgs = c.msgs[:last]
	reply := &Reply{Reused: end - 1, Prefilled: 1, Reprefilled: reprefilled}
	bounds := make([]int, len(c.msgs))
	for i := range c.msgs {
		bounds[i] = c.msgs[i].End()
	}
	c.flight = &flight{full: whole[:prev.Start], bounds: bounds, prior: whole[prev.Start:]}
	defer func() { c.flight = nil }()

	opts := c.flightOptions(onToken)
	res, err := Generate(ctx, c.sess, whole[end-1:], opts)
	var gen []int
	stop := prev.StopReason
	if res != nil {
		gen, stop = res.GeneratedIDs, res.StopReason
	}
	held := c.settle(ctx, whole, res, err)
	n := min(c.sess.Len(), len(held))
	// The reply shows what the cache holds, as respond's does.
	gen = gen[:min(len(gen), max(0, n-end))]
	msg := prev
	msg.IDs = append([]int(nil), held[prev.Start:n]...)
	msg.Generated = append(append([]int(nil), whole[prev.Start:min(n, end)]...), gen...)
	msg.Text = c.tok.Decode(msg.Generated, true)
	msg.StopReason = stop
	msg.Capped = res != nil && res.Capped
	msg.Stats = joinStats(prev.Stats, res, len(msg.Generated))
	c.msgs = append(c.msgs, msg)
	c.cache = append(c.cache[:0:0], held[:n]...)
	c.fixStarts()
	reply.Message = msg
	reply.Result = res
	return reply, err
}

// settle is what the cache should hold after a continuation from whole:
// whole, the tokens generated and a committed turn end. A token sampled
// and shown but not fed when Stop came is fed, as respond does.
func (c *Conversation) settle(ctx context.Context, whole []int, res *Result, err error) []int {
	if res == nil {
		return whole
	}
	held := append(append([]int(nil), whole...), res.GeneratedIDs...)
	if res.TurnEnd {
		held = append(held, res.StopID)
	}
	if fed := c.sess.Len(); errors.Is(err, context.Canceled) && fed >= len(whole) && fed < len(held) && !res.TurnEnd &&
		c.sess.CanExtend(len(held)-fed) {
		_, _ = prefill(context.WithoutCancel(ctx), c.sess, held[fed:], c.gen.PrefillChunk, nil, &Stats{})
	}
	return held
}

// joinStats are a continued reply's stats: the first part's prompt and
// time to first token, both parts' decoding (the token fed again counts
// as decoding: it is one forward step, as a decode step is).
func joinStats(prev *Stats, res *Result, generated int) *Stats {
	var st Stats
	if prev != nil {
		st = *prev
	}
	if res != nil {
		more := res.Stats
		if prev == nil {
			st = more
			st.NumPromptTokens = 0
		} else {
			st.DecodeSeconds += more.PrefillSeconds + more.DecodeSeconds
			st.ForwardSeconds += more.ForwardSeconds
			st.SamplingSeconds += more.SamplingSeconds
			st.AggregateSamplingTimeMs += more.AggregateSamplingTimeMs
			st.AggregateModelExecutionTimeMs += more.AggregateModelExecutionTimeMs
			st.InferenceEndMs = more.InferenceEndMs
			st.MemAfterDecode = more.MemAfterDecode
			st.PeakBytes = max(st.PeakBytes, more.PeakBytes)
		}
	}
	st.NumGeneratedTokens = int64(generated)
	st.derive()
	return &st
}
