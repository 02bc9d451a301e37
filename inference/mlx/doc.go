// Package mlx is etchat's native engine: ExecuTorch with the MLX delegate,
// reached through libetchat_runner, a small native library of ours whose C
// ABI is inference/native/etchat_runner.h. The library is loaded at run time
// with purego (no cgo), so etchat builds and runs everywhere and simply
// reports the engine unavailable where the library is missing.
//
// The binding follows the header's sections, one Go file each:
// errors.go (version and errors), program.go, session.go and memory.go.
// library.go finds and loads the library (Candidates is the pure search
// order; diagnose.go explains files the loader refuses), config.go converts a kvcache.Config into the C structs, and
// engine.go implements engine.Engine and engine.Session on top.
//
// Errors from the library carry its message (read from its thread-local
// last error on the same OS thread) and wrap the engine's sentinels
// (ErrRewindRefused, ErrCacheFull, ErrUnsupported, ErrClosed), so callers
// can fall back to the CPU engine on any error without special cases.
package mlx
