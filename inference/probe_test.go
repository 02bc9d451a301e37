package inference

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// multiFailNative is a native engine on Metal whose sessions fail any
// forward of more than one token, as a mask or a kernel compiled on first
// use that only a multi-token prefill reaches would.
type multiFailNative struct {
	engine.Engine
	steps   []int // sizes of the forwards run
	rewinds []int
}

func (f *multiFailNative) Name() string   { return engine.MLX }
func (f *multiFailNative) Device() string { return engine.DeviceMetal }
func (f *multiFailNative) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := f.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return &multiFailSession{Session: s, f: f}, nil
}

type multiFailSession struct {
	engine.Session
	f *multiFailNative
}

func (s *multiFailSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	s.f.steps = append(s.f.steps, len(ids))
	if len(ids) > 1 {
		return nil, errors.New("metal: execution failed: the prefill mask kernel did not compile")
	}
	return s.Session.Forward(ctx, ids, pos)
}

func (s *multiFailSession) Rewind(n int) error {
	s.f.rewinds = append(s.f.rewinds, n)
	return s.Session.Rewind(n)
}

// auto's probe is a small prefill (min(chunk, 4) tokens), so a failure only
// a multi-token step hits falls back to the CPU engine at load instead of
// failing the first message; and the probe's tokens are rewound.
func TestLoadProbePrefillsSeveralTokens(t *testing.T) {
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	nat := &multiFailNative{Engine: cpu.New(cpu.Options{})}
	swapEngines(t, map[string]engine.Constructor{
		engine.CPU: func(engine.Config) (engine.Engine, error) { return cpu.New(cpu.Options{}), nil },
		engine.MLX: func(engine.Config) (engine.Engine, error) { return nat, nil },
	})
	m, err := Load(bg, pte, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(nat.steps) != 1 || nat.steps[0] != min(m.PrefillChunk(), 4) || nat.steps[0] < 2 {
		t.Errorf("probe steps %v, want one of min(chunk %d, 4) tokens", nat.steps, m.PrefillChunk())
	}
	if !m.Engine.Fallback || !strings.Contains(m.Engine.Reason, "mask kernel") {
		t.Errorf("a multi-token failure did not fall back at load: %+v", m.Engine)
	}

	// A native engine that runs the probe: its tokens are rewound.
	ok := &rewindCounting{Engine: cpu.New(cpu.Options{})}
	swapEngines(t, map[string]engine.Constructor{
		engine.CPU: func(engine.Config) (engine.Engine, error) { return cpu.New(cpu.Options{}), nil },
		engine.MLX: func(engine.Config) (engine.Engine, error) { return ok, nil },
	})
	m2, err := Load(bg, pte, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.Engine.Name != engine.MLX || m2.Session.Len() != 0 || len(ok.rewinds) != 1 || ok.rewinds[0] != 0 {
		t.Errorf("probe on a working engine: %+v, len %d, rewinds %v", m2.Engine, m2.Session.Len(), ok.rewinds)
	}
}

type rewindCounting struct {
	engine.Engine
	rewinds []int
}

func (f *rewindCounting) Name() string   { return engine.MLX }
func (f *rewindCounting) Device() string { return engine.DeviceMetal }
func (f *rewindCounting) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := f.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return &rewindSession{Session: s, f: f}, nil
}

type rewindSession struct {
	engine.Session
	f *rewindCounting
}

func (s *rewindSession) Rewind(n int) error {
	s.f.rewinds = append(s.f.rewinds, n)
	return s.Session.Rewind(n)
}
