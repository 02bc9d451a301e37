// Package nativelib finds the real native runner library (libetchat_runner,
// built by scripts/build-native) for tests, in one place: the binding's own
// tests and the native integration tests use the same rule.
//
// The library is $ETCHAT_RUNNER when set, else the build folder's
// build/native/libetchat_runner.so (or build/native/lib/…) under the module
// root. Outside CI a missing library skips the test with one loud line
// saying how to build it; under CI=true it fails the test, so a CI run
// cannot pass by skipping every native test.
package nativelib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Env is the variable that names the library (the binding's EnvLibrary).
const Env = "ETCHAT_RUNNER"

// Name is the library's file name on goos.
func Name(goos string) string {
	if goos == "darwin" {
		return "libetchat_runner.dylib"
	}
	return "libetchat_runner.so"
}

// Candidates is where the library is looked for, for an environment, a
// module root ("" if unknown) and goos. Pure.
func Candidates(env func(string) string, root, goos string) []string {
	if p := strings.TrimSpace(env(Env)); p != "" {
		return []string{p}
	}
	if root == "" {
		return nil
	}
	return []string{
		filepath.Join(root, "build", "native", Name(goos)),
		filepath.Join(root, "build", "native", "lib", Name(goos)),
	}
}

// ModuleRoot is the folder holding go.mod, searched upwards from dir.
func ModuleRoot(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// ErrNotBuilt is returned by Find when no candidate exists.
var ErrNotBuilt = errors.New("native runner library not built")

// Find is the first candidate that is a file, or an error naming them.
func Find() (string, error) {
	wd, _ := os.Getwd()
	cands := Candidates(os.Getenv, ModuleRoot(wd), runtime.GOOS)
	for _, p := range cands {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("%w (looked at %s): build it with scripts/build-native, or set %s", ErrNotBuilt, strings.Join(cands, ", "), Env)
}

var loud sync.Once

// Require returns the library's path. When it is missing, it fails t under
// CI=true and otherwise skips t, printing the reason once per test binary
// on stderr too (a skip is silent without -v).
func Require(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err == nil {
		record(t.Name())
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %v", err)
	}
	loud.Do(func() { fmt.Fprintf(os.Stderr, "NATIVE TESTS SKIPPED: %v\n", err) })
	t.Skipf("skipping: %v", err)
	return ""
}

// LogEnv names a file to which Require appends the name of every test that
// got the library, one per line: scripts/test counts them, so a CI run that
// ran no native test is seen to have run none.
const LogEnv = "ETCHAT_NATIVE_TEST_LOG"

func record(name string) {
	path := os.Getenv(LogEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	// One write per line: O_APPEND keeps lines from parallel test binaries whole.
	_, _ = f.WriteString(name + "\n")
	_ = f.Close()
}
