//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"context"
	"slices"
	"strings"
	"testing"

	"etchat/inference/kvcache"
)

// TestSessionReuse: conversations on one model and cache config share one
// loaded program and session (each new session is a loaded method with its
// own MLX stream; on Metal a command queue MLX never frees), cleared
// between them; switching model or config closes the parked session before
// anything is opened.
func TestSessionReuse(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	ctx := context.Background()
	a := writeProgram(t, "vocab=16")
	b := writeProgram(t, "vocab=16")
	other := testConfig()
	other.Capacity = 48
	x.log()

	type open struct {
		path string
		cfg  *kvcache.Config
	}
	plan := []open{{a, testConfig()}, {a, testConfig()}, {a, testConfig()}, {b, testConfig()}, {b, testConfig()},
		{a, testConfig()}, {a, other}, {a, other}, {a, testConfig()}}
	for i, o := range plan {
		s, err := e.Open(ctx, o.path, o.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.Len() != 0 {
			t.Fatalf("open %d: a reused session holds %d tokens", i, s.Len())
		}
		if _, err := s.Forward(ctx, seq(0, 3), seq(0, 3)); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	log := x.log()
	var opens []string
	for i, line := range log {
		if strings.HasPrefix(line, "program_open_") {
			opens = append(opens, line)
			// Everything opened before is closed by now: nothing else is live.
			if open := liveSessions(log[:i]); open != 0 {
				t.Errorf("call %d (%s): %d sessions still open, want the old one closed first\n%v", i, line, open, log)
			}
		}
	}
	// a, b, a, a(other), a: one program load per run of one model+config.
	if len(opens) != 5 {
		t.Errorf("%d program loads for 5 model/config switches: %v", len(opens), log)
	}
	// Exactly "clear" (the session's cache), not "clear_cache" (MLX's).
	if n := len(slices.DeleteFunc(slices.Clone(log), func(l string) bool { return l != "clear" })); n < 4 {
		t.Errorf("%d clears for 4 reuses: %v", n, log)
	}
	if e.Idle() != 1 {
		t.Errorf("%d sessions parked, want 1", e.Idle())
	}
	// In-graph sessions cannot be cleared: closed, never parked.
	s, err := e.Open(ctx, writeProgram(t, "vocab=8 ingraph"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if e.Idle() != 0 {
		t.Errorf("after an in-graph session: %d parked, want 0 (switching closed the other, in-graph is not parked)", e.Idle())
	}
}

// liveSessions counts sessions opened and not yet closed in a call log.
func liveSessions(log []string) int {
	n := 0
	for _, l := range log {
		switch {
		case strings.HasPrefix(l, "session_open_"):
			n++
		case strings.HasPrefix(l, "session_close_"):
			n--
		}
	}
	return n
}

func TestMetallibCandidates(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		name, lib, goos string
		env             map[string]string
		want            []string
	}{
		{"app bundle", "/Applications/etchat.app/Contents/Frameworks/libetchat_runner.dylib", "darwin", nil, []string{
			"/Applications/etchat.app/Contents/Resources/mlx.metallib",
			"/Applications/etchat.app/Contents/Frameworks/mlx.metallib",
			"/Applications/etchat.app/Contents/Frameworks/Resources/mlx.metallib"}},
		{"build folder", "/src/etchat/build/native/libetchat_runner.dylib", "darwin", nil, []string{
			"/src/etchat/build/native/mlx.metallib", "/src/etchat/build/native/Resources/mlx.metallib"}},
		{"prefix", "/opt/homebrew/lib/libetchat_runner.dylib", "darwin", nil, []string{
			"/opt/homebrew/lib/mlx.metallib", "/opt/homebrew/lib/Resources/mlx.metallib"}},
		{"Frameworks outside Contents", "/x/Frameworks/libetchat_runner.dylib", "darwin", nil, []string{
			"/x/Frameworks/mlx.metallib", "/x/Frameworks/Resources/mlx.metallib"}},
		{"override", "/a/libetchat_runner.dylib", "darwin", map[string]string{EnvMetallib: " /k/mlx.metallib "}, []string{"/k/mlx.metallib"}},
		{"linux needs none", "/a/libetchat_runner.so", "linux", map[string]string{EnvMetallib: "/k/mlx.metallib"}, nil},
		{"windows needs none", `C:\a\etchat_runner.dll`, "windows", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := MetallibCandidates(env(c.env), c.lib, c.goos); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestFindMetallib(t *testing.T) {
	have := map[string]bool{"/b": true, "/c": true}
	exists := func(p string) bool { return have[p] }
	if p, err := FindMetallib([]string{"/a", "/b", "/c"}, exists); p != "/b" || err != nil {
		t.Errorf("got %q, %v; want the first that exists", p, err)
	}
	if p, err := FindMetallib(nil, exists); p != "" || err != nil {
		t.Errorf("no candidates: %q, %v", p, err)
	}
	_, err := FindMetallib([]string{"/x", "/y"}, exists)
	if err == nil || !strings.Contains(err.Error(), "/x\n  /y") || !strings.Contains(err.Error(), EnvMetallib) {
		t.Errorf("none found: %v", err)
	}
}

// What the pool parks is bounded: at most maxParked sessions (sessions
// open at once on several models, then closed, park the newest), and a
// session whose KV pools grew past maxParkedKV is closed, not parked.
func TestParkedSessionsAreBounded(t *testing.T) {
	e := newEngine(t, abiLayerLib(t))
	x := loadExtras(t, e.LibraryPath())
	ctx := context.Background()
	live0 := x.live()
	var open []*Session
	for range maxParked + 2 {
		s, err := e.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s.(*Session))
	}
	for _, s := range open {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if e.Idle() != maxParked || int(x.live()-live0) != maxParked {
		t.Errorf("%d sessions closed: %d parked, %d live, want %d", len(open), e.Idle(), x.live()-live0, maxParked)
	}
	if err := e.CloseIdle(); err != nil || e.Idle() != 0 || x.live() != live0 {
		t.Fatalf("CloseIdle: %v, %d parked, %d live", err, e.Idle(), x.live()-live0)
	}

	saved := maxParkedKV
	t.Cleanup(func() { maxParkedKV = saved })
	cfg := testConfig()
	s, err := e.Open(ctx, writeProgram(t, "vocab=16"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for from := 0; from < 16; from += 4 {
		if _, err := s.Forward(ctx, seq(from, 4), seq(from, 4)); err != nil {
			t.Fatal(err)
		}
	}
	maxParkedKV = kvPoolBytes(cfg, 16) - 1
	if err := s.Close(); err != nil || e.Idle() != 0 || x.live() != live0 {
		t.Errorf("a session holding %d KV bytes (bound %d) was parked: %v, %d parked", kvPoolBytes(cfg, 16), maxParkedKV, err, e.Idle())
	}
}
