package mlx

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Darwin branch of scripts/build-native, run on Linux with the platform
// injected (ETCHAT_BUILD_OS=Darwin) and Apple's tools stubbed on PATH.

// macStubs is a folder of stand-ins named so for the tools a Mac build
// calls: xcode-select prints $STUB_XCODE_DIR, xcrun fails when
// $STUB_NO_METAL is set, c++ prints a version, and cmake records every
// call in $STUB_LOG, runs script mode (-P) with the real cmake, and lays
// out what a configure/build/install would leave (an install with
// mlx.metallib, a built dylib).
func macStubs(t *testing.T) string {
	t.Helper()
	realCMake, err := exec.LookPath("cmake")
	if err != nil {
		t.Skip("no cmake")
	}
	bin := t.TempDir()
	stubs := map[string]string{
		"xcode-select": `[ "$1" = -p ] && echo "${STUB_XCODE_DIR:-/Applications/Xcode.app/Contents/Developer}"`,
		"xcrun":        `[ -z "${STUB_NO_METAL:-}" ] || { echo "xcrun: error: unable to find utility \"metal\"" >&2; exit 1; }; echo /Applications/Xcode.app/usr/bin/metal`,
		"c++":          `echo "Apple clang version 17.0.0 (stub)"`,
		"ninja":        `exit 0`,
		"cmake": `echo "cmake $*" >> "$STUB_LOG"
case " $* " in
  *" -P "*) exec ` + realCMake + ` "$@" ;;
  *" --install "*) p=$(sed -n 's/.*-DCMAKE_INSTALL_PREFIX=\([^ ]*\).*/\1/p' "$STUB_LOG" | tail -n1)
    mkdir -p "$p/lib" && echo metallib > "$p/lib/mlx.metallib" ;;
  *" --build "*) b=$2; case $b in */build) ;; *) touch "$b/libetchat_runner.dylib" ;; esac ;;
  *" -B "*) b=$(echo " $* " | sed 's/.* -B \([^ ]*\) .*/\1/'); mkdir -p "$b" ;;
esac`,
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/usr/bin/env bash\n# stand-in for "+name+" (test)\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func macEnv(t *testing.T, bin string, extra ...string) []string {
	return append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "ETCHAT_BUILD_OS=Darwin", "JOBS=1",
		"STUB_LOG=" + filepath.Join(t.TempDir(), "cmake.log"), "CXX="}, extra...)
}

func logOf(env []string) string {
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "STUB_LOG="); ok {
			b, _ := os.ReadFile(p)
			return string(b)
		}
	}
	return ""
}

// Each missing Mac tool stops the build before anything starts, with one
// message saying what to install.
func TestBuildNativeMacToolChecks(t *testing.T) {
	bin := macStubs(t)
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"STUB_XCODE_DIR=/Library/Developer/CommandLineTools"}, "is the Command Line Tools (/Library/Developer/CommandLineTools), which have no metal compiler: install Xcode"},
		{[]string{"STUB_NO_METAL=1"}, "xcodebuild -downloadComponent MetalToolchain"},
	} {
		env := macEnv(t, bin, c.env...)
		_, errs, ok := script(t, env, "--cache", t.TempDir(), "--out", t.TempDir())
		if ok || !strings.Contains(errs, c.want) {
			t.Errorf("%v: ok=%v, stderr %q; want %q", c.env, ok, errs, c.want)
		}
		if log := logOf(env); log != "" {
			t.Errorf("%v: cmake ran before the checks failed:\n%s", c.env, log)
		}
	}
	_, errs, ok := script(t, macEnv(t, bin), "--cuda")
	if ok || !strings.Contains(errs, "on macOS MLX runs on Metal") {
		t.Errorf("--cuda on a Mac: %v %s", ok, errs)
	}
}

// A Mac build from the pinned archives, no --executorch: the same explicit
// configure as Linux with Metal on, MLX's CPU backend off, deployment
// target 14.0, nothing fetched (metal-cpp from --metal-cpp), and the dylib
// with mlx.metallib and its stamp beside it; the install carries the
// patch marker --prefix-path checks.
func TestBuildNativeMacBuild(t *testing.T) {
	src := nativeSrc(t)
	bin := macStubs(t)
	mcpp := t.TempDir()
	write(t, filepath.Join(mcpp, "Metal", "Metal.hpp"), "// stand-in\n")
	cache, out := t.TempDir(), t.TempDir()
	env := macEnv(t, bin, "ETCHAT_NATIVE_SRC="+src)
	stdout, errs, ok := script(t, env, "--metal-cpp", mcpp, "--cache", cache, "--out", out)
	if !ok {
		t.Fatalf("Darwin build: %s\n%s", errs, logOf(env))
	}
	if got := lastLine(stdout); got != filepath.Join(out, "libetchat_runner.dylib") {
		t.Errorf("printed %q", got)
	}
	log := logOf(env)
	configure := ""
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "-DEXECUTORCH_BUILD_MLX=ON") {
			configure = l
		}
	}
	for _, want := range []string{"-DEXECUTORCH_MLX_BUILD_METAL=ON", "-DEXECUTORCH_MLX_BUILD_CPU=OFF", "-DCMAKE_OSX_DEPLOYMENT_TARGET=14.0",
		"-DFETCHCONTENT_FULLY_DISCONNECTED=ON", "-DFETCHCONTENT_SOURCE_DIR_METAL_CPP=" + mcpp, "-DFETCHCONTENT_SOURCE_DIR_FMT=",
		"-DFETCHCONTENT_SOURCE_DIR_JSON=", "-DEXECUTORCH_BUILD_EXTENSION_LLM_RUNNER=OFF", "-DEXECUTORCH_BUILD_KERNELS_OPTIMIZED=OFF"} {
		if !strings.Contains(configure, want) {
			t.Errorf("the configure lacks %s:\n%s", want, configure)
		}
	}
	if strings.Contains(log, "--preset") {
		t.Errorf("the mlx-release preset is still used:\n%s", log)
	}
	if !strings.Contains(log, "-DETCHAT_MLX_DEVICE=metal") || !strings.Contains(log, "-DETCHAT_BUILD_STAMP=") {
		t.Errorf("libetchat_runner's configure lacks the device or the stamp:\n%s", log)
	}
	stamp, err := os.ReadFile(filepath.Join(out, "mlx.metallib.stamp"))
	if err != nil || len(strings.TrimSpace(string(stamp))) != 16 {
		t.Errorf("mlx.metallib.stamp beside the dylib: %q, %v", stamp, err)
	}
	if !strings.Contains(log, "-DETCHAT_BUILD_STAMP="+strings.TrimSpace(string(stamp))) {
		t.Errorf("the dylib is not stamped with the metallib's stamp %s", stamp)
	}
	if _, err := os.Stat(filepath.Join(out, "mlx.metallib")); err != nil {
		t.Error(err)
	}
	marks, _ := filepath.Glob(filepath.Join(cache, "metal-*", "install", "etchat-patch.sha256"))
	if len(marks) != 1 {
		t.Fatalf("patch markers %v", marks)
	}

	// That install through --prefix-path is accepted; one without the
	// marker (built without our patch) is refused before anything builds.
	install := filepath.Dir(marks[0])
	et := filepath.Join(filepath.Dir(install), "src", "executorch")
	if _, errs, ok := script(t, env, "--prefix-path", install, "--executorch", et, "--metal-cpp", mcpp, "--out", t.TempDir()); !ok {
		t.Errorf("--prefix-path of a marked install: %s", errs)
	}
	if err := os.Remove(marks[0]); err != nil {
		t.Fatal(err)
	}
	_, errs, ok = script(t, env, "--prefix-path", install, "--executorch", et, "--metal-cpp", mcpp, "--out", t.TempDir())
	if ok || !strings.Contains(errs, "without etchat's patch") {
		t.Errorf("--prefix-path of an install without the marker: ok=%v %s", ok, errs)
	}
}

// A checkout's commit is printed (a warning unless it is the pin), the
// patch applies with no fuzz, "already applied" is told from "does not
// apply", and unpopulated submodules stop the build before the copy.
func TestBuildNativeChecksTheCheckout(t *testing.T) {
	src := nativeSrc(t)
	et, _ := userCheckout(t, src)
	env := []string{"ETCHAT_NATIVE_SRC=" + src}
	_, errs, ok := script(t, env, "--prepare-only", "--executorch", et, "--cache", t.TempDir())
	if !ok || !strings.Contains(errs, "warning: etchat is built and tested against ExecuTorch cff6f4dd") ||
		!strings.Contains(errs, "cache-api=builder-registry") {
		t.Errorf("first prepare: ok=%v\n%s", ok, errs)
	}
	patchFile, _ := filepath.Abs(filepath.Join("..", "native", "patches", "executorch-cff6f4dd.patch"))
	run(t, et, "sh", "-c", "patch -p1 -F0 --quiet < '"+patchFile+"'")
	_, errs, ok = script(t, env, "--prepare-only", "--executorch", et, "--cache", t.TempDir())
	if !ok || !strings.Contains(errs, "is already applied") {
		t.Errorf("an already patched checkout: ok=%v\n%s", ok, errs)
	}
	// A hunk's context changed: no fuzz, so it does not apply.
	backend := filepath.Join(et, "backends", "mlx", "runtime", "MLXBackend.cpp")
	run(t, et, "sh", "-c", "patch -p1 -R -F0 --quiet < '"+patchFile+"'")
	b, err := os.ReadFile(backend)
	if err != nil {
		t.Fatal(err)
	}
	write(t, backend, strings.Replace(string(b), "~MLXHandle() = default;", "~MLXHandle() {}", 1))
	_, errs, ok = script(t, env, "--prepare-only", "--executorch", et, "--cache", t.TempDir())
	if ok || !strings.Contains(errs, "does not apply to this ExecuTorch") {
		t.Errorf("a changed context: ok=%v\n%s", ok, errs)
	}
	if err := os.RemoveAll(filepath.Join(et, "third-party", "flatcc")); err != nil {
		t.Fatal(err)
	}
	_, errs, ok = script(t, env, "--print-key", "--executorch", et)
	if ok || !strings.Contains(errs, "submodules not populated: third-party/flatcc") {
		t.Errorf("an unpopulated submodule: ok=%v\n%s", ok, errs)
	}
}

// TestCheckMacMatchesTheDocs: docs/native-engine.md's "Not verified on a
// Mac" list is exactly scripts/check-mac's steps, in order, and the
// Mac-only scripts parse (bash -n): a step added to one and not the other,
// or a claim the script does not check, fails here.
func TestCheckMacMatchesTheDocs(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "check-mac"))
	if err != nil {
		t.Fatal(err)
	}
	var steps, run []string
	header := regexp.MustCompile(`^#\s+\d+ ([a-z-]+)\s`)
	call := regexp.MustCompile(`(?:^|[;{&]\s*|then\s+)step ([a-z-]+) `)
	for _, l := range strings.Split(string(script), "\n") {
		if m := header.FindStringSubmatch(l); m != nil {
			steps = append(steps, m[1])
		} else if m := call.FindStringSubmatch(strings.TrimSpace(l)); m != nil && !strings.HasPrefix(l, "#") {
			run = append(run, m[1])
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "native-engine.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)[strings.Index(string(doc), "### Not verified on a Mac"):]
	if i := strings.Index(sec[4:], "\n#"); i >= 0 {
		sec = sec[:i+4]
	}
	var listed []string
	for _, l := range strings.Split(sec, "\n") {
		if rest, ok := strings.CutPrefix(l, "- **"); ok {
			listed = append(listed, rest[:strings.Index(rest, "**")])
		}
	}
	if len(steps) < 10 || !slices.Equal(steps, listed) {
		t.Errorf("check-mac's steps %v, the docs' list %v", steps, listed)
	}
	if !slices.Equal(steps, run) {
		t.Errorf("check-mac's header names %v, it runs %v", steps, run)
	}
	for _, s := range []string{"check-mac", "package-mac", "build-native", "setup"} {
		if b, err := exec.Command("bash", "-n", filepath.Join("..", "..", "scripts", s)).CombinedOutput(); err != nil {
			t.Errorf("bash -n scripts/%s: %v\n%s", s, err, b)
		}
	}
}
