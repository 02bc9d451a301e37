//go:build !race

package mlx

const raceEnabled = false
