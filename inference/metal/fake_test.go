package metal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
func compileC(t *testing.T, name, src string, flags ...string) string {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("fake runner tests need linux or darwin, not %s", runtime.GOOS)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) on PATH: skipping the tests that need the fake runner library")
	}
	fakeMu.Lock()
	defer fakeMu.Unlock()
	key := name + fmt.Sprint(flags)
	if p, ok := fakeLibs[key]; ok {
		return p
	}
	if fakeDir == "" {
		if fakeDir, err = os.MkdirTemp("", "etchat-metal-test-"); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(fakeDir, name)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", out, filepath.Join("testdata", src)}, flags...)
	args = append(args, "-lpthread")
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc %v: %v\n%s", args, err, b)
	}
	fakeLibs[key] = out
	return out
}

// fakeLib is the fake runner built with our ABI version.
func fakeLib(t *testing.T) string {
	return compileC(t, LibraryName(runtime.GOOS), "fake_runner.c")
}

// fakeExtras binds the fake's test-only functions.
type fakeExtras struct {
	sessionConfig func(h sessionHandle, cfg *CConfig, layers *CLayer, capacity int32, n *int32) int32
	live          func() int32
}

func loadExtras(t *testing.T, path string) *fakeExtras {
	t.Helper()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var x fakeExtras
	purego.RegisterLibFunc(&x.sessionConfig, h, "etchat_fake_session_config")
	purego.RegisterLibFunc(&x.live, h, "etchat_fake_live")
	return &x
}

// writeProgram writes a fake .pte with the given spec line.
func writeProgram(t *testing.T, spec string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(p, []byte("ETCHAT-FAKE "+spec+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
