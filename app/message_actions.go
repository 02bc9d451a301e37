package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The actions of one message (its right-click menu): regenerate from an
// earlier reply, edit an earlier message, delete a branch. The last reply
// and the last message go through Regenerate and EditLast themselves; an
// earlier one first makes the transcript end there (the cache keeps that
// prefix), then does the same. The store keeps the turns after it as the
// older branch, as it keeps every regeneration and edit.

// CanRegenerateAt reports whether message i is a reply that can be
// generated again.
func (s ChatState) CanRegenerateAt(i int) bool {
	return s.CanRegenerate() && i >= 0 && i < len(s.Messages) && s.Messages[i].Role == "assistant"
}

// CanEditAt reports whether message i is a message of yours that can be
// edited and answered again.
func (s ChatState) CanEditAt(i int) bool {
	return s.CanUndo() && i >= 0 && i < len(s.Messages) && s.Messages[i].Role == "user"
}

// CanDeleteBranchAt reports whether message i has alternatives, so that
// deleting it leaves one of them in its place.
func (s ChatState) CanDeleteBranchAt(i int) bool {
	return !s.Busy && s.Loaded && s.ConvID != 0 && s.BranchOf(i).N > 1
}

// lastOf is the index of the last message with role, -1 if none.
func lastOf(msgs []Message, role string) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return i
		}
	}
	return -1
}

// RegenerateFrom replaces reply i with a new one; the turns after it stay
// in the store as the older branch.
func (c *Chat) RegenerateFrom(i int) error {
	st := c.State()
	if !st.CanRegenerateAt(i) {
		return fmt.Errorf("message %d is not a reply that can be regenerated now", i+1)
	}
	if i == lastOf(st.Messages, "assistant") {
		return c.Regenerate()
	}
	orig := st.Messages
	return c.generate("", false, func(ctx context.Context, s Session, stream func(string)) (*Reply, error) {
		if err := s.Switch(ctx, orig[:i+1]); err != nil {
			return nil, fmt.Errorf("could not go back to that reply: %w", err)
		}
		r, err := s.Regenerate(ctx, stream)
		if err != nil && noReply(r) {
			_ = s.Switch(context.WithoutCancel(ctx), orig) // nothing new: the transcript stays as it was
		}
		return r, err
	})
}

// EditFrom replaces message i of yours with text and answers it anew;
// the turns after it stay in the store as the older branch. When no reply
// comes, the transcript stays as it was and the text goes into the message
// box.
func (c *Chat) EditFrom(i int, text string) error {
	st := c.State()
	if !st.CanEditAt(i) {
		return fmt.Errorf("message %d is not a message of yours that can be edited now", i+1)
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("the edited message is empty")
	}
	if i == lastUser(st.Messages) {
		return c.EditLast(text)
	}
	orig := st.Messages
	end := len(orig) // the turn of message i: it and its reply
	for j := i + 1; j < len(orig); j++ {
		if orig[j].Role == "user" {
			end = j
			break
		}
	}
	err := c.generate(text, false, func(ctx context.Context, s Session, stream func(string)) (*Reply, error) {
		if err := s.Switch(ctx, orig[:end]); err != nil {
			return nil, fmt.Errorf("could not go back to that message: %w", err)
		}
		r, err := s.EditLast(ctx, text, stream)
		if err != nil && noReply(r) {
			_ = s.Switch(context.WithoutCancel(ctx), orig)
			c.restore(text)
		}
		return r, err
	})
	if err != nil {
		c.restore(text)
	}
	return err
}

// noReply reports whether a generation produced nothing to keep.
func noReply(r *Reply) bool { return r == nil || r.Result == nil || r.Stats.NumGeneratedTokens == 0 }

// BranchDeleter removes a message and what follows it from the store,
// continuing with one of its alternatives (the SQLite adapter has it);
// PathAfterDeleteBranch says what that would leave, deleting nothing.
type BranchDeleter interface {
	DeleteBranch(ctx context.Context, id int64, at Revision, index int) ([]Message, Revision, error)
	PathAfterDeleteBranch(ctx context.Context, id int64, index int) ([]Message, error)
}

// DeleteBranch deletes message i of the open conversation, with the turns
// after it, from the store and shows the alternative before it (else the
// one after); the cache keeps the prefix the two share.
func (c *Chat) DeleteBranch(i int) error {
	sess, err := c.session()
	if err != nil {
		return err
	}
	st := c.State()
	if !st.CanDeleteBranchAt(i) {
		return fmt.Errorf("message %d has no other branch to show in its place", i+1)
	}
	d, ok := c.store.(BranchDeleter)
	if !ok || c.store == nil {
		return errors.New("branches are kept in the database, which is not open")
	}
	id := st.ConvID
	return c.start("Deleting the branch…", func(ctx context.Context) error {
		// The session moves to the remaining branch first: when it cannot
		// hold it, nothing is deleted.
		next, err := d.PathAfterDeleteBranch(ctx, id, i)
		if err != nil {
			return fmt.Errorf("could not delete the branch: %w", err)
		}
		if err := sess.Switch(ctx, next); err != nil {
			return fmt.Errorf("the branch was not deleted: the other branch cannot be shown: %w", err)
		}
		c.mu.Lock()
		at := c.seen
		c.setRedoLocked(nil)
		c.mu.Unlock()
		msgs, rev, err := d.DeleteBranch(ctx, id, at, i)
		if isStale(err) {
			return c.rebase(ctx, sess, id, "", err)
		}
		if err != nil {
			return fmt.Errorf("could not delete the branch: %w", err)
		}
		c.setSeen(id, rev)
		if !sameTranscript(msgs, next) { // another window changed it meanwhile
			if err := sess.Switch(ctx, msgs); err != nil {
				return fmt.Errorf("could not show the remaining branch: %w", err)
			}
		}
		c.loadBranches(ctx, id)
		return c.ReloadConversations(ctx)
	})
}
