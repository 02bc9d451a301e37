//go:build race

package quality

// raceOn: the race detector slows these tests about tenfold; the
// heaviest cases (full 150k-vocabulary rows, the 65 MB model, gemma4)
// are left to the run without it.
const raceOn = true
