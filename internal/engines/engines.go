// Package engines is etchat's one wiring place for engines: it registers
// the engines linked into the binary (the pure-Go CPU engine and the native
// ExecuTorch + MLX binding) with package inference/engine. main calls
// Register; tests of packages that load models call it too. No library
// package imports an engine.
package engines

import (
	"errors"
	"os"
	"strings"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/mlx"
)

// Register registers the CPU and the native engine.
func Register() {
	engine.Register(engine.CPU, func(c engine.Config) (engine.Engine, error) {
		return cpu.New(cpu.Options{Numerics: c.Numerics}), nil
	})
	engine.Register(engine.MLX, newMLX)
}

// newMLX loads the runner library and brings its device up; its failures a
// user fixes (missing, ABI mismatch, unloadable, no usable device) become
// *engine.LibraryError.
func newMLX(c engine.Config) (engine.Engine, error) {
	e, err := mlx.New(mlx.Options{Library: c.Library, Getenv: c.Getenv})
	if err != nil {
		return nil, libraryError(err)
	}
	return e, nil
}

// libraryError classifies the binding's error, keeping why a library that
// was found could not be used (the search wraps each such failure).
func libraryError(err error) *engine.LibraryError {
	le := &engine.LibraryError{Problem: engine.LibraryUnloadable, Err: err}
	var se *mlx.SearchError
	switch {
	case errors.As(err, &se):
		le.Reason = se.Reason()
	case !errors.Is(err, os.ErrNotExist):
		le.Reason = strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "mlx: ")), " ")
	}
	switch {
	case errors.Is(err, mlx.ErrABIVersion):
		le.Problem = engine.LibraryABIMismatch
	case errors.Is(err, mlx.ErrDevice):
		le.Problem = engine.LibraryNoDevice
	case errors.Is(err, mlx.ErrNoLibrary), errors.Is(err, os.ErrNotExist):
		le.Problem = engine.LibraryMissing
	}
	return le
}
