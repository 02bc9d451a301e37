package inference

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/engines"
)

func TestMain(m *testing.M) {
	engines.Register()
	os.Exit(m.Run())
}

// swapEngines replaces the registered constructors for a test.
func swapEngines(t *testing.T, ctors map[string]engine.Constructor) {
	t.Helper()
	saved := map[string]engine.Constructor{}
	for _, k := range engine.Kinds() {
		saved[k.Name] = engine.Lookup(k.Name)
		engine.Register(k.Name, ctors[k.Name])
	}
	t.Cleanup(func() {
		for n, c := range saved {
			engine.Register(n, c)
		}
	})
}

// fakeNative is a named fake of the native engine: it runs the real
// engine it wraps but reports the device given, and can fail to open the
// program or to run its first forward, as a Mac without a usable Metal
// device or metallib would.
type fakeNative struct {
	engine.Engine
	device               string
	failOpen, failFwd    bool
	opens, firstForwards int
}

func (f *fakeNative) Name() string   { return engine.MLX }
func (f *fakeNative) Device() string { return f.device }
func (f *fakeNative) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	f.opens++
	if f.failOpen {
		return nil, errors.New("metal: load failed: no Metal device\nsecond line of the library's log")
	}
	s, err := f.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return &failingFirst{Session: s, f: f}, nil
}

type failingFirst struct {
	engine.Session
	f   *fakeNative
	ran bool
}

func (s *failingFirst) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	if !s.ran {
		s.ran = true
		s.f.firstForwards++
		if s.f.failFwd {
			return nil, errors.New("metal: execution failed: mlx.metallib not found")
		}
	}
	return s.Session.Forward(ctx, ids, pos)
}

func TestSelectEngine(t *testing.T) {
	sel, err := OpenEngine("cpu")
	if err != nil || sel.Name != "cpu" || sel.Engine.Name() != "cpu" || sel.Device != "cpu" || sel.Auto {
		t.Fatalf("cpu: %+v, %v", sel, err)
	}
	var unknown *engine.UnknownError
	if _, err := OpenEngine("tpu"); !errors.As(err, &unknown) || !strings.Contains(err.Error(), "auto, cpu, mlx") || !strings.Contains(err.Error(), "metal") {
		t.Errorf("unknown engine: %v", err)
	}

	cpu := &zeroEngine{vocab: 4}
	missing := &engine.LibraryError{Problem: engine.LibraryMissing, Err: errors.New("metal: etchat runner library not found; tried:\n  /x: not found")}
	swapEngines(t, map[string]engine.Constructor{
		engine.CPU: func(engine.Config) (engine.Engine, error) { return cpu, nil },
		engine.MLX: func(engine.Config) (engine.Engine, error) { return nil, missing },
	})
	sel, err = OpenEngine("auto")
	if err != nil || sel.Engine != engine.Engine(cpu) || sel.Reason != "auto: native runner library not found" || !sel.Fallback {
		t.Errorf("auto without the native library: %+v, %v", sel, err)
	}
	if !strings.HasPrefix(sel.String(), "engine: cpu on cpu (auto: native runner library not found)") {
		t.Errorf("announcement %q", sel.String())
	}
	// Asked for, the native engine fails with the full, typed error; the
	// alias names the same engine.
	for _, choice := range []string{"mlx", "metal", " MLX "} {
		var le *engine.LibraryError
		_, err := OpenEngine(choice)
		if !errors.Is(err, engine.ErrNotAvailable) || !errors.As(err, &le) || le.Problem != engine.LibraryMissing || !strings.Contains(err.Error(), "tried:\n  /x") {
			t.Errorf("%s asked for, unavailable: %v", choice, err)
		}
	}
	// A native engine on MLX's CPU backend: auto prefers the CPU engine and says why.
	nat := &fakeNative{Engine: &zeroEngine{vocab: 5}, device: engine.DeviceCPU}
	engine.Register(engine.MLX, func(engine.Config) (engine.Engine, error) { return nat, nil })
	if sel, err := OpenEngine(""); err != nil || sel.Name != "cpu" || !strings.Contains(sel.Reason, "~6–9× faster") {
		t.Errorf("auto with a CPU-only native engine: %+v, %v", sel, err)
	}
	if sel, err := OpenEngine("metal"); err != nil || sel.Name != "mlx" || sel.Device != "cpu" || sel.Engine != engine.Engine(nat) {
		t.Errorf("explicit mlx on the CPU backend: %+v, %v", sel, err)
	}
	nat.device = engine.DeviceMetal
	if sel, err := OpenEngine(""); err != nil || sel.Name != "mlx" || sel.Device != "metal" || sel.Engine != engine.Engine(nat) || sel.Fallback {
		t.Errorf("auto with the native engine on Metal: %+v, %v", sel, err)
	}
	nat.device = engine.DeviceCUDA
	if sel, err := OpenEngine(""); err != nil || sel.Name != "mlx" || sel.Device != "cuda" {
		t.Errorf("auto with the native engine on CUDA: %+v, %v", sel, err)
	}
	engine.Register(engine.MLX, nil)
	engine.Register(engine.CPU, nil)
	if _, err := OpenEngine("auto"); !errors.Is(err, engine.ErrNotAvailable) {
		t.Errorf("no engines: %v", err)
	}
	if got := engine.Registered(); len(got) != 0 {
		t.Errorf("Registered() = %v after removing both", got)
	}
}

func TestEngineNames(t *testing.T) {
	if got := strings.Join(engine.Choices(), ","); got != "auto,cpu,mlx" {
		t.Errorf("choices %s", got)
	}
	for in, want := range map[string]string{"": "auto", "AUTO": "auto", "cpu": "cpu", "metal": "mlx", "mlx": "mlx"} {
		if got, err := engine.Canonical(in); err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if !engine.Same("metal", "mlx") || engine.Same("cpu", "mlx") || !engine.Same("zero", "ZERO") {
		t.Error("Same")
	}
	for _, c := range []struct{ name, goos, want string }{
		{"mlx", "darwin", "unknown"}, {"mlx", "linux", "unknown"}, {"cpu", "darwin", "cpu"}, {"zero", "darwin", "cpu"},
	} {
		if got := engine.DefaultDevice(c.name, c.goos); got != c.want {
			t.Errorf("DefaultDevice(%s, %s) = %s, want %s", c.name, c.goos, got, c.want)
		}
	}
	if h := engine.Help(); !strings.Contains(h, "mlx (ExecuTorch + MLX") || !strings.Contains(h, "also metal") || !strings.HasPrefix(h, "auto (") {
		t.Errorf("help %q", h)
	}
}
