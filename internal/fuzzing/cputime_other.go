//go:build !unix

package fuzzing

import "time"

var start = time.Now()

func begin() {}

func end() {}

// now is wall time where CPU time is not at hand.
func now() time.Duration { return time.Since(start) }
