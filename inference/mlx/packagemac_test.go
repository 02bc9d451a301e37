//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// scripts/package-mac run on Linux with fyne, codesign, plutil, ditto and
// xcrun stubbed (stand-ins named so, recording their arguments): the tree
// it lays out, the signing order, notarization only with a profile; and,
// with the platform injected in the library search, the app it makes finds
// the dylib and the metallib with no environment variables set.
func TestPackageMac(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "tools.log")
	stubs := map[string]string{
		// fyne package leaves etchat.app in the folder it runs in.
		"fyne":     `echo "fyne $*" >> "$STUB_LOG"; mkdir -p etchat.app/Contents/MacOS && printf '#!/bin/sh\n' > etchat.app/Contents/MacOS/etchat && chmod +x etchat.app/Contents/MacOS/etchat && echo '<plist/>' > etchat.app/Contents/Info.plist`,
		"codesign": `echo "codesign $*" >> "$STUB_LOG"`,
		"plutil":   `echo "plutil $*" >> "$STUB_LOG"`,
		"ditto":    `echo "ditto $*" >> "$STUB_LOG"; touch "${@: -1}"`,
		"xcrun":    `echo "xcrun $*" >> "$STUB_LOG"`,
	}
	for name, body := range stubs {
		write(t, filepath.Join(bin, name), "#!/usr/bin/env bash\n# stand-in for "+name+" (test)\n"+body+"\n")
		if err := os.Chmod(filepath.Join(bin, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	libDir := t.TempDir()
	lib := compileC(t, "stamped/"+LibraryName(runtime.GOOS), "fake_runner.c", `-DFAKE_STAMP="0123456789abcdef"`)
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(libDir, "libetchat_runner.dylib"), string(b))
	write(t, filepath.Join(libDir, "mlx.metallib"), "metallib")
	write(t, filepath.Join(libDir, "mlx.metallib.stamp"), "0123456789abcdef\n")

	pkg := func(args ...string) (string, string, error) {
		if err := os.WriteFile(log, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, append([]string{filepath.Join("..", "..", "scripts", "package-mac"), "--lib", libDir}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STUB_LOG="+log)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		l, _ := os.ReadFile(log)
		return strings.TrimSpace(o.String()), string(l), err
	}

	out := t.TempDir()
	app, calls, err := pkg("--out", out)
	if err != nil {
		t.Fatalf("package-mac: %v\n%s", err, calls)
	}
	if app != filepath.Join(out, "etchat.app") {
		t.Errorf("printed %q", app)
	}
	for _, f := range []string{"Contents/MacOS/etchat", "Contents/Frameworks/libetchat_runner.dylib",
		"Contents/Resources/mlx.metallib", "Contents/Resources/mlx.metallib.stamp"} {
		if _, err := os.Stat(filepath.Join(app, f)); err != nil {
			t.Errorf("the bundle lacks %s", f)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(app, "Contents", "Frameworks", "*.metallib")); len(m) != 0 {
		t.Errorf("a metallib in Frameworks: %v", m)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "etchat.app")); err == nil {
		t.Error("fyne's etchat.app was left in the repository root")
	}
	want := []string{
		"fyne package --os darwin",
		"plutil -replace LSMinimumSystemVersion -string 14.0 " + filepath.Join(app, "Contents", "Info.plist"),
		"codesign --force --sign - " + filepath.Join(app, "Contents", "Frameworks", "libetchat_runner.dylib"),
		"codesign --force --sign - --options runtime --entitlements " + filepath.Join(out, "etchat.entitlements") + " " + app,
		"codesign --verify --strict --verbose=2 " + app,
	}
	assertOrder(t, calls, want)
	if strings.Contains(calls, "notarytool") {
		t.Errorf("notarized without a profile:\n%s", calls)
	}
	ent, _ := os.ReadFile(filepath.Join(out, "etchat.entitlements"))
	if !bytes.Contains(ent, []byte("com.apple.security.cs.disable-library-validation")) {
		t.Errorf("entitlements %s", ent)
	}

	// The app finds both files with no variables set, as on a Mac.
	none := func(string) string { return "" }
	e, err := New(Options{Getenv: none, Executable: filepath.Join(app, "Contents", "MacOS", "etchat"), GOOS: "darwin"})
	if err != nil {
		t.Fatalf("the bundle's engine: %v", err)
	}
	if got := e.(*Engine).LibraryPath(); got != filepath.Join(app, "Contents", "Frameworks", "libetchat_runner.dylib") {
		t.Errorf("library %s, want the bundle's Frameworks", got)
	}
	h, err := purego.Dlopen(e.(*Engine).LibraryPath(), purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var metallib func(buf *byte, capacity int32) int32
	purego.RegisterLibFunc(&metallib, h, "etchat_fake_metallib")
	buf := make([]byte, 4096)
	if got := string(buf[:metallib(&buf[0], int32(len(buf)))]); got != filepath.Join(app, "Contents", "Resources", "mlx.metallib") {
		t.Errorf("MLX was given the metallib %q, want the bundle's Resources", got)
	}

	// Developer ID: hardened runtime, timestamp, no entitlement; notarized
	// and stapled only with a profile.
	out2 := t.TempDir()
	app2, calls, err := pkg("--out", out2, "--identity", "Developer ID Application: X (TEAM)", "--keychain-profile", "etchat")
	if err != nil {
		t.Fatalf("package-mac --identity: %v\n%s", err, calls)
	}
	assertOrder(t, calls, []string{
		"codesign --force --timestamp --options runtime --sign Developer ID Application: X (TEAM) " + filepath.Join(app2, "Contents", "Frameworks", "libetchat_runner.dylib"),
		"codesign --force --timestamp --options runtime --sign Developer ID Application: X (TEAM) " + app2,
		"codesign --verify --strict",
		"ditto -c -k --keepParent " + app2,
		"xcrun notarytool submit " + filepath.Join(out2, "etchat.zip") + " --keychain-profile etchat --wait",
		"xcrun stapler staple " + app2,
	})
	if strings.Contains(calls, "--entitlements") {
		t.Errorf("a Developer ID app signed with the ad-hoc entitlement:\n%s", calls)
	}
	if _, _, err := pkg("--out", t.TempDir(), "--keychain-profile", "etchat"); err == nil {
		t.Error("notarizing an ad-hoc signature was not refused")
	}
}

// assertOrder checks that each of want starts a line of calls, in order.
func assertOrder(t *testing.T, calls string, want []string) {
	t.Helper()
	lines := strings.Split(calls, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && !strings.HasPrefix(lines[i], w) {
			i++
		}
		if i == len(lines) {
			t.Errorf("no call %q in order in:\n%s", w, calls)
			return
		}
		i++
	}
}
