//go:build race

package bench

// raceEnabled: the race detector slows the CPU engine and the tokenizer
// loader about tenfold, so the heaviest fixture cases run only without it.
const raceEnabled = true
