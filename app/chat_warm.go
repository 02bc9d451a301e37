package app

import (
	"context"
	"errors"
	"fmt"
)

// A reopened conversation (opened from the list, after Settings ▸ Apply,
// at start) comes up with its history as text and an empty cache; a warm
// then reads the history into the cache in the background, one prefill
// chunk at a time, so the first send prefills only the new turn. It is not
// an action: the chat stays usable, and any action (a send, an undo, a
// reset, another conversation, closing) cancels it first; the action then
// waits at most for the chunk in progress. Actions other than a send leave
// what is left of the history to read, and the warm goes on after them.

// warmer is a Session that can read a reopened history into its cache.
type warmer interface {
	// Warm reads the rest of the history, calling progress after each
	// chunk; a canceled ctx stops it between chunks.
	Warm(ctx context.Context, progress func(held, total int)) error
	// ToWarm is the tokens the cache holds and will hold once warm.
	ToWarm() (held, total int)
}

// warmRun is the warm in progress.
type warmRun struct{ cancel context.CancelFunc }

// held is the tokens s holds for the conversation: once warm, the history
// it is still reading counts.
func held(s Session) int {
	if w, ok := s.(warmer); ok {
		_, total := w.ToWarm()
		return total
	}
	return s.Position()
}

// warmLocked starts reading the open session's history into its cache
// when there is any left to read. Call with c.mu held and no action
// running.
func (c *Chat) warmLocked() {
	c.cancelWarmLocked()
	w, ok := c.sess.(warmer)
	if !ok {
		return
	}
	done, total := w.ToWarm()
	if done >= total {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &warmRun{cancel: cancel}
	c.warm = run
	c.st.Warming, c.st.Position = true, done
	c.st.Progress = Progress{Stage: "warming", Done: done, Total: total}
	c.st.Activity = warmActivity(done, total)
	c.wg.Add(1) // Wait waits for it too (Close, tests)
	go func() {
		defer c.wg.Done()
		err := w.Warm(ctx, func(held, total int) {
			// TryLock: whoever holds c.mu may be waiting for this chunk
			// (closing the session); the next chunk reports instead.
			if !c.mu.TryLock() {
				return
			}
			if c.warm == run {
				c.st.Position = held
				c.st.Progress = Progress{Stage: "warming", Done: held, Total: total}
				c.st.Activity = warmActivity(held, total)
			}
			c.mu.Unlock()
			c.changed()
		})
		cancel()
		c.mu.Lock()
		mine := c.warm == run
		if mine {
			c.warm = nil
			c.endWarmLocked()
			c.refreshLocked()
		}
		c.mu.Unlock()
		if !mine {
			return // an action took over; it shows its own state
		}
		c.recountDraft() // the warm held the session: the note could not count

		if err != nil && !errors.Is(err, context.Canceled) {
			c.fail(fmt.Errorf("%w — the next message reads the rest of the history", err))
			return
		}
		c.changed()
	}()
}

// cancelWarmLocked stops the warm in progress, if any, between chunks.
func (c *Chat) cancelWarmLocked() {
	if c.warm != nil {
		c.warm.cancel()
		c.warm = nil
		c.endWarmLocked()
	}
}

func (c *Chat) endWarmLocked() {
	if c.st.Warming {
		c.st.Warming, c.st.Progress, c.st.Activity = false, Progress{}, ""
	}
}

func warmActivity(held, total int) string {
	return fmt.Sprintf("Reading the conversation into the cache: %d of %d tokens…", held, total)
}
