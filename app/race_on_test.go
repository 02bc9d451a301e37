//go:build race

package app

// raceEnabled: the race detector is on (its slowdown skips the heaviest
// fixture runs).
const raceEnabled = true
