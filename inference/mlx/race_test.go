//go:build race

package mlx

const raceEnabled = true
