//go:build unix && !linux

package fuzzing

import (
	"syscall"
	"time"
)

func begin() {}

func end() {}

// now is the process's CPU time (user + system): an input's cost without
// the time the shared machine gave to others (the GC's too).
func now() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
