// Package mlx is etchat's native engine: ExecuTorch with the MLX delegate,
// reached through libetchat_runner, a small native library of ours whose C
// ABI is inference/native/etchat_runner.h. The library is loaded at run time
// with purego (no cgo), so etchat builds and runs everywhere and simply
// reports the engine unavailable where the library is missing. MLX computes
// on Metal on a Mac, on the CPU or CUDA on Linux (Engine.Device).
//
// The binding follows the header's sections, one Go file each:
// errors.go (version and errors), program.go, session.go, memory.go and
// device.go. library.go finds and loads the library (Candidates is the pure
// search order; diagnose.go explains files the loader refuses), metallib.go
// finds mlx.metallib on macOS (MetallibCandidates, also pure), config.go
// converts a kvcache.Config into the C structs, pool.go keeps closed
// sessions for the next conversation on the same model and config, and
// engine.go implements engine.Engine and engine.Session on top.
//
// The library runs every ExecuTorch/MLX call on one thread of its own (MLX
// streams belong to the thread that made them), so sessions may be used
// from any goroutine. Errors from the library carry its message (read from
// the calling thread's last error, with the thread pinned) and wrap the
// engine's sentinels (ErrRewindRefused, ErrCacheFull, ErrUnsupported,
// ErrClosed) or this package's (ErrLoad, ErrExecute, ErrDevice,
// ErrInvalidArgument, ErrInternal), so callers branch with errors.Is.
package mlx
