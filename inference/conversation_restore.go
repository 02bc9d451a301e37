// Restoring a stored conversation: Restored places stored messages' tokens, Resume prefills them.

package inference

import (
	"context"
	"fmt"
	"slices"

	"etchat/inference/engine"
)

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
	ids, err := historyIDs(sess, msgs)
	if err != nil {
		return nil, err
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
