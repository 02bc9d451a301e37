package app

import (
	"context"
	"errors"
	"fmt"

	"etchat/store"
)

// Two windows on one conversation. Every write of the transcript carries
// the store's revision this window last saw (c.seen); the store refuses a
// write that would extend or reshape a conversation another window has
// changed since (store.StaleError), so a turn is never stored twice. The
// refused window then shows what the store holds (rebase), and the text of
// its turn goes back into the message box.
//
// Undo and Redo. Undo deletes what it takes back from the store; the
// transcript before it is kept here, in memory, and Redo brings the last
// one back (the cache keeps the prefix the two share) and saves it again,
// as new messages, carrying the revision like any write. The next send,
// regeneration, edit or branch switch, another window's change, opening
// another conversation or closing the window forgets them. The CLI's /undo
// is not affected: it keeps what it undid as a branch, as before.

// isStale reports whether err is the store's refusal of a write made at a
// revision another window has moved past.
func isStale(err error) bool {
	var s *store.StaleError
	return errors.As(err, &s)
}

// write saves msgs as conversation id's transcript at the revision this
// window saw and records the revision after it.
func (c *Chat) write(ctx context.Context, id int64, discard bool, msgs []Message) error {
	c.mu.Lock()
	at := c.seen
	c.mu.Unlock()
	rev, err := c.store.SaveTranscript(ctx, id, at, discard, msgs)
	if err != nil {
		return err
	}
	c.setSeen(id, rev)
	return nil
}

// setSeen records rev as the revision of conversation id, when it is still
// the open one.
func (c *Chat) setSeen(id int64, rev Revision) {
	c.mu.Lock()
	if c.st.ConvID == id {
		c.seen = rev
	}
	c.mu.Unlock()
}

// cancelAction stops the running action as Stop does, but without
// marking it stopped by the user: its error is shown.
func (c *Chat) cancelAction() {
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

// StaleTurnError: this window's change was refused because another window
// changed the conversation at the same time; the window now shows what
// the store holds and, for a message, the text is back in the box.
type StaleTurnError struct {
	Text string // the message put back into the box ("" for none)
	Err  error
}

func (e *StaleTurnError) Error() string {
	msg := "another etchat window changed this conversation at the same moment, so this change was not saved; this window now shows what that one saved"
	if e.Text != "" {
		msg += " — your message is back in the box: send it again"
	}
	return msg
}

func (e *StaleTurnError) Unwrap() error { return e.Err }

// rebase makes the session show the stored conversation after a write was
// refused as stale, and puts text (the turn's message) back into the box.
func (c *Chat) rebase(ctx context.Context, sess Session, id int64, text string, cause error) error {
	if text != "" {
		c.restore(text)
	}
	if err := c.adopt(ctx, sess, id); err != nil {
		return fmt.Errorf("another etchat window changed this conversation, and it could not be read again: %w", err)
	}
	return &StaleTurnError{Text: text, Err: cause}
}

// adopt makes the session show conversation id as the store holds it now,
// at its revision; what was undone here is forgotten.
func (c *Chat) adopt(ctx context.Context, sess Session, id int64) error {
	sum, _, msgs, err := c.store.LoadConversation(ctx, id)
	if err != nil {
		return err
	}
	if !sameTranscript(sess.Messages(), msgs) {
		if err := sess.Switch(ctx, msgs); err != nil {
			return err
		}
	}
	c.mu.Lock()
	if c.st.ConvID == id {
		c.seen = sum.Seen
		c.setRedoLocked(nil)
		if sum.Title != "" {
			c.st.Title = sum.Title
		}
	}
	c.mu.Unlock()
	c.loadBranches(ctx, id)
	return nil
}

// setRedoLocked replaces what Redo can bring back.
func (c *Chat) setRedoLocked(redo [][]Message) {
	c.redo = redo
	c.st.Redo = len(redo)
}

// Redo brings back what the last undo (a turn, tokens, a reset) took
// away: the transcript before it, saved again.
func (c *Chat) Redo() error {
	sess, err := c.session()
	if err != nil {
		return err
	}
	c.mu.Lock()
	n := len(c.redo)
	c.mu.Unlock()
	if n == 0 {
		return errors.New("there is nothing to redo: Redo brings back what Undo took away, until the next message")
	}
	return c.start("Redoing…", func(ctx context.Context) error {
		c.mu.Lock()
		if len(c.redo) == 0 { // another window's change forgot it meanwhile
			c.mu.Unlock()
			return errors.New("there is nothing to redo any more: the conversation was changed in another window")
		}
		back := c.redo[len(c.redo)-1]
		c.mu.Unlock()
		if err := sess.Switch(ctx, back); err != nil {
			return fmt.Errorf("could not redo: %w", err)
		}
		c.mu.Lock()
		c.setRedoLocked(c.redo[:len(c.redo)-1])
		c.mu.Unlock()
		bg := context.WithoutCancel(ctx)
		err := c.save(bg, sess, true) // what the undo left in its place goes
		if isStale(err) {
			return c.rebase(bg, sess, c.State().ConvID, "", err)
		}
		return err
	})
}
