// The cache record: which tokens the session holds and which message owns each, kept in step through rewinds and refills.

package inference

import (
	"context"
	"errors"
	"fmt"

	"etchat/inference/engine"
)

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
