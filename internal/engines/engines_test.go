package engines

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"etchat/inference"
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

// A runner library whose device MLX cannot start (the fake backend built
// with FAKE_DEVICE_ERROR: Metal's metallib error when the device comes
// up) is refused at engine load: auto falls back to the CPU engine naming
// MLX's reason, before any model is loaded, and --engine mlx fails with a
// LibraryError of the device kind.
func TestAutoFallsBackNamingTheDevice(t *testing.T) {
	cxx, err := exec.LookPath("c++")
	if err != nil || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		t.Skip("needs a C++ compiler on linux or darwin to build the fake runner")
	}
	native := filepath.Join("..", "..", "inference", "native")
	lib := filepath.Join(t.TempDir(), mlx.LibraryName(runtime.GOOS))
	cmd := exec.Command(cxx, "-shared", "-fPIC", "-O0", "-std=c++17", "-fvisibility=hidden", "-DFAKE_DEVICE_ERROR",
		"-I", native, filepath.Join(native, "etchat_runner.cpp"),
		filepath.Join("..", "..", "inference", "mlx", "testdata", "fake_backend.cpp"), "-lpthread", "-o", lib)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	Register()
	sel, err := inference.SelectEngine("auto", engine.Config{Library: lib})
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Fallback || sel.Name != engine.CPU {
		t.Errorf("auto chose %+v, want the CPU engine as a fallback", sel)
	}
	if !strings.Contains(sel.Reason, "cannot start its device") || !strings.Contains(sel.Reason, "Can not load metallib") {
		t.Errorf("auto's reason %q does not name the device and MLX's message", sel.Reason)
	}
	_, err = inference.SelectEngine("mlx", engine.Config{Library: lib})
	var le *engine.LibraryError
	if !errors.As(err, &le) || le.Problem != engine.LibraryNoDevice || !errors.Is(err, mlx.ErrDevice) {
		t.Errorf("--engine mlx: %v, want a LibraryError of kind LibraryNoDevice wrapping mlx.ErrDevice", err)
	}
}
