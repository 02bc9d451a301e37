package inference

import (
	"etchat/inference/cpu"
	"etchat/inference/mlx"
)

// The engines linked into etchat are registered as defaults; a program (or
// a test) may replace them with RegisterEngine.
func init() {
	RegisterEngineDefault(EngineCPU, func() (Engine, error) { return cpu.New(cpu.Options{}), nil })
	RegisterEngineDefault(EngineMetal, func() (Engine, error) { return mlx.New(mlx.Options{}) })
}
