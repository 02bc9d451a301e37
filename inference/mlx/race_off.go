//go:build !race

package mlx

// raceEnabled turns Options.PoisonViews on in -race builds.
const raceEnabled = false
