// Continue (more of a reply cut at max tokens, in the same message) and the
// live numbers of a reply while it streams.

package app

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LiveStatsEvery is how often the stats line of a streaming reply is
// recomputed: a few times a second, readable, while the text itself
// follows every token.
const LiveStatsEvery = 250 * time.Millisecond

// liveStats is what the live numbers are measured from: the first token's
// time and count, and when the line was last made.
type liveStats struct {
	first     time.Time
	firstDone int
	last      time.Time
}

// LiveStatsLine is a streaming reply's stats line: the tokens so far and
// the decode rate since the first of them.
func LiveStatsLine(tokens int, rate float64) string {
	if rate <= 0 {
		return fmt.Sprintf("%d tokens so far", tokens)
	}
	return fmt.Sprintf("%d tokens so far · %.1f tok/s", tokens, rate)
}

// liveLocked updates the live stats line for a reply of done tokens at
// now, at most every LiveStatsEvery (the first token at once). c.mu held.
func (c *Chat) liveLocked(done int, now time.Time) {
	l := &c.liveStat
	if l.first.IsZero() {
		l.first, l.firstDone, l.last = now, done, now
		c.st.LiveStats = LiveStatsLine(done, 0)
		return
	}
	if now.Sub(l.last) < LiveStatsEvery {
		return
	}
	l.last = now
	rate := float64(done-l.firstDone) / now.Sub(l.first).Seconds()
	c.st.LiveStats = LiveStatsLine(done, rate)
}

// CanContinue reports whether Continue applies: the last reply stopped
// before the model ended its turn (max tokens, Stop) and the cache holds
// it (not while a reopened history is still being read in).
func (s ChatState) CanContinue() bool {
	return !s.Busy && s.Loaded && !s.Warming && s.Stored == 0 && s.Continuable && !s.Full() // a full cache has no room to go on
}

// Continue generates more of the last reply (up to another max new
// tokens) and appends it to the same message; it streams in place of it.
// The cache keeps the reply (see inference.Conversation.Continue), and the
// store grows the stored reply instead of adding a branch.
func (c *Chat) Continue() error {
	if !c.State().CanContinue() {
		return errors.New("there is no cut reply to continue: Continue applies to a reply that stopped at max tokens or at Stop")
	}
	return c.generate("", false, func(ctx context.Context, s Session, stream func(string)) (*Reply, error) {
		c.mu.Lock()
		if n := len(c.st.Messages); n > 0 {
			// The reply streams on from its text, in its own place.
			c.st.Streaming = c.st.Messages[n-1].Text
			c.st.Messages = c.st.Messages[:n-1]
		}
		c.mu.Unlock()
		c.changed()
		return s.Continue(ctx, stream)
	})
}

// Continue and CanContinue of the conversation, for Session.
func (c *convSession) Continue(ctx context.Context, f func(string)) (*Reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conv.Continue(ctx, c.stream(f))
}

func (c *convSession) CanContinue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warm != nil {
		if held, total := c.warm.Remaining(); held < total {
			return false // the reply may be read in only in part
		}
	}
	return c.conv.CanContinue() == nil
}

// Continue takes the program's turn, as every generation of the chat does
// while the Serve switch shares the model.
func (s *sharedSession) Continue(ctx context.Context, f func(string)) (*Reply, error) {
	release, err := s.chatTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.convSession.Continue(ctx, f)
}

// continueReply is the Continue Reply action (Chat menu, More).
func (v *chatView) continueReply() {
	if v.u.Chat.State().CanContinue() {
		v.do(v.u.Chat.Continue())
	}
}
