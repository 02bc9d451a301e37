package benchstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"etchat/inference/bench"
	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// testMachine keeps tests from depending on the host's description.
var testMachine = &bench.Machine{CPU: "Test CPU", Cores: 2, RAMBytes: 1 << 30, OS: "linux", Arch: "amd64"}

// cpuEngine is the real CPU engine.
func cpuEngine() engine.Engine { return cpu.New(cpu.Options{}) }

// opts are small-run options on a fixture with the CPU engine.
func opts(t *testing.T, fixture string, p, n []int, reps int) bench.Options {
	t.Helper()
	return bench.Options{PTE: fixtures.PTE(fixture), Prompts: p, Gens: n, Reps: reps, Engine: cpuEngine(),
		Machine: testMachine, AppVersion: "test"}
}

func run(t *testing.T, o bench.Options) []*bench.Result {
	t.Helper()
	rs, err := bench.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// smallRun is one small real run (pp8, tg4, at depths 0 and 3, 2 reps) on
// the llama3 fixture: the run inference/bench's format tests share.
func smallRun(t *testing.T) []*bench.Result {
	t.Helper()
	o := bench.Options{PTE: fixtures.PTE(fixtures.Llama3), Prompts: []int{8}, Gens: []int{4}, Depths: []int{0, 3}, Reps: 2,
		Engine: cpuEngine(), Machine: testMachine, AppVersion: "test 'quoted'"}
	return run(t, o)
}

// virtualClock is a clock that moves only when told.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
	rng *rand.Rand
}

func newVirtualClock(seed uint64) *virtualClock {
	return &virtualClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), rng: rand.New(rand.NewPCG(seed, 1))}
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Microsecond) // reading the clock takes a moment
	return c.now
}

// sleep advances the clock by d, ±jitter (a fraction), uniformly.
func (c *virtualClock) sleep(d time.Duration, jitter float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Duration(float64(d) * (1 + jitter*(2*c.rng.Float64()-1))))
}

// slowEngine is a named fake at the engine boundary: its sessions run the
// real forward, then sleep on a virtual clock for step per token fed
// (with random jitter). With the runner reading the same clock, the
// measured speed is set by step: twice the step is a planted 2x slowdown
// that the busy shared test machine cannot blur (real timings there vary
// by ±50% from one run to the next).
type slowEngine struct {
	engine.Engine
	clock  *virtualClock
	step   time.Duration
	jitter float64
}

func (e slowEngine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := e.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return slowSession{s, e}, nil
}

type slowSession struct {
	engine.Session
	e slowEngine
}

func (s slowSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	out, err := s.Session.Forward(ctx, ids, pos)
	s.e.clock.sleep(time.Duration(len(ids))*s.e.step, s.e.jitter)
	return out, err
}
