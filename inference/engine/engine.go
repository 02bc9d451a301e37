// Package engine defines the contract between etchat's generation code and
// the engines that execute a .pte: the CPU interpreter (inference/cpu) and
// ExecuTorch + MLX behind purego (inference/mlx; Metal on a Mac, CUDA on
// NVIDIA, MLX's CPU backend otherwise). It also holds the one list of engine
// names (Kinds, with aliases and descriptions) and the registry the
// program's wiring fills (Register). It owns no implementation; it sits
// below both engines and below package inference so that every one of them
// can name the same types without an import cycle.
package engine

import (
	"context"
	"errors"
	"fmt"

	"etchat/inference/kvcache"
)

// Engine opens models. Implementations are safe for concurrent Open calls.
type Engine interface {
	// Name is a short identifier, one of Kinds' names or aliases ("cpu",
	// "mlx"). An engine that knows the device it computes on also
	// implements Devicer.
	Name() string
	// Open loads the program at path. cfg is the cache configuration built by
	// kvcache.Build from the file's layout; it is nil for in-graph models,
	// which keep their cache inside the program.
	Open(ctx context.Context, path string, cfg *kvcache.Config) (Session, error)
}

// Session is one conversation's worth of state on an engine: the loaded
// program and its KV cache. A Session is not safe for concurrent use.
type Session interface {
	// Forward runs ids at the given cache positions (normally Len() ..
	// Len()+len(ids)-1; len(ids) at most the model's prefill chunk) and
	// appends them to the cache. It returns the logits of the last position
	// (vocabulary-sized). The returned slice is owned by the session and is
	// valid until the next call.
	Forward(ctx context.Context, ids, positions []int64) ([]float32, error)
	// ForwardAll is Forward returning the logits of every position,
	// row-major [len(ids)][vocab]. On a program that keeps only the last
	// position's logits (LogitsLast) a step of more than one token is
	// refused with ErrLastRowOnly before it runs; one token is one row.
	ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error)
	// Rewind shortens the cache to newLen tokens. It returns an error
	// wrapping ErrRewindRefused when newLen > Len() or when a sliding-window
	// layer no longer holds the cells the shorter sequence needs.
	Rewind(newLen int) error
	// Clear empties the cache for a new conversation.
	Clear() error
	// Len is the number of tokens in the cache.
	Len() int
	// Capacity is the most tokens the cache admits.
	Capacity() int
	// CanExtend reports whether n more tokens fit.
	CanExtend(n int) bool
	// Vocab is the size of a logits row.
	Vocab() int
	// Memory reports what the session holds now.
	Memory() Memory
	// Close releases the session. Calling it twice is harmless.
	Close() error
}

// Memory is what a session holds, in bytes. Fields an engine cannot measure
// are zero.
type Memory struct {
	KVBytes     int64 // bytes allocated for the KV cache now
	ActiveBytes int64 // engine-wide bytes in use (MLX active memory; CPU: cache + scratch)
	PeakBytes   int64 // high-water mark of ActiveBytes
}

var (
	// ErrRewindRefused: the cache cannot rewind to the asked length.
	ErrRewindRefused = kvcache.ErrRewindRefused
	// ErrCacheFull: the tokens do not fit in the cache's capacity.
	ErrCacheFull = kvcache.ErrCacheFull
	// ErrUnsupported: the operation is not available for this model or engine
	// (for example rewind on an in-graph model).
	ErrUnsupported = errors.New("unsupported")
	// ErrClosed: the session or engine was closed.
	ErrClosed = errors.New("closed")
)

// Logits rows (issue 45): which positions' logits a program's forward
// returns, as newer ExecuTorch exports publish it (get_logits_to_keep_mode,
// extension/llm/export/model_metadata.py). Older exports return every
// position.

// LogitsMode is a program's logits-to-keep mode, numbered as ExecuTorch's.
type LogitsMode int

// The modes.
const (
	// LogitsFull: forward returns every position's logits, [1, T, vocab].
	LogitsFull LogitsMode = 0
	// LogitsLast: forward returns the last position's logits only,
	// [1, 1, vocab], whatever the step's width.
	LogitsLast LogitsMode = 1
	// LogitsSelected: forward takes a third input, Long[R] row indices, and
	// returns those rows, [1, R, vocab].
	LogitsSelected LogitsMode = 2
)

func (m LogitsMode) String() string {
	switch m {
	case LogitsFull:
		return "full"
	case LogitsLast:
		return "last"
	case LogitsSelected:
		return "selected"
	}
	return fmt.Sprintf("mode %d", int(m))
}

// ErrLastRowOnly is ForwardAll's refusal of a step of more than one token
// on a LogitsLast program: no row per token exists. Scoring such a program
// feeds one token per forward (each step's one row is then its only
// position's). The step is not run. It wraps ErrUnsupported.
var ErrLastRowOnly = fmt.Errorf("%w: the program returns only the last position's logits (get_logits_to_keep_mode 1); feed one token per forward to score every position", ErrUnsupported)

// LogitsModer is implemented by sessions that know their program's
// logits-to-keep mode (both engines, and the wrappers around them).
type LogitsModer interface {
	LogitsMode() LogitsMode
}

// SessionLogitsMode is s's logits-to-keep mode; LogitsFull for a session
// that does not say (every export before the mode existed).
func SessionLogitsMode(s Session) LogitsMode {
	if m, ok := s.(LogitsModer); ok {
		return m.LogitsMode()
	}
	return LogitsFull
}
