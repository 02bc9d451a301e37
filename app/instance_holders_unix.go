//go:build unix

package app

import (
	"os"
	"syscall"
)

// dbHold is this window's shared lock on the holders file beside the
// database: every window holds one while it has the database open, so a
// window can tell whether it is the only one (alone) — what a restore
// needs, and what the window lock (lockDB) cannot say: it knows only
// whether another window came first or knocked since, not whether that
// one is still open.
type dbHold struct{ f *os.File }

// holdDB takes the shared lock beside the database at path (nil when the
// file cannot be made: alone then answers false, claiming nothing).
func holdDB(path string) *dbHold {
	f, err := os.OpenFile(path+".holders", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil
	}
	return &dbHold{f: f}
}

// alone reports whether no other window holds the database: it tries to
// turn its shared lock exclusive without waiting (which fails while any
// other holds one), then shares again.
func (h *dbHold) alone() bool {
	if h == nil || h.f == nil {
		return false
	}
	fd := int(h.f.Fd())
	ok := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil
	_ = syscall.Flock(fd, syscall.LOCK_SH) // back to sharing (a conversion: never blocks on our own)
	return ok
}

// release gives the lock back (the window closes).
func (h *dbHold) release() {
	if h != nil && h.f != nil {
		h.f.Close()
		h.f = nil
	}
}
