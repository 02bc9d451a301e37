//go:build !unix

package app

// lockDB cannot tell here (no flock): the window claims nothing, and still
// watches the database for changes.
func lockDB(path string) (release func(), held bool) { return func() {}, true }

// dbHold cannot count holders here (no flock): alone answers false, so a
// restore is refused rather than done under another window.
type dbHold struct{}

func holdDB(path string) *dbHold { return &dbHold{} }
func (h *dbHold) alone() bool    { return false }
func (h *dbHold) release()       {}
