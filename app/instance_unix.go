//go:build unix

package app

import (
	"os"
	"strconv"
	"syscall"
)

// lockDB takes the advisory lock beside the database at path. held is
// false when another process (or another window of this one) has it;
// release gives it back. An error (a read-only folder) counts as held:
// nothing is claimed that is not known.
func lockDB(path string) (release func(), held bool) {
	f, err := os.OpenFile(path+".window-lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if err == syscall.EWOULDBLOCK {
			// Knock: the window holding the lock watches this file's time
			// and shows the banner too (knocked).
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		f.Close()
		return func() {}, err != syscall.EWOULDBLOCK
	}
	return func() { f.Close() }, true
}
