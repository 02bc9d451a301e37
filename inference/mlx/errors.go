package mlx

// Header section 1: version and errors.

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"etchat/inference/engine"
)

// ABIVersion is the etchat_runner.h ABI version this binding speaks
// (ETCHAT_RUNNER_ABI_VERSION).
const ABIVersion = 2

// Status is an etchat_status code.
type Status int32

// The status codes of etchat_runner.h.
const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = 1
	StatusUnsupported     Status = 2
	StatusRewindRefused   Status = 3
	StatusCacheFull       Status = 4
	StatusClosed          Status = 5
	StatusLoad            Status = 6
	StatusExecute         Status = 7
	StatusInternal        Status = 8
	StatusDevice          Status = 9
)

// Sentinels for the statuses the engine's sentinels do not cover, so
// callers (the loader's fallback, the edges' hints) branch with errors.Is
// instead of reading messages.
var (
	// ErrLoad: the library could not load the program or its method (a
	// file it cannot read, a program the MLX backend refuses, a missing
	// operator).
	ErrLoad = errors.New("program load failed")
	// ErrExecute: ExecuTorch or MLX failed while running a step.
	ErrExecute = errors.New("execution failed")
	// ErrDevice: no usable device (the MLX backend is unavailable, or
	// Metal's mlx.metallib is missing).
	ErrDevice = errors.New("no usable device")
	// ErrInvalidArgument: the library refused what it was given (a cache
	// config that does not match the program, a step that does not
	// continue the cache or exceeds max_write).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInternal: a failure inside the library (a caught C++ exception).
	ErrInternal = errors.New("internal error")
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusInvalidArgument:
		return "invalid argument"
	case StatusUnsupported:
		return "unsupported"
	case StatusRewindRefused:
		return "rewind refused"
	case StatusCacheFull:
		return "cache full"
	case StatusClosed:
		return "closed"
	case StatusLoad:
		return "load failed"
	case StatusExecute:
		return "execution failed"
	case StatusInternal:
		return "internal error"
	case StatusDevice:
		return "no usable device"
	}
	return fmt.Sprintf("status %d", int32(s))
}

// Error is a failure the runner library reported: the operation, its
// status and the library's own message.
type Error struct {
	Op     string // the Go-side operation, e.g. "forward"
	Status Status
	Msg    string // etchat_last_error() right after the failure
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "mlx: " + e.Op + ": " + e.Status.String()
	}
	return "mlx: " + e.Msg
}

// Unwrap maps the status onto the engine's sentinels.
func (e *Error) Unwrap() error {
	switch e.Status {
	case StatusUnsupported:
		return engine.ErrUnsupported
	case StatusRewindRefused:
		return engine.ErrRewindRefused
	case StatusCacheFull:
		return engine.ErrCacheFull
	case StatusClosed:
		return engine.ErrClosed
	case StatusLoad:
		return ErrLoad
	case StatusExecute:
		return ErrExecute
	case StatusDevice:
		return ErrDevice
	case StatusInvalidArgument:
		return ErrInvalidArgument
	case StatusInternal:
		return ErrInternal
	}
	return nil
}

// versionFuncs binds section 1.
type versionFuncs struct {
	abiVersion func() int32
	lastError  func() string
}

// library is one loaded runner library with every entry point bound.
type library struct {
	path   string
	handle uintptr
	bound  []string // the symbols bound, in order
	versionFuncs
	programFuncs
	sessionFuncs
	memoryFuncs
	deviceFuncs
	timingFuncs

	dev         DeviceInfo    // what etchat_device reported when the device came up
	devStart    time.Duration // what bringing it up took
	metallib    string        // the metallib given to MLX ("" off macOS)
	metallibTag string        // the stamp beside it
	warmed      bool          // a decode step has run on the GPU (warm)
	limits      MemoryLimits  // the working set, read when the device came up
	wired       wiring        // generations holding the wired limit (memory.go)
	kernelCache string        // the folder given as MLX's kernel cache ("" if none)

	pool sessionPool // idle sessions kept for reuse (pool.go)
}

// symbol binds fptr to the named symbol, or says which one is missing.
func (l *library) symbol(fptr any, name string) error {
	addr, err := dlsym(l.handle, name)
	if err != nil || addr == 0 {
		return fmt.Errorf("mlx: %s lacks %s; is it an etchat runner library?", l.path, name)
	}
	registerFunc(fptr, addr)
	l.bound = append(l.bound, name)
	return nil
}

// has reports whether the library exports name (for optional sections).
func (l *library) has(name string) bool {
	addr, err := dlsym(l.handle, name)
	return err == nil && addr != 0
}

// bind loads the library at path, checks its ABI version first, then binds
// every section. A library refused after dlopen stays loaded: unloading
// one that carries ExecuTorch and MLX (static initialisers, Metal state) is
// not safe, and RTLD_LOCAL keeps its symbols out of the others' way.
func bind(path string) (*library, error) {
	h, err := dlopen(path)
	if err != nil {
		why := diagnoseFile(path, runtime.GOOS, runtime.GOARCH)
		if why == "" && runtime.GOOS == "darwin" {
			why = diagnoseMachO(path, runtime.GOARCH, hostMacOS())
		}
		if why != "" {
			return nil, fmt.Errorf("mlx: cannot load runner library %s: %s (loader: %v)", path, why, err)
		}
		return nil, fmt.Errorf("mlx: cannot load runner library %s: %v", path, err)
	}
	l := &library{path: path, handle: h}
	if err := l.symbol(&l.abiVersion, "etchat_abi_version"); err != nil {
		return nil, err
	}
	if v := l.abiVersion(); v != ABIVersion {
		return nil, fmt.Errorf("mlx: %s speaks ABI version %d, this etchat needs %d: %w (rebuild the library from this etchat's inference/native)", path, v, ABIVersion, ErrABIVersion)
	}
	for _, err := range []error{
		l.versionFuncs.bind(l), l.programFuncs.bind(l), l.sessionFuncs.bind(l), l.memoryFuncs.bind(l),
		l.deviceFuncs.bind(l),
	} {
		if err != nil {
			return nil, err
		}
	}
	l.timingFuncs.bind(l)
	return l, nil
}

func (f *versionFuncs) bind(l *library) error {
	return l.symbol(&f.lastError, "etchat_last_error")
}

// call runs one entry point and, on failure, reads the library's message
// on the same OS thread (the message is thread_local on the calling
// thread's side; the library itself runs the call on its own thread).
func (l *library) call(op string, fn func() int32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := Status(fn())
	if st == StatusOK {
		return nil
	}
	return &Error{Op: op, Status: st, Msg: l.lastError()}
}

// errZeroHandle is what a typed handle method returns for a zero handle,
// without calling into the library.
func errZeroHandle(op, what string) error {
	return &Error{Op: op, Status: StatusClosed, Msg: op + ": " + what + " is closed"}
}
