package mlx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// EnvLibrary names the environment variable that overrides the search: when
// set, it is the only path tried.
const EnvLibrary = "ETCHAT_RUNNER"

// ErrNoLibrary is wrapped by the error returned when no candidate path
// holds a loadable runner library.
var ErrNoLibrary = errors.New("etchat runner library not found")

// ErrABIVersion is wrapped by the error returned for a library built
// against another version of etchat_runner.h.
var ErrABIVersion = errors.New("etchat runner ABI version mismatch")

// LibraryName is the runner library's file name on goos.
func LibraryName(goos string) string {
	switch goos {
	case "darwin", "ios":
		return "libetchat_runner.dylib"
	case "windows":
		return "etchat_runner.dll"
	}
	return "libetchat_runner.so"
}

// Candidates is the order in which the runner library is looked for, for
// an environment (env), the running executable's path (exe, "" if unknown)
// and an operating system (goos). It touches nothing: callers try each
// path in turn.
//
//  1. $ETCHAT_RUNNER, if set: the only candidate.
//  2. Beside the executable.
//  3. On macOS, ../Frameworks from the executable: Contents/Frameworks when
//     the executable is an .app bundle's Contents/MacOS/etchat.
//  4. ../lib from the executable (a prefix install: bin/etchat, lib/…).
//  5. Common prefixes: on macOS /opt/homebrew/lib and /usr/local/lib; on
//     Linux /usr/local/lib, /usr/lib and /usr/lib64.
func Candidates(env func(string) string, exe string, goos string) []string {
	if env != nil {
		if p := strings.TrimSpace(env(EnvLibrary)); p != "" {
			return []string{p}
		}
	}
	name := LibraryName(goos)
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if exe != "" {
		dir := filepath.Dir(exe)
		add(filepath.Join(dir, name))
		if goos == "darwin" {
			add(filepath.Join(dir, "..", "Frameworks", name))
		}
		add(filepath.Join(dir, "..", "lib", name))
	}
	switch goos {
	case "darwin":
		add(filepath.Join("/opt/homebrew/lib", name))
		add(filepath.Join("/usr/local/lib", name))
	case "linux", "freebsd", "netbsd":
		add(filepath.Join("/usr/local/lib", name))
		add(filepath.Join("/usr/lib", name))
		add(filepath.Join("/usr/lib64", name))
	}
	return out
}

// libs caches loaded libraries by path. A runner library is never unloaded:
// ExecuTorch registers backends and kernels from static initialisers.
var (
	libsMu sync.Mutex
	libs   = map[string]*library{}
)

// loadPath loads and binds the library at path, checking its ABI version;
// env is the environment the metallib search reads ($ETCHAT_METALLIB) and
// goos the platform it searches for (runtime.GOOS; tests inject darwin).
func loadPath(path string, env func(string) string, goos string) (*library, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mlx: %s: %w", path, err)
	}
	libsMu.Lock()
	defer libsMu.Unlock()
	if l, ok := libs[abs]; ok {
		return l, nil
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return nil, fmt.Errorf("mlx: runner library %s: %w", abs, err)
	case st.IsDir():
		return nil, fmt.Errorf("mlx: runner library %s is a directory", abs)
	}
	l, err := bind(abs)
	if err != nil {
		return nil, err
	}
	if err := configureMetallib(l, MetallibCandidates(env, abs, goos), isFile); err != nil {
		return nil, err
	}
	// The device comes up now, before any model: a Metal device or a
	// metallib MLX cannot use fails here with MLX's own reason, and auto
	// falls back before loading a model for nothing. This is also what
	// makes a later metallib path refused.
	if err := l.setKernelCache(KernelCacheDir()); err != nil {
		return nil, fmt.Errorf("mlx: %s: %w", abs, err)
	}
	if err := l.startDevice(); err != nil {
		return nil, fmt.Errorf("mlx: %s: %w", abs, err)
	}
	if l.limits, err = l.readLimits(); err != nil {
		return nil, fmt.Errorf("mlx: %s: %w", abs, err)
	}
	libs[abs] = l
	return l, nil
}

// SearchError is find's failure over several candidates: every path tried
// and why each failed. When some exist but cannot be used (another ABI
// version, no mlx.metallib, not a library) it wraps those failures, so
// errors.Is(err, ErrABIVersion) or ErrNoMetallib still holds and the real
// reason is not reported as "not found"; only when none exists does it wrap
// ErrNoLibrary.
type SearchError struct {
	Tried    []string // "path: why", in search order
	Unusable []error  // the failures of the candidates that exist
}

func (e *SearchError) Error() string {
	what := "etchat runner library not found"
	if len(e.Unusable) > 0 {
		what = "no usable etchat runner library"
	}
	return fmt.Sprintf("mlx: %s; tried:\n  %s\n(build it from inference/native and put it beside the etchat executable, or set %s)",
		what, strings.Join(e.Tried, "\n  "), EnvLibrary)
}

// Unwrap is the unusable candidates' failures (errors.Join's form), or
// ErrNoLibrary when none exists.
func (e *SearchError) Unwrap() []error {
	if len(e.Unusable) == 0 {
		return []error{ErrNoLibrary}
	}
	return e.Unusable
}

// Reason is, on one line, why the first library found could not be used
// ("" when none was found): what the announcements show.
func (e *SearchError) Reason() string {
	if len(e.Unusable) == 0 {
		return ""
	}
	return oneLine(e.Unusable[0])
}

// oneLine is an error's text without the package prefix, on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "mlx: ")), " ")
}

// find tries each candidate in order and returns the first library that
// loads and has our ABI version. The error lists every path tried and why
// each failed (a *SearchError), or for a single candidate that exists is
// that candidate's own error.
func find(candidates []string, env func(string) string, goos string) (*library, error) {
	if len(candidates) == 0 {
		return nil, fmt.Errorf("mlx: %w (no candidate paths on this system)", ErrNoLibrary)
	}
	se := &SearchError{}
	for _, p := range candidates {
		l, err := loadPath(p, env, goos)
		if err == nil {
			return l, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			se.Tried = append(se.Tried, p+": not found")
			continue
		}
		se.Tried = append(se.Tried, p+": "+strings.TrimPrefix(err.Error(), "mlx: "))
		se.Unusable = append(se.Unusable, err)
	}
	// A single explicit path (ETCHAT_RUNNER, Options.Library) keeps its
	// own error's identity and message.
	if len(candidates) == 1 && len(se.Unusable) == 1 {
		return nil, se.Unusable[0]
	}
	return nil, se
}

// Available reports whether the native engine can run here: the path of a
// runner library that loads and matches this build's ABI version, or an
// error listing the paths tried. It searches Candidates(os.Getenv,
// os.Executable(), runtime.GOOS).
func Available() (path string, err error) {
	l, err := find(defaultCandidates(Options{}), os.Getenv, runtime.GOOS)
	if err != nil {
		return "", err
	}
	return l.path, nil
}
