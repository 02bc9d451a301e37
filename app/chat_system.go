// The system prompt where it is used (issue 40 item 2): shown above the
// transcript and edited there.

package app

import (
	"context"
	"slices"
)

// System is the system prompt the conversation has (or, with none open,
// the one the next conversation starts with).
func (s ChatState) System() string {
	if s.Loaded {
		if len(s.Messages) > 0 && s.Messages[0].Role == "system" {
			return s.Messages[0].Text
		}
		return ""
	}
	return s.Settings.SystemPrompt
}

// SystemLine is the bar's collapsed line: the prompt's first line.
func (s ChatState) SystemLine() string {
	if p := s.System(); p != "" {
		return quoteShort(p, 200)
	}
	return "none"
}

// CanEditSystem reports whether the bar's Edit applies now.
func (s ChatState) CanEditSystem() bool { return !s.Busy && s.Model != nil }

// SetSystemPrompt makes text the conversation's system prompt ("" removes
// it). The prompt is token 0 on, so the cache is emptied and the next
// message reads the whole history again under it (the meter counts it);
// the messages stay. In the store the edit is a branch at the first
// message: the old prompt with its conversation stays, ‹ › on the system
// message switches back (a conversation with no turn yet just takes the
// new prompt). With no conversation open it is the next one's prompt.
func (c *Chat) SetSystemPrompt(text string) error {
	c.mu.Lock()
	if c.st.Busy {
		c.mu.Unlock()
		return ErrBusy
	}
	sess, id := c.sess, c.st.ConvID
	if sess == nil {
		c.st.Settings.SystemPrompt = text
		c.mu.Unlock()
		c.changed()
		return nil
	}
	c.mu.Unlock()
	return c.start("Changing the system prompt…", func(ctx context.Context) error {
		empty := !slices.ContainsFunc(sess.Messages(), func(m Message) bool { return m.Role != "system" })
		c.mu.Lock()
		c.setRedoLocked(nil)
		c.restored = nil
		c.mu.Unlock()
		if err := sess.SetSystem(ctx, text); err != nil {
			return err
		}
		bg := context.WithoutCancel(ctx)
		if err := c.save(bg, sess, empty); isStale(err) {
			return c.rebase(bg, sess, id, "", err)
		} else if err != nil {
			return err
		}
		c.mu.Lock()
		c.st.Settings.SystemPrompt = text
		s := c.st.Settings
		c.mu.Unlock()
		if c.store != nil && id != 0 {
			return c.store.SaveSettings(bg, id, s)
		}
		return nil
	})
}

// SetSystem gives the conversation a new system prompt (see
// inference.Conversation.SetSystem); a history still being read in is
// dropped with the cache.
func (c *convSession) SetSystem(ctx context.Context, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warm = nil
	return c.conv.SetSystem(text)
}

// SetSystem takes the program's turn, as the chat's other cache changes do
// while the Serve switch shares the model.
func (s *sharedSession) SetSystem(ctx context.Context, text string) error {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.convSession.SetSystem(ctx, text)
}
