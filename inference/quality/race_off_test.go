//go:build !race

package quality

const raceOn = false
