package engines

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/mlx"
)

// A library the search found but could not use keeps its reason up to the
// one-line summary that run's first line, the app's header and auto's
// fallback note show; one found nowhere stays "not found".
func TestLibraryErrorKeepsTheReason(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, mlx.LibraryName(runtime.GOOS))
	if err := os.WriteFile(lib, []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	_, err := mlx.New(mlx.Options{Getenv: none, Executable: filepath.Join(dir, "etchat")})
	le := libraryError(err)
	if le.Problem != engine.LibraryUnloadable {
		t.Errorf("problem %v, want LibraryUnloadable", le.Problem)
	}
	if s := le.Summary(); !strings.Contains(s, lib) || !strings.Contains(s, "not a shared library") || strings.Contains(s, "\n") {
		t.Errorf("summary %q: want one line naming %s and why", s, lib)
	}
	if !errors.Is(le, err) {
		t.Error("the LibraryError does not wrap the binding's error")
	}

	_, err = mlx.New(mlx.Options{Getenv: none, Executable: filepath.Join(t.TempDir(), "etchat")})
	if le := libraryError(err); le.Problem != engine.LibraryMissing || le.Summary() != "native runner library not found" {
		t.Errorf("nothing found: %v, %q", le.Problem, le.Summary())
	}
}
