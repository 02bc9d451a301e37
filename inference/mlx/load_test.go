//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestMissingLibraryListsPathsTried(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "etchat")
	_, err := New(Options{Getenv: envOf(nil), Executable: exe})
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("New without a library: %v, want ErrNoLibrary", err)
	}
	msg := err.Error()
	for _, p := range Candidates(envOf(nil), exe, runtime.GOOS) {
		if !strings.Contains(msg, p) {
			t.Errorf("error does not name tried path %s:\n%s", p, msg)
		}
	}
	if !strings.Contains(msg, "ETCHAT_RUNNER") {
		t.Errorf("error does not say how to point at the library:\n%s", msg)
	}
}

func TestEnvOverride(t *testing.T) {
	lib := fakeLib(t)
	e, err := New(Options{Getenv: envOf(map[string]string{EnvLibrary: lib}), Executable: "/nonexistent/etchat"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name() != "metal" {
		t.Errorf("Name = %q", e.Name())
	}
	// A missing override is not silently replaced by the search.
	missing := filepath.Join(t.TempDir(), "nope.so")
	_, err = New(Options{Getenv: envOf(map[string]string{EnvLibrary: missing}), Executable: filepath.Dir(lib) + "/etchat"})
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing override: %v", err)
	}
}

func TestAvailable(t *testing.T) {
	lib := fakeLib(t)
	t.Setenv(EnvLibrary, lib)
	p, err := Available()
	if err != nil {
		t.Fatal(err)
	}
	if p != lib {
		t.Errorf("Available = %q, want %q", p, lib)
	}
	t.Setenv(EnvLibrary, filepath.Join(t.TempDir(), "gone.so"))
	if _, err := Available(); !errors.Is(err, ErrNoLibrary) {
		t.Errorf("Available with a missing override: %v", err)
	}
}

func TestBesideExecutable(t *testing.T) {
	lib := fakeLib(t)
	// The fake is built under its platform name; an executable in the same
	// folder finds it by the search alone.
	e, err := New(Options{Getenv: envOf(nil), Executable: filepath.Join(filepath.Dir(lib), "etchat")})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.(*Engine).LibraryPath(); got != lib {
		t.Errorf("found %s, want %s", got, lib)
	}
}

func TestWrongABIVersion(t *testing.T) {
	lib := compileC(t, "abi999/"+LibraryName(runtime.GOOS), "fake_runner.c", "-DABI=999")
	_, err := New(Options{Library: lib})
	if !errors.Is(err, ErrABIVersion) {
		t.Fatalf("wrong ABI: %v, want ErrABIVersion", err)
	}
	for _, want := range []string{lib, "ABI version 999", fmt.Sprintf("needs %d", ABIVersion)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Found by the search, the mismatch is still reported with the path.
	_, err = New(Options{Getenv: envOf(nil), Executable: filepath.Join(filepath.Dir(lib), "etchat")})
	if err == nil || !strings.Contains(err.Error(), "ABI version 999") {
		t.Errorf("searched wrong-ABI library: %v", err)
	}
}

func TestNotALibrary(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, LibraryName(runtime.GOOS))
	if err := os.WriteFile(text, []byte("this is not a shared library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Library: text})
	if err == nil || !strings.Contains(err.Error(), "cannot load runner library "+text+": it is not a shared library") {
		t.Errorf("text file: %v", err)
	}
	empty := filepath.Join(dir, "empty.so")
	os.WriteFile(empty, nil, 0o644)
	if _, err := New(Options{Library: empty}); err == nil || !strings.Contains(err.Error(), empty+": the file is empty") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := New(Options{Library: dir}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

func TestWrongArchitecture(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("patches an ELF header")
	}
	src, err := os.ReadFile(fakeLib(t))
	if err != nil {
		t.Fatal(err)
	}
	// e_machine (offset 18, little-endian): claim another CPU.
	const emX8664, emAArch64 = 62, 183
	machine := uint16(emAArch64)
	if runtime.GOARCH == "arm64" {
		machine = emX8664
	}
	b := append([]byte(nil), src...)
	b[18], b[19] = byte(machine), byte(machine>>8)
	p := filepath.Join(t.TempDir(), LibraryName(runtime.GOOS))
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Library: p})
	if err == nil || !strings.Contains(err.Error(), "cannot load runner library "+p+": it is built for ") {
		t.Errorf("foreign-architecture library: %v", err)
	}
}

func TestLibraryMissingSymbols(t *testing.T) {
	lib := compileC(t, "partial/"+LibraryName(runtime.GOOS), "partial_runner.c")
	_, err := New(Options{Library: lib})
	if err == nil || !strings.Contains(err.Error(), "lacks etchat_last_error") {
		t.Errorf("partial library: %v", err)
	}
}

// TestBindsEveryHeaderFunction keeps the binding and etchat_runner.h in step:
// every function the header declares is bound, except etchat_status_name
// (Status.String covers it).
func TestBindsEveryHeaderFunction(t *testing.T) {
	h, err := os.ReadFile(filepath.Join("..", "native", "etchat_runner.h"))
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, line := range strings.Split(string(h), "\n") {
		if !strings.HasPrefix(line, "ETCHAT_API ") {
			continue
		}
		name := line[:strings.Index(line, "(")]
		name = name[strings.LastIndexAny(name, " *")+1:]
		declared[name] = true
	}
	if len(declared) < 10 {
		t.Fatalf("parsed only %d declarations from the header", len(declared))
	}
	e, err := New(Options{Library: fakeLib(t)})
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]bool{}
	for _, n := range e.(*Engine).lib.bound {
		bound[n] = true
		if !declared[n] {
			t.Errorf("binding uses %s, which the header does not declare", n)
		}
	}
	for n := range declared {
		if !bound[n] && n != "etchat_status_name" {
			t.Errorf("header declares %s, which the binding does not bind", n)
		}
	}
}

// A library the search finds but cannot use is reported with its own
// reason (wrapped, so errors.Is still sees it), never as "not found".
func TestSearchKeepsWhyAFoundLibraryIsUnusable(t *testing.T) {
	abi := compileC(t, "abi999/"+LibraryName(runtime.GOOS), "fake_runner.c", "-DABI=999")
	_, err := New(Options{Getenv: envOf(nil), Executable: filepath.Join(filepath.Dir(abi), "etchat")})
	var se *SearchError
	if !errors.As(err, &se) {
		t.Fatalf("searched wrong-ABI library: %v, want a *SearchError", err)
	}
	if !errors.Is(err, ErrABIVersion) || errors.Is(err, ErrNoLibrary) {
		t.Errorf("searched wrong-ABI library: Is(ErrABIVersion) = %v, Is(ErrNoLibrary) = %v, want true, false",
			errors.Is(err, ErrABIVersion), errors.Is(err, ErrNoLibrary))
	}
	if r := se.Reason(); !strings.Contains(r, abi) || !strings.Contains(r, "ABI version 999") || strings.Contains(r, "\n") {
		t.Errorf("Reason %q: want one line naming %s and its ABI version", r, abi)
	}
	if !strings.HasPrefix(err.Error(), "mlx: no usable etchat runner library") {
		t.Errorf("message %q", err)
	}

	dir := t.TempDir()
	text := filepath.Join(dir, LibraryName(runtime.GOOS))
	if err := os.WriteFile(text, []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Getenv: envOf(nil), Executable: filepath.Join(dir, "etchat")})
	if !errors.As(err, &se) || errors.Is(err, ErrNoLibrary) || !strings.Contains(se.Reason(), "it is not a shared library") {
		t.Errorf("searched text file: %v", err)
	}

	// Nothing found at all: ErrNoLibrary, and no reason.
	_, err = New(Options{Getenv: envOf(nil), Executable: filepath.Join(t.TempDir(), "etchat")})
	if !errors.As(err, &se) || !errors.Is(err, ErrNoLibrary) || se.Reason() != "" {
		t.Errorf("nothing found: %v", err)
	}
}

// The search starts from the executable's real folder: a symlink to it
// (Homebrew's bin/etchat, a link into an app bundle) must not hide the
// library beside the real file.
func TestSearchResolvesExecutableSymlinks(t *testing.T) {
	lib := fakeLib(t)
	real := filepath.Join(filepath.Dir(lib), "etchat")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "etchat")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Getenv: envOf(nil), Executable: link})
	if err != nil {
		t.Fatalf("through a symlink to %s: %v", real, err)
	}
	if got := e.(*Engine).LibraryPath(); got != lib {
		t.Errorf("found %s, want %s", got, lib)
	}
}

// TestExportedSymbolsList: the exported-symbols list a Mac link uses
// (inference/native/abi_symbols.cmake, run the way CMakeLists.txt and
// scripts/check-mac run it) names exactly the functions the header
// declares, each with Mach-O's leading underscore.
func TestExportedSymbolsList(t *testing.T) {
	cmake, err := exec.LookPath("cmake")
	if err != nil {
		t.Skip("no cmake")
	}
	hdr := filepath.Join("..", "native", "etchat_runner.h")
	h, err := os.ReadFile(hdr)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(h), "\n") {
		if strings.HasPrefix(line, "ETCHAT_API ") {
			name := line[:strings.Index(line, "(")]
			want = append(want, "_"+name[strings.LastIndexAny(name, " *")+1:])
		}
	}
	out := filepath.Join(t.TempDir(), "exported_symbols.txt")
	cmd := exec.Command(cmake, "-DETCHAT_ABI_HEADER="+hdr, "-DETCHAT_ABI_OUT="+out, "-P", filepath.Join("..", "native", "abi_symbols.cmake"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(b))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) < 20 {
		t.Errorf("exported symbols\n%v\nwant the header's\n%v", got, want)
	}
}
