package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// testMachine keeps tests from depending on the host's description.
var testMachine = &Machine{CPU: "Test CPU", Cores: 2, RAMBytes: 1 << 30, OS: "linux", Arch: "amd64"}

// cpuEngine is the real CPU engine.
func cpuEngine() engine.Engine { return cpu.New(cpu.Options{}) }

// opts are small-run options on a fixture with the CPU engine.
func opts(t *testing.T, fixture string, p, n []int, reps int) Options {
	t.Helper()
	return Options{PTE: fixtures.PTE(fixture), Prompts: p, Gens: n, Reps: reps, Engine: cpuEngine(),
		Machine: testMachine, AppVersion: "test"}
}

func run(t *testing.T, o Options) []*Result {
	t.Helper()
	rs, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// countingEngine counts Open calls.
type countingEngine struct {
	engine.Engine
	opens atomic.Int32
}

func (e *countingEngine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	e.opens.Add(1)
	return e.Engine.Open(ctx, path, cfg)
}

// recordingEngine records every forward's size and first position.
type recordingEngine struct {
	engine.Engine
	mu    sync.Mutex
	calls [][2]int // {len(ids), positions[0]}
	clear int
}

func (e *recordingEngine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := e.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return &recordingSession{s, e}, nil
}

type recordingSession struct {
	engine.Session
	e *recordingEngine
}

func (s *recordingSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	s.e.mu.Lock()
	s.e.calls = append(s.e.calls, [2]int{len(ids), int(pos[0])})
	s.e.mu.Unlock()
	return s.Session.Forward(ctx, ids, pos)
}

func (s *recordingSession) Clear() error {
	s.e.mu.Lock()
	s.e.clear++
	s.e.mu.Unlock()
	return s.Session.Clear()
}
