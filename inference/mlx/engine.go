package mlx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/pte"
)

// Options chooses the runner library. The zero value searches
// Candidates(os.Getenv, os.Executable(), runtime.GOOS).
type Options struct {
	// Library is an explicit path to libetchat_runner; when set it is the
	// only path tried (it takes precedence over $ETCHAT_RUNNER).
	Library string
	// Getenv replaces os.Getenv for the search (tests).
	Getenv func(string) string
	// Executable replaces os.Executable() for the search (tests).
	Executable string
	// GOOS replaces runtime.GOOS for the library and metallib searches
	// (tests of a Mac bundle's layout on Linux).
	GOOS string
	// TimingOut receives the step-timing breakdowns (EnvTiming); default
	// standard error.
	TimingOut io.Writer
	// PoisonViews fills the logits a forward returned with NaN before the
	// session's next forward, so a caller that keeps them past their
	// lifetime (engine.Session's contract) reads NaN instead of silently
	// reading the next step's logits. On under -race and with
	// EnvPoisonViews=1.
	PoisonViews bool
}

func defaultCandidates(o Options) []string {
	if o.Library != "" {
		return []string{o.Library}
	}
	exe := o.Executable
	if exe == "" {
		if p, err := os.Executable(); err == nil {
			exe = p
		}
	}
	// A symlink to the executable (Homebrew's bin/etchat, a link into an
	// app bundle) must not hide the folders beside the real file, such as
	// the bundle's ../Frameworks.
	if exe != "" {
		if p, err := filepath.EvalSymlinks(exe); err == nil {
			exe = p
		}
	}
	return Candidates(o.env(), exe, o.goos())
}

// goos is the platform the searches are for: GOOS, or runtime.GOOS.
func (o Options) goos() string {
	if o.GOOS != "" {
		return o.GOOS
	}
	return runtime.GOOS
}

// env is the environment the searches read: Getenv, or the process's.
func (o Options) env() func(string) string {
	if o.Getenv != nil {
		return o.Getenv
	}
	return os.Getenv
}

// Engine runs programs through libetchat_runner.
type Engine struct {
	lib *library
	// timingOut receives each session's step-timing breakdown when it
	// closes; nil = timing off (EnvTiming unset, or a library without
	// section 6).
	timingOut io.Writer
	poison    bool // Options.PoisonViews
}

// EnvPoisonViews set to 1 turns Options.PoisonViews on.
const EnvPoisonViews = "ETCHAT_NATIVE_POISON_VIEWS"

var _ engine.Engine = (*Engine)(nil)

// New loads the runner library and returns the native engine, or an error
// naming every path tried and why it failed (missing, not a library, wrong
// architecture, wrong ABI version, on macOS no mlx.metallib); callers fall
// back to the CPU engine.
func New(opts Options) (engine.Engine, error) {
	l, err := find(defaultCandidates(opts), opts.env(), opts.goos())
	if err != nil {
		return nil, err
	}
	e := &Engine{lib: l, poison: opts.PoisonViews || raceEnabled || opts.env()(EnvPoisonViews) == "1"}
	if timingOn(opts.env()) && l.setTiming != nil {
		l.setTiming(1) // process-wide; engines without timing just do not read it
		e.timingOut = opts.TimingOut
		if e.timingOut == nil {
			e.timingOut = os.Stderr
		}
	}
	return e, nil
}

// newTimer is a session's step timer, nil with timing off.
func (e *Engine) newTimer() *stepTimer {
	if e.timingOut == nil {
		return nil
	}
	return &stepTimer{out: e.timingOut}
}

// Name is "metal".
func (e *Engine) Name() string { return "metal" }

// LibraryPath is the path of the loaded runner library.
func (e *Engine) LibraryPath() string { return e.lib.path }

// DeviceInfo is where MLX computes, as the library reported it when the
// device came up (New fails when it cannot say).
func (e *Engine) DeviceInfo() (DeviceInfo, error) { return e.lib.dev, nil }

// Facts is what the engine knows of itself for a bug report (etchat
// doctor). It implements engine.FactsReporter.
func (e *Engine) Facts() engine.NativeFacts {
	l := e.lib
	return engine.NativeFacts{Library: l.path, Device: l.dev.Kind, DeviceName: l.dev.Name, MemoryBytes: l.dev.MemoryBytes,
		WorkingSetBytes: l.limits.WorkingSet, WorkingSetSource: l.limits.Source,
		Metallib: l.metallib, MetallibStamp: l.metallibTag, LibraryStamp: l.stamp(), DeviceStart: l.devStart}
}

// Device is where MLX computes: "metal", "cuda" or "cpu", as the library
// reported it. It implements engine.Devicer.
func (e *Engine) Device() string { return e.lib.dev.Kind }

// Open loads the program at path and opens a session on it: with cfg, an
// off-graph session whose cache the library builds from cfg exactly; with
// cfg nil, an in-graph session (no rewind or clear). ctx is checked before
// and between the native steps; a load in progress cannot be interrupted.
//
// A session closed earlier on the same file and config is reused, with an
// empty cache, instead of loading the program again; sessions parked for
// another file or config are closed before anything is opened (see
// sessionPool).
func (e *Engine) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := poolKey(path, cfg)
	if key != "" {
		if idle, ok := e.lib.pool.take(key); ok {
			cp := *cfg
			cp.Layers = append([]kvcache.Layer(nil), cfg.Layers...)
			return &Session{lib: e.lib, h: idle.h, key: key, vocab: idle.vocab, cfg: &cp,
				capacity: idle.capacity, maxLen: idle.maxLen, mode: idle.mode, timer: e.newTimer(), poison: e.poison,
				weights: idle.weights}, nil
		}
	}
	mode, weights, err := e.admit(path, key, cfg)
	if err != nil {
		return nil, err
	}
	ccfg, layers, own, err := cConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := e.lib.openProgram(path)
	if err != nil {
		return nil, err
	}
	// Sessions own their method and cache; the program is only needed to
	// open one.
	defer e.lib.closeProgram(p)
	vocab, err := e.lib.vocab(p)
	if err != nil {
		return nil, err
	}
	if vocab <= 0 || vocab > math.MaxInt32 {
		return nil, fmt.Errorf("mlx: %s: implausible vocabulary size %d", path, vocab)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, err := e.lib.openSession(p, ccfg, layers)
	if err != nil {
		return nil, err
	}
	capacity, err := e.lib.capacity(h)
	if err != nil {
		e.lib.closeSession(h)
		return nil, err
	}
	if err := e.lib.warm(h, int(vocab), cfg != nil); err != nil {
		e.lib.closeSession(h)
		return nil, err
	}
	return &Session{lib: e.lib, h: h, key: key, vocab: int(vocab), cfg: own, capacity: capacity, mode: mode, timer: e.newTimer(), poison: e.poison,
		weights: e.lib.sessionWeights(weights)}, nil
}

// admit is what Open checks before the library loads anything: the file's
// logits mode and weights (programFacts), the parked sessions of other
// files and configs closed, and the model's fit in the working set
// (checkFit, after the close: what they held is free again).
func (e *Engine) admit(path, key string, cfg *kvcache.Config) (engine.LogitsMode, int64, error) {
	mode, weights, err := programFacts(path)
	if err != nil {
		return mode, 0, err
	}
	if err := e.lib.closeIdle(e.lib.pool.others(key)); err != nil {
		return mode, 0, err
	}
	return mode, weights, e.checkFit(path, weights, cfg)
}

// cConfig is cfg as the library takes it and the session's own copy of it
// (all nil for an in-graph session).
func cConfig(cfg *kvcache.Config) (*CConfig, []CLayer, *kvcache.Config, error) {
	if cfg == nil {
		return nil, nil, nil, nil
	}
	c, ls, err := ToC(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mlx: %w", err)
	}
	cp := *cfg
	cp.Layers = append([]kvcache.Layer(nil), cfg.Layers...)
	return &c, ls, &cp, nil
}

// programFacts is the file's get_logits_to_keep_mode, read through
// modelinfo's one table of metadata names, and its weights' bytes. A file
// this reader cannot parse is left to the library (LogitsFull and no
// weights here), whose load says what is wrong with it.
// A selected-rows program (mode 2) is refused: the library feeds forward
// two inputs.
func programFacts(path string) (engine.LogitsMode, int64, error) {
	f, err := pte.Open(path)
	if err != nil {
		return engine.LogitsFull, 0, nil
	}
	defer f.Close()
	md, err := modelinfo.ReadMetadata(f)
	if err != nil {
		return engine.LogitsFull, 0, fmt.Errorf("mlx: %w", err)
	}
	if md.LogitsMode == engine.LogitsSelected {
		return 0, 0, fmt.Errorf("mlx: %s: %w: the program selects its logits rows through a third forward input (get_logits_to_keep_mode 2), which the runner library does not feed; the CPU engine does", path, engine.ErrUnsupported)
	}
	return md.LogitsMode, f.WeightBytes(), nil
}

// Session is an engine.Session backed by an etchat_session. Its methods
// are serialised by a mutex, so a Close racing a Forward is safe (the
// interface does not promise concurrent use, but the handle must never be
// used after it is freed).
type Session struct {
	mu       sync.Mutex
	lib      *library
	h        sessionHandle // zero once closed
	key      string        // the pool key; "" = never parked (in-graph)
	broken   bool          // a step failed inside the runtime: never parked
	vocab    int
	cfg      *kvcache.Config // nil for in-graph programs
	capacity int
	maxLen   int // high-water length, for the KV pool estimate
	mode     engine.LogitsMode
	length   int // the cache's length as the library keeps it; -1 = ask it
	buf      []float32
	timer    *stepTimer // nil unless EnvTiming
	poison   bool       // Options.PoisonViews
	view     []float32  // the logits the last forward returned (poisoned before the next)
	weights  int64      // the weights' bytes this session holds alone (0 where sessions share them)
	shadow   [2][]float32
	flip     bool
}

var _ engine.Session = (*Session)(nil)

// checkStep refuses, before anything is locked or called, a step no
// library could run.
func checkStep(ctx context.Context, ids, positions []int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("mlx: forward: no tokens")
	}
	if len(ids) != len(positions) {
		return fmt.Errorf("mlx: forward: %d ids but %d positions", len(ids), len(positions))
	}
	if len(ids) > math.MaxInt32 {
		return fmt.Errorf("mlx: forward: %d tokens in one step", len(ids))
	}
	return nil
}

func (s *Session) run(ctx context.Context, ids, positions []int64, all bool) ([]float32, error) {
	var t0 time.Time
	if s.timer != nil {
		t0 = time.Now()
	}
	if err := checkStep(ctx, ids, positions); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.h == 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("mlx: forward: %w", engine.ErrClosed)
	}
	rows := 1
	if all {
		rows = len(ids)
	}
	need := rows * s.vocab
	if cap(s.buf) < need {
		s.buf = make([]float32, need)
	}
	if s.poison {
		for i := range s.view {
			s.view[i] = float32(math.NaN())
		}
		s.view = nil
	}
	return s.runSteps(ctx, ids, positions, s.buf[:need], all, t0)
}

// runOne is one native step of at most MaxStep tokens, under s.mu: its
// logits (the last row, or every row) or its error.
func (s *Session) runOne(ids, positions []int64, buf []float32, all bool, t0 time.Time) ([]float32, error) {
	var sample *StepSample
	if s.timer != nil {
		sample = &StepSample{Tokens: len(ids)}
	}
	out, err := s.lib.forward(s.h, ids, positions, buf, all, sample)
	s.noteStep(positions, err)
	if err != nil {
		return nil, err
	}
	if len(out) != len(buf) {
		return nil, fmt.Errorf("mlx: forward: library wrote %d logits, expected %d", len(out), len(buf))
	}
	if sample != nil {
		sample.Go = time.Since(t0)
		s.timer.samples = append(s.timer.samples, *sample)
	}
	return out, nil
}

// noteStep records what a forward's outcome says about the session: a
// failure inside the runtime breaks it (never parked), and a step that ran
// raises the high-water length.
func (s *Session) noteStep(positions []int64, err error) {
	var le *Error
	if errors.As(err, &le) && (le.Status == StatusExecute || le.Status == StatusInternal) {
		s.broken = true
	}
	ran := err == nil || errors.As(err, &le) && le.Status == StatusUnsupported
	if ran {
		// The step ran (an unsupported all-rows copy fails after it).
		for _, p := range positions {
			end := int(p) + 1
			s.maxLen = max(s.maxLen, end)
			if s.length >= 0 {
				s.length = max(s.length, end)
			}
		}
	} else {
		s.length = -1 // a failure inside the runtime resyncs the library's length
	}
}

// StepTiming is the session's timed steps since it was opened (nil unless
// EnvTiming was set when the engine was made).
func (s *Session) StepTiming() []StepSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		return nil
	}
	return slices.Clone(s.timer.samples)
}

// Forward runs ids at positions and returns the last position's logits.
// As engine.Session says, the slice is valid until the session's next call;
// it must not be written: where the library has etchat_session_forward_view
// and the program's logits are float32 it is the library's own output
// tensor, read in place (no copy), which the next forward overwrites and a
// close may free. Other dtypes are converted into the session's buffer.
func (s *Session) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	return s.run(ctx, ids, positions, false)
}

// ForwardAll runs ids at positions and returns every position's logits.
// A program that keeps the last position's logits only has them for a
// step of one token; a longer step is refused before it runs (the library
// would run it, then refuse the copy).
func (s *Session) ForwardAll(ctx context.Context, ids, positions []int64) ([]float32, error) {
	if s.mode == engine.LogitsLast && len(ids) > 1 {
		return nil, fmt.Errorf("mlx: %d tokens: %w", len(ids), engine.ErrLastRowOnly)
	}
	return s.run(ctx, ids, positions, true)
}

// LogitsMode is the program's get_logits_to_keep_mode.
func (s *Session) LogitsMode() engine.LogitsMode { return s.mode }

// Rewind shortens the cache to newLen tokens.
func (s *Session) Rewind(newLen int) error {
	if newLen < 0 || newLen > math.MaxInt32 {
		return fmt.Errorf("mlx: rewind to %d: %w", newLen, engine.ErrRewindRefused)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.lib.rewind(s.h, int32(newLen))
	s.length = newLen
	if err != nil {
		s.length = -1 // refused (unchanged) or failed midway: ask the library
	}
	return err
}

// Clear empties the cache.
func (s *Session) Clear() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.lib.clear(s.h)
	s.length = 0
	if err != nil {
		s.length = -1
	}
	return err
}

// Len is the number of tokens in the cache (0 once closed). The session
// follows the library's rule (the highest position run + 1, set by rewind
// and clear), so asking costs no call into the library, whose thread a call
// would cross (the generation loop asks after every step); after a step or
// rewind that failed inside the runtime (which may have moved the length)
// it asks the library once.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == 0 {
		return 0
	}
	if s.length >= 0 {
		return s.length
	}
	n, err := s.lib.length(s.h)
	if err != nil {
		return 0
	}
	s.length = n
	return n
}

// Capacity is the most tokens the cache admits: the config's capacity, or
// for an in-graph program its exported get_max_ctx_len (0 if it publishes
// none; CanExtend then always admits).
func (s *Session) Capacity() int { return s.capacity }

// CanExtend reports whether n more tokens fit (false once closed).
func (s *Session) CanExtend(n int) bool {
	if n < 0 || n > math.MaxInt32 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, err := s.lib.canExtend(s.h, int32(n))
	return err == nil && ok
}

// Vocab is the size of a logits row.
func (s *Session) Vocab() int { return s.vocab }

// Memory reports MLX's active and peak memory, and the KV pools' bytes as
// the pool policy sizes them for the longest sequence this session has
// held (pools grow by doubling and never shrink); the library does not
// expose the pools' own sizes.
func (s *Session) Memory() engine.Memory {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m engine.Memory
	if s.h == 0 {
		return m
	}
	if a, p, err := s.lib.mlxMemory(); err == nil {
		m.ActiveBytes, m.PeakBytes = a, p
	}
	m.KVBytes = kvPoolBytes(s.cfg, s.maxLen)
	return m
}

// kvPoolBytes is the KV pools' size once a sequence of maxLen tokens has
// been held: each layer's pool starts at the initial capacity and doubles
// up to its most rows (capacity, or a ring's window+max_write-1).
func kvPoolBytes(cfg *kvcache.Config, maxLen int) int64 {
	if cfg == nil {
		return 0
	}
	var total int64
	for _, l := range cfg.Layers {
		need := min(maxLen, cfg.Rows(l))
		total += cfg.LayerBytes(l, cfg.PoolRows(l, need))
	}
	return total
}

// Close releases the session; calling it twice is harmless. A healthy
// off-graph session is cleared and parked for the next Open of the same
// file and config, unless its KV pools grew past what a parked session may
// hold (Engine.CloseIdle closes parked ones; see sessionPool).
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.h
	s.h = 0
	s.buf = nil
	if h == 0 {
		return nil
	}
	if s.timer != nil && len(s.timer.samples) > 0 {
		_ = WriteTiming(s.timer.out, s.timer.samples) // a report on stderr; its failure is no reason to fail Close
		s.timer.samples = nil
	}
	// MLX's buffer cache goes with the session: what it freed is the
	// device's again, whether the session is parked or closed.
	defer func() { _ = s.lib.dropCache() }() // best effort: a failed clear leaves MLX's own cache limit in force
	kv := kvPoolBytes(s.cfg, s.maxLen)
	budget := s.lib.parkBudget()
	if s.key == "" || s.broken || kv > maxParkedKV || kv+s.weights > budget || s.lib.clear(h) != nil {
		return s.lib.closeSession(h)
	}
	return s.lib.closeIdle(s.lib.pool.put(idleSession{key: s.key, h: h, vocab: s.vocab, capacity: s.capacity, maxLen: s.maxLen, mode: s.mode,
		weights: s.weights, bytes: kv + s.weights}, budget))
}
