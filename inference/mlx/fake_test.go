//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
)

// The fake runners are compiled once per test binary into a private temp
// directory (a loaded library must stay on disk while the process runs).
var (
	fakeMu   sync.Mutex
	fakeDir  string
	fakeLibs = map[string]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// compileC builds testdata/src into a shared library named name with the
// system C compiler, or skips the test when there is none.
func compileC(t testing.TB, name, src string, flags ...string) string {
	t.Helper()
	args := append([]string{filepath.Join("testdata", src)}, flags...)
	return compile(t, "cc", name, append(args, "-lpthread")...)
}

// compile runs compiler (cc or c++) to build a shared library named name
// in the test binary's temp dir, once per name.
func compile(t testing.TB, compiler, name string, args ...string) string {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("fake runner tests need linux or darwin, not %s", runtime.GOOS)
	}
	cc, err := exec.LookPath(compiler)
	if err != nil {
		t.Skipf("no %s on PATH: skipping the tests that need a fake runner library", compiler)
	}
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if p, ok := fakeLibs[name]; ok {
		return p
	}
	if fakeDir == "" {
		if fakeDir, err = os.MkdirTemp("", "etchat-mlx-test-"); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(fakeDir, name)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"-shared", "-fPIC", "-O0", "-Wall", "-Werror", "-o", out}, args...)
	if b, err := exec.Command(cc, all...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", compiler, all, err, b)
	}
	fakeLibs[name] = out
	return out
}

// fakeLib is the C fake runner built with our ABI version.
func fakeLib(t testing.TB) string {
	return compileC(t, "c/"+LibraryName(runtime.GOOS), "fake_runner.c")
}

// abiLayerLib is the real C ABI layer (inference/native/etchat_runner.cpp)
// over the fake backend (testdata/fake_backend.cpp).
func abiLayerLib(t testing.TB) string {
	return compile(t, "c++", "abi/"+LibraryName(runtime.GOOS), "-std=c++17", "-fvisibility=hidden",
		"-I", filepath.Join("..", "native"),
		filepath.Join("..", "native", "etchat_runner.cpp"), filepath.Join("testdata", "fake_backend.cpp"), "-lpthread")
}

// abiLayerLibWith is the ABI layer over the fake backend built with extra
// compiler flags (e.g. -DFAKE_DEVICE_ERROR), as a library of its own.
func abiLayerLibWith(t testing.TB, variant string, flags ...string) string {
	args := append([]string{"-std=c++17", "-fvisibility=hidden", "-I", filepath.Join("..", "native")}, flags...)
	args = append(args, filepath.Join("..", "native", "etchat_runner.cpp"), filepath.Join("testdata", "fake_backend.cpp"), "-lpthread")
	return compile(t, "c++", "abi-"+variant+"/"+LibraryName(runtime.GOOS), args...)
}

// eachLib runs f against the C fake and against the real ABI layer over
// the fake backend: both must honour the same contract.
func eachLib(t *testing.T, f func(t *testing.T, lib string)) {
	for name, build := range map[string]func(testing.TB) string{"cfake": fakeLib, "abilayer": abiLayerLib} {
		t.Run(name, func(t *testing.T) { f(t, build(t)) })
	}
}

// fakeExtras binds the fakes' test-only functions.
type fakeExtras struct {
	lastConfig func(cfg *CConfig, layers *CLayer, capacity int32, n *int32) int32
	live       func() int32
	// fake_backend.cpp only (the ABI layer's library):
	threads func(callerIsOne *int32) int32
	takeLog func(buf *byte, capacity int32) int32
}

// log takes the fake backend's call log, one call per line.
func (x *fakeExtras) log() []string {
	buf := make([]byte, 1<<16)
	n := x.takeLog(&buf[0], int32(len(buf)))
	if int(n) >= len(buf) {
		panic("fake call log overflow")
	}
	return strings.Fields(strings.ReplaceAll(string(buf[:n]), " ", "_"))
}

func loadExtras(t *testing.T, path string) *fakeExtras {
	t.Helper()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var x fakeExtras
	purego.RegisterLibFunc(&x.lastConfig, h, "etchat_fake_last_config")
	purego.RegisterLibFunc(&x.live, h, "etchat_fake_live")
	if _, err := purego.Dlsym(h, "etchat_fake_threads"); err == nil {
		purego.RegisterLibFunc(&x.threads, h, "etchat_fake_threads")
		purego.RegisterLibFunc(&x.takeLog, h, "etchat_fake_take_log")
	}
	return &x
}

// testCaches is the off-graph layout (kv_heads/head_dim per cache) of
// testConfig, which fake programs publish unless the spec says otherwise.
const testCaches = "caches=2/8,1/16,3/4"

// writeProgram writes a fake .pte with the given spec line; an off-graph
// program (not "ingraph") publishes testConfig's layout unless the spec
// names its own caches=.
func writeProgram(t *testing.T, spec string) string {
	t.Helper()
	if !strings.Contains(spec, "ingraph") && !strings.Contains(spec, "caches=") {
		spec += " " + testCaches
	}
	p := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(p, []byte("ETCHAT-FAKE "+spec+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
