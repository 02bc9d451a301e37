package app

import (
	"context"
	"os"
	"time"
)

// Two windows on one database both write to it (a conversation open in
// both forks into sibling branches) and each shows stale lists. The window
// cannot prevent that, but it can say so and keep its lists fresh: the
// first window takes an advisory lock on a file beside the database (the
// second finds it taken), and every window watches the database files and
// re-reads its lists when they change.

// dbStamp is what changes when any process writes the database: the sizes
// and modification times of the file and its write-ahead log.
func dbStamp(path string) [4]int64 {
	var s [4]int64
	if fi, err := os.Stat(path); err == nil {
		s[0], s[1] = fi.Size(), fi.ModTime().UnixNano()
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		s[2], s[3] = fi.Size(), fi.ModTime().UnixNano()
	}
	return s
}

// SharedDBNote is the banner of a window whose database another etchat
// window has open.
func SharedDBNote(path string) string {
	return "Another etchat window has this database open (" + path + "): both save into it, and a conversation " +
		"open in both forks into branches. This window re-reads its lists when the other one writes."
}

// watchDB calls changed (on its own goroutine: it reads the store)
// whenever the database files change, looking every interval, until ctx
// ends. The window's own writes count too; re-reading a list is cheap.
func watchDB(ctx context.Context, path string, every time.Duration, changed func()) {
	last := dbStamp(path)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s := dbStamp(path); s != last {
				last = s
				changed()
			}
		}
	}
}
