// Package engines is etchat's one wiring place for engines: it registers
// the engines linked into the binary (the pure-Go CPU engine and the native
// ExecuTorch + MLX binding) with package inference/engine. main calls
// Register; tests of packages that load models call it too. No library
// package imports an engine.
package engines

import (
	"errors"
	"os"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/mlx"
)

// Register registers the CPU and the native engine.
func Register() {
	engine.Register(engine.CPU, func(engine.Config) (engine.Engine, error) { return cpu.New(cpu.Options{}), nil })
	engine.Register(engine.MLX, newMLX)
}

// newMLX loads the runner library; its failures a user fixes (missing, ABI
// mismatch, unloadable) become *engine.LibraryError.
func newMLX(c engine.Config) (engine.Engine, error) {
	e, err := mlx.New(mlx.Options{Library: c.Library, Getenv: c.Getenv})
	switch {
	case err == nil:
		return e, nil
	case errors.Is(err, mlx.ErrABIVersion):
		return nil, &engine.LibraryError{Problem: engine.LibraryABIMismatch, Err: err}
	case errors.Is(err, mlx.ErrNoLibrary), errors.Is(err, os.ErrNotExist):
		return nil, &engine.LibraryError{Problem: engine.LibraryMissing, Err: err}
	}
	return nil, &engine.LibraryError{Problem: engine.LibraryUnloadable, Err: err}
}
