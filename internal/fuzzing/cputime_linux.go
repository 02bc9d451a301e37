package fuzzing

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD (not in package syscall).
const rusageThread = 1

// begin pins the goroutine to its thread for the input, so that the
// thread's CPU time is the input's: its own work and GC assists, not the
// GC's background workers or the scheduler's other threads.
func begin() { runtime.LockOSThread() }

func end() { runtime.UnlockOSThread() }

// now is the calling thread's CPU time (user + system).
func now() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
