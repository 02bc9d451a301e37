package mlx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of scripts/build-native's steps that need no build: the copy and
// patch of a user's checkout (--prepare-only), the cache key (--print-key)
// and the checks of the pinned archives.

var buildScript = filepath.Join("..", "..", "scripts", "build-native")

// nativeSrc is the folder of pinned archives, or skips (fails under CI).
func nativeSrc(t *testing.T) string {
	t.Helper()
	d := os.Getenv("ETCHAT_NATIVE_SRC")
	if d == "" {
		d = filepath.Join("..", "..", "..", "shared", "native-src")
	}
	if _, err := os.Stat(filepath.Join(d, "executorch-cff6f4dd.tar.xz")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pinned sources at %s", d)
		}
		t.Skipf("no pinned sources at %s (set ETCHAT_NATIVE_SRC)", d)
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// script runs build-native with extra environment; it returns stdout and
// stderr, and whether it succeeded.
func script(t *testing.T, env []string, args ...string) (string, string, bool) {
	t.Helper()
	for _, tool := range []string{"bash", "cmake", "ninja", "patch", "xz", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH", tool)
		}
	}
	cmd := exec.Command("bash", append([]string{buildScript}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err == nil
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, b)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// userCheckout lays out an ExecuTorch checkout the way `git clone
// --recursive` leaves it: the pinned sources, the tokenizers submodule
// populated (the real tokenizers at ETCHAT_TOKENIZERS_REV, default 7b26e65,
// from the git folder ETCHAT_TOKENIZERS_GIT, e.g. a mirror of
// github.com/alan-zero/tokenizers: the commit ExecuTorch cff6f4dd records,
// 1d7ca636, is in no reachable mirror; else testdata's stand-in), .git folders
// and files, and the mlx-release preset's stale build folder.
func userCheckout(t *testing.T, src string) (dir, tokCMake string) {
	t.Helper()
	root := t.TempDir()
	run(t, root, "tar", "-xJf", filepath.Join(src, "executorch-cff6f4dd.tar.xz"))
	dir = filepath.Join(root, "executorch")
	tok := filepath.Join(dir, "extension", "llm", "tokenizers")
	if g := os.Getenv("ETCHAT_TOKENIZERS_GIT"); g != "" {
		rev := os.Getenv("ETCHAT_TOKENIZERS_REV")
		if rev == "" {
			rev = "7b26e65"
		}
		if err := os.MkdirAll(tok, 0o755); err != nil {
			t.Fatal(err)
		}
		// Its test/ folder is left out: the mirror lacks some of its large
		// blobs, and no build reads it.
		run(t, tok, "sh", "-c", "git --git-dir='"+g+"' archive "+rev+" $(git --git-dir='"+g+"' ls-tree --name-only "+rev+" | grep -vx test) | tar -xf -")
		for _, sub := range []string{"abseil-cpp", "re2", "sentencepiece", "pcre2", "json"} {
			write(t, filepath.Join(tok, "third-party", sub, ".git"), "gitdir: ../../../../../../.git/modules/extension/llm/tokenizers/modules/third-party/"+sub+"\n")
		}
	} else {
		b, err := os.ReadFile(filepath.Join("testdata", "tokenizers-standin", "CMakeLists.txt"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(tok, "CMakeLists.txt"), string(b))
	}
	write(t, filepath.Join(tok, ".git"), "gitdir: ../../../.git/modules/extension/llm/tokenizers\n")
	run(t, filepath.Join(dir, "backends", "mlx", "third-party"), "tar", "-xJf", filepath.Join(src, "mlx-7a1d4f5.tar.xz"))
	write(t, filepath.Join(dir, "backends", "mlx", "third-party", "mlx", ".git"), "gitdir: ../../../../.git/modules/backends/mlx/third-party/mlx\n")
	write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(dir, "cmake-out", "CMakeCache.txt"), "CMAKE_HOME_DIRECTORY:INTERNAL=/Users/someone/executorch\n")
	b, err := os.ReadFile(filepath.Join(tok, "CMakeLists.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

// A recursive checkout (tokenizers submodule populated, a stale cmake-out/)
// is copied without .git and build folders, keeps its own tokenizers, and
// takes the patch; the pinned archive, which lacks the submodule, gets the
// empty stand-in target.
func TestBuildNativeUserCheckout(t *testing.T) {
	src := nativeSrc(t)
	et, tokCMake := userCheckout(t, src)
	cache := t.TempDir()
	out, errs, ok := script(t, []string{"ETCHAT_NATIVE_SRC=" + src}, "--prepare-only", "--executorch", et, "--cache", cache)
	if !ok {
		t.Fatalf("--prepare-only --executorch: %s", errs)
	}
	copyDir := strings.TrimSpace(lastLine(out))
	if !strings.HasPrefix(copyDir, cache) {
		t.Fatalf("copy at %q, not under the cache %s", copyDir, cache)
	}
	err := filepath.WalkDir(copyDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			t.Errorf("copied %s", p)
		}
		if rel, _ := filepath.Rel(copyDir, p); strings.HasPrefix(rel, "cmake-out") {
			t.Errorf("copied the build folder: %s", p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(copyDir, "extension", "llm", "tokenizers", "CMakeLists.txt")); string(got) != tokCMake {
		t.Errorf("the checkout's tokenizers/CMakeLists.txt was replaced:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(copyDir, "backends", "mlx", "runtime", "MLXBackend.cpp")); !bytes.Contains(b, []byte("default_stream(")) {
		t.Error("the patch was not applied to the copy")
	}

	out, errs, ok = script(t, []string{"ETCHAT_NATIVE_SRC=" + src}, "--prepare-only", "--cache", t.TempDir())
	if !ok {
		t.Fatalf("--prepare-only from the archives: %s", errs)
	}
	stub, _ := os.ReadFile(filepath.Join(strings.TrimSpace(lastLine(out)), "extension", "llm", "tokenizers", "CMakeLists.txt"))
	if !bytes.Contains(stub, []byte("add_library(tokenizers INTERFACE)")) || !bytes.Contains(stub, []byte("etchat:")) {
		t.Errorf("the archive's missing submodule got no stand-in:\n%s", stub)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func key(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errs, ok := script(t, env, append([]string{"--print-key"}, args...)...)
	if !ok {
		t.Fatalf("--print-key %v: %s", args, errs)
	}
	return lastLine(out)
}

// Everything that changes what is built is in the cache key: the CUDA
// architectures and nvcc of a --cuda build, an --mlx checkout without
// --executorch, and the contents (not only the names) of a checkout's
// changes.
func TestBuildNativeCacheKey(t *testing.T) {
	src := nativeSrc(t)
	env := []string{"ETCHAT_NATIVE_SRC=" + src}
	bin := t.TempDir()
	nvcc := func(release string) string {
		p := filepath.Join(bin, "nvcc-"+release)
		write(t, p, "#!/bin/sh\necho 'Cuda compilation tools, release "+release+"'\n")
		os.Chmod(p, 0o755)
		return "CUDACXX=" + p
	}
	a := key(t, append(env, "MLX_CUDA_ARCHITECTURES=90a", nvcc("12.4")), "--cuda")
	if b := key(t, append(env, "MLX_CUDA_ARCHITECTURES=80", nvcc("12.4")), "--cuda"); a == b {
		t.Error("MLX_CUDA_ARCHITECTURES is not in the key")
	}
	if b := key(t, append(env, "MLX_CUDA_ARCHITECTURES=90a", nvcc("12.6")), "--cuda"); a == b {
		t.Error("the nvcc version is not in the key")
	}

	plain := key(t, env)
	mlxDir := t.TempDir()
	write(t, filepath.Join(mlxDir, "mlx", "ops.cpp"), "one\n")
	k1 := key(t, env, "--mlx", mlxDir)
	write(t, filepath.Join(mlxDir, "mlx", "ops.cpp"), "two\n")
	k2 := key(t, env, "--mlx", mlxDir)
	if k1 == plain || k1 == k2 {
		t.Errorf("--mlx alone: keys %s (plain %s), after a content change %s", k1, plain, k2)
	}

	// A git checkout whose change keeps its name but not its contents.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	write(t, filepath.Join(repo, "mlx", "ops.cpp"), "base\n")
	run(t, repo, "git", "init", "-q")
	run(t, repo, "git", "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
	run(t, repo, "git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
	write(t, filepath.Join(repo, "mlx", "ops.cpp"), "change one\n")
	g1 := key(t, env, "--mlx", repo)
	write(t, filepath.Join(repo, "mlx", "ops.cpp"), "change two\n")
	if g2 := key(t, env, "--mlx", repo); g1 == g2 {
		t.Error("a modified file's contents are not in the key (only its name)")
	}
}

// fakeSrc is a folder of archives: the pinned ones, with replacements, and
// a MANIFEST.md that agrees with the replacements (as a folder updated
// beside the archives would).
func fakeSrc(t *testing.T, src string, replace map[string][]byte) (dir string, pins string) {
	t.Helper()
	dir = t.TempDir()
	manifest, err := os.ReadFile(filepath.Join(src, "MANIFEST.md"))
	if err != nil {
		t.Fatal(err)
	}
	pinText, err := os.ReadFile(filepath.Join("..", "native", "sources.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	m, p := string(manifest), string(pinText)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tar.xz") {
			continue
		}
		if b, ok := replace[e.Name()]; ok {
			write(t, filepath.Join(dir, e.Name()), string(b))
			old, _ := os.ReadFile(filepath.Join(src, e.Name()))
			o, n := sha256.Sum256(old), sha256.Sum256(b)
			m = strings.ReplaceAll(m, hex.EncodeToString(o[:]), hex.EncodeToString(n[:]))
			p = strings.ReplaceAll(p, hex.EncodeToString(o[:]), hex.EncodeToString(n[:]))
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "MANIFEST.md"), m)
	pins = filepath.Join(t.TempDir(), "pins.sha256")
	write(t, pins, p)
	return dir, pins
}

func xzTar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	d := t.TempDir()
	for name, text := range files {
		write(t, filepath.Join(d, name), text)
	}
	out := filepath.Join(t.TempDir(), "a.tar.xz")
	run(t, d, "tar", "-cJf", out, ".")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The archives are checked against the sha256 this repository pins, not
// only the MANIFEST.md beside them; and a json archive whose json.hpp
// includes other nlohmann headers (Debian's split one, which builds only
// where nlohmann-json3-dev is installed) is refused.
func TestBuildNativeChecksArchives(t *testing.T) {
	src := nativeSrc(t)
	if _, errs, ok := script(t, []string{"ETCHAT_NATIVE_SRC=" + src}, "--print-key"); !ok {
		t.Fatalf("the pinned archives are refused: %s", errs)
	}
	other, _ := fakeSrc(t, src, map[string][]byte{"fmt-12.1.0.tar.xz": xzTar(t, map[string]string{"fmt/README": "another fmt\n"})})
	if _, errs, ok := script(t, []string{"ETCHAT_NATIVE_SRC=" + other}, "--print-key"); ok || !strings.Contains(errs, "sources.sha256 pins") {
		t.Errorf("an archive that differs from the pin (MANIFEST.md updated with it) was not refused: %q", errs)
	}

	split := xzTar(t, map[string]string{"json/single_include/nlohmann/json.hpp": "#pragma once\n// #include <nlohmann/detail/abi_macros.hpp>\n#include <nlohmann/adl_serializer.hpp>\n"})
	jsonSrc, pins := fakeSrc(t, src, map[string][]byte{"json.tar.xz": split})
	_, errs, ok := script(t, []string{"ETCHAT_NATIVE_SRC=" + jsonSrc, "ETCHAT_NATIVE_PINS=" + pins}, "--print-key")
	if ok || !strings.Contains(errs, "includes other nlohmann headers") || !strings.Contains(errs, "adl_serializer") {
		t.Errorf("a split json.hpp was not refused: %q", errs)
	}
}

// On macOS a missing tool is reported with Homebrew's name for it (the
// platform is injected: this runs anywhere).
func TestBuildNativeMacHints(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"dirname"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command(bash, buildScript)
	cmd.Env = []string{"PATH=" + bin, "ETCHAT_BUILD_OS=Darwin", "JOBS=1", "HOME=" + t.TempDir()}
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "missing cmake (macOS: brew install cmake)") {
		t.Errorf("missing cmake on macOS: %v\n%s", err, b)
	}
}

// libetchat_runner's CMake project refuses to configure without ExecuTorch's
// Utils.cmake (whose whole-archive options keep the MLX backend's
// registration: without them every load fails with "Backend MLXBackend is
// not registered"), and sets the macOS deployment target before project().
func TestRunnerCMakeProject(t *testing.T) {
	lists, err := os.ReadFile(filepath.Join("..", "native", "CMakeLists.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(lists)
	if d, p := strings.Index(s, "set(CMAKE_OSX_DEPLOYMENT_TARGET"), strings.Index(s, "\nproject("); d < 0 || p < 0 || d > p {
		t.Errorf("CMAKE_OSX_DEPLOYMENT_TARGET is set at %d, project() at %d: the target must come first", d, p)
	}
	cmake, err := exec.LookPath("cmake")
	if err != nil {
		t.Skip("no cmake")
	}
	if _, err := exec.LookPath("c++"); err != nil {
		t.Skip("no c++")
	}
	// Ninja, as scripts/build-native uses (scripts/setup installs it; a
	// machine with only what setup installs has no make).
	if _, err := exec.LookPath("ninja"); err != nil {
		t.Skip("no ninja")
	}
	cmd := exec.Command(cmake, "-G", "Ninja", "-S", filepath.Join("..", "native"), "-B", t.TempDir(), "-DEXECUTORCH_SOURCE_DIR="+t.TempDir())
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "Utils.cmake not found") {
		t.Errorf("configure without Utils.cmake: %v\n%s", err, b)
	}
}
