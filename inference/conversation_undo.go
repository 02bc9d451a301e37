// Undo and branches: taking turns or tokens back, Reset, whether that is instant, and switching to another branch.

package inference

import (
	"context"
	"errors"
	"fmt"
)

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
