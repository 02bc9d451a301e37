package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"etchat/store"
)

// Two windows on one database both write to it (two changes of one
// conversation at once: the second is refused, chat_revision.go) and each
// would show stale lists. The window says so and keeps its lists fresh: the
// first window takes an advisory lock on a file beside the database (the
// second finds it taken), and every window watches the database files and
// re-reads its lists, the open transcript and the benchmark history when
// they change.

// dbStamp is what changes when any process writes the database: the sizes
// and modification times of the file and its write-ahead log, and the
// time of the window lock file (another window knocking, lockDB).
func dbStamp(path string) [5]int64 {
	var s [5]int64
	if fi, err := os.Stat(path); err == nil {
		s[0], s[1] = fi.Size(), fi.ModTime().UnixNano()
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		s[2], s[3] = fi.Size(), fi.ModTime().UnixNano()
	}
	s[4] = lockStamp(path)
	return s
}

// lockStamp is the modification time of the window lock file beside the
// database at path (0 when there is none).
func lockStamp(path string) int64 {
	if fi, err := os.Stat(path + ".window-lock"); err == nil {
		return fi.ModTime().UnixNano()
	}
	return 0
}

// SharedDBNote is the banner of a window whose database another etchat
// window has open.
func SharedDBNote(path string) string {
	return "Another etchat window has this database open (" + path + "): both save into it; when both change one " +
		"conversation at once, the second change is refused and its message goes back into the box. This window shows what the other one writes."
}

// watchDB calls changed(true) (on its own goroutine: it reads the store)
// whenever the database files change, looking every interval, until ctx
// ends, and once more at the next look. The window's own writes count
// too; re-reading is cheap. When changed reports it could not finish (a
// reply was streaming), it is called again at the next look,
// changed(false) when the files did not change meanwhile.
func watchDB(ctx context.Context, path string, every time.Duration, changed func(files bool) (again bool)) {
	last := dbStamp(path)
	t := time.NewTicker(every)
	defer t.Stop()
	// A change is looked at once more at the next tick: the files change
	// as a commit is written, a moment before other connections see it,
	// and a reader that came in between would miss it for good.
	again, followUp := false, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s := dbStamp(path)
			if s == last && !again && !followUp {
				continue
			}
			files := s != last || followUp
			followUp = s != last
			last = s
			again = changed(files)
		}
	}
}

// ReloadOpen re-reads the open conversation after another process wrote
// the database: when the stored path differs from the transcript (another
// window replied, undid, switched branch), the session switches to it and
// the cache keeps the prefix they share. While an action runs it does
// nothing and reports pending: ask again when it is over. A conversation
// deleted elsewhere is closed, and the red line says so.
func (c *Chat) ReloadOpen(ctx context.Context) (pending bool, err error) {
	c.mu.Lock()
	busy, sess, id := c.st.Busy, c.sess, c.st.ConvID
	c.mu.Unlock()
	if busy {
		return true, nil
	}
	if sess == nil || id == 0 || c.store == nil {
		return false, nil
	}
	sum, _, msgs, err := c.store.LoadConversation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c.closeDeleted(id)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("could not re-read the conversation another window changed: %w", err)
	}
	c.noteStored(id, sess, sum, msgs)
	if sameTranscript(sess.Messages(), msgs) {
		c.loadBranches(ctx, id) // another window may have added a branch elsewhere
		c.changed()
		return false, nil
	}
	c.mu.Lock()
	said := c.st.Err // a background re-read does not wipe what the red line says
	c.mu.Unlock()
	err = c.start("Reading another window's changes…", func(ctx context.Context) error {
		// Read again inside the action: a turn of this window may have
		// been saved since the look above.
		if err := c.adopt(ctx, sess, id); err != nil {
			return fmt.Errorf("could not show what another window wrote: %w", err)
		}
		c.mu.Lock()
		c.st.Err = said
		c.mu.Unlock()
		return nil
	})
	if errors.Is(err, ErrBusy) {
		return true, nil
	}
	return false, err
}

// closeDeleted closes conversation id, deleted in another window, and says
// so in the red line.
func (c *Chat) closeDeleted(id int64) {
	c.mu.Lock()
	if c.st.ConvID == id && !c.st.Busy {
		c.closeLocked()
		c.st.ConvID, c.st.Title, c.st.Branches = 0, "", nil
		c.st.Err = "this conversation was deleted in another etchat window; your message box is kept"
	}
	c.mu.Unlock()
	c.changed()
}

// noteStored takes the title of conversation id as stored and, when the
// stored path is still what sess shows (another window changed the tree
// elsewhere: a branch), its revision: the transcript is current at it.
func (c *Chat) noteStored(id int64, sess Session, sum ConversationSummary, msgs []Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.ConvID != id {
		return
	}
	if sum.Title != "" {
		c.st.Title = sum.Title
	}
	if !c.st.Busy && c.sess == sess && sum.Seen != c.seen && sameTranscript(sess.Messages(), msgs) {
		c.seen = sum.Seen
		c.setRedoLocked(nil)
	}
}

// sameTranscript reports whether a and b are the same messages: roles,
// texts and the tokens they hold.
func sameTranscript(a, b []Message) bool {
	return slices.EqualFunc(a, b, func(x, y Message) bool {
		return x.Role == y.Role && x.Text == y.Text && slices.Equal(x.IDs, y.IDs)
	})
}
