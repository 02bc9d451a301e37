// Package bench measures prefill and decode speed of a .pte model on an
// engine, llama-bench style: a test "pN" times the prefill of N synthetic
// prompt tokens, "tgN" times N single-token greedy decode steps, and
// "@ dD" first fills the cache with D tokens (untimed). Every test is
// repeated (after an untimed warmup) from a cleared cache, and the
// repetitions give a mean ± standard deviation in tokens per second.
//
// The package also writes results in llama-bench's formats (md, csv, json,
// jsonl, sql), describes the machine they ran on, and compares two sets of
// results test by test, flagging the changes larger than the repetitions'
// noise (Welch's t-test). It does not know the store: package
// internal/benchstore saves results there, reads them back and selects
// them. Package bench/plot draws the charts.
//
// What is timed, exactly:
//   - pp: the wall time of the generation loop's prefill (inference.Prefill:
//     chunks of at most the cache's max_write, as a chat feeds a prompt) of
//     the N prompt tokens, from the first forward's call to the last
//     forward's return. The depth prefill before it, the cache clear and the
//     argmax of the last logits are not timed.
//   - tg: the wall time of N decode steps, each one forward of one token
//     followed by the sampler's greedy argmax (sampler.Argmax) over the
//     logits row (sampling included), whose result is the next step's input.
//     EOS is not a stop: all N steps run.
//
// The model is loaded by the one loader (inference.Prepare and Open), so
// a benchmark runs what a chat runs: the same cache configuration, engine
// choice and fallback.
//
// Tokens are synthetic (see Tokens): seeded, ordinary vocabulary ids, no
// special or added tokens, the same for every repetition of a test.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
	"etchat/inference/stats"
	"etchat/inference/tokenizer"
)

// CacheSpec is one KV-cache policy to test; zero fields mean the model's
// defaults.
type CacheSpec struct {
	DType    string `json:"kv_dtype,omitempty"`    // bf16 | fp16 | fp32; "" = bf16
	Capacity int    `json:"kv_capacity,omitempty"` // 0 = the model's get_max_ctx_len
	Windows  string `json:"kv_windows,omitempty"`  // "" = the model's own
}

// Policy is the kvcache policy the spec asks for.
func (c CacheSpec) Policy() kvcache.Policy {
	p := kvcache.DefaultPolicy()
	p.StorageDType, p.Capacity, p.Windows = c.DType, c.Capacity, c.Windows
	return p
}

// Cache is a resolved cache configuration: what the engine actually used.
type Cache struct {
	InGraph  bool   `json:"in_graph,omitempty"`
	DType    string `json:"kv_dtype"`    // bf16 | fp16 | fp32; "" for in-graph
	Capacity int    `json:"kv_capacity"` // tokens
	Windows  string `json:"kv_windows"`  // per-cache windows (get_n_caches entries, not per model layer), "0" = flat; "" for in-graph
}

// String is the cache's identity, as tables and compare show it:
// "bf16 c2048 w0" or "in-graph c512".
func (c Cache) String() string {
	if c.InGraph {
		return fmt.Sprintf("in-graph c%d", c.Capacity)
	}
	return fmt.Sprintf("%s c%d w%s", c.DType, c.Capacity, c.Windows)
}

func resolveCache(cfg *kvcache.Config, info *modelinfo.Info) Cache {
	if cfg == nil {
		return Cache{InGraph: true, Capacity: info.MaxCtxLen}
	}
	ws := make([]string, 0, len(cfg.Layers))
	for _, l := range cfg.Layers {
		ws = append(ws, fmt.Sprint(l.Window))
	}
	// A repeated pattern is written once: "0" for all-flat, "512,512,0" stays.
	w := strings.Join(ws, ",")
	if len(ws) > 0 {
		same := true
		for _, x := range ws {
			same = same && x == ws[0]
		}
		if same {
			w = ws[0]
		}
	}
	return Cache{DType: cfg.DType.Flag(), Capacity: cfg.Capacity, Windows: w}
}

// Test identifies one benchmark test.
type Test struct {
	NPrompt int   `json:"n_prompt"`
	NGen    int   `json:"n_gen"`
	NDepth  int   `json:"n_depth"`
	Cache   Cache `json:"cache"`
	// Numerics is the CPU engine's numerics mode the test ran in (what the
	// session reports: exact for a model without quantized matrices);
	// "" = exact, as results from before the modes read.
	Numerics string `json:"numerics,omitempty"`
}

// NumericsName is the mode's name, exact for "".
func (t Test) NumericsName() string {
	if t.Numerics == "" {
		return engine.NumericsExact
	}
	return t.Numerics
}

// IsFast reports whether the test ran in the fast numerics mode.
func (t Test) IsFast() bool { return t.Numerics == engine.NumericsFast }

// Name is llama-bench's test name: "pp512", "tg128", "pp512 @ d4096".
func (t Test) Name() string {
	var s string
	switch {
	case t.NPrompt > 0 && t.NGen > 0:
		s = fmt.Sprintf("pp%d+tg%d", t.NPrompt, t.NGen)
	case t.NPrompt > 0:
		s = fmt.Sprintf("pp%d", t.NPrompt)
	default:
		s = fmt.Sprintf("tg%d", t.NGen)
	}
	if t.NDepth > 0 {
		s += fmt.Sprintf(" @ d%d", t.NDepth)
	}
	return s
}

// Key is the test's identity for comparisons: sizes, cache and, for the
// fast mode, "| fast" (exact, the only mode before there were two, is
// not written, so older results keep their keys).
func (t Test) Key() string {
	k := t.Name() + " | " + t.Cache.String()
	if t.IsFast() {
		k += " | fast"
	}
	return k
}

// Tokens is how many cache cells the test needs.
func (t Test) Tokens() int { return t.NDepth + t.NPrompt + t.NGen }

// Rep is one timed repetition.
type Rep struct {
	// ExecuTorch's runner stats (extension/llm/runner/stats.h), in ms on
	// the Unix clock. For pp: inference_start → prompt_eval_end spans the
	// timed prefill, first_token_ms is after the argmax of its last logits.
	// For tg: prompt_eval_end = inference_start (no prompt), first_token_ms
	// is after the first decode step, inference_end after the last.
	stats.Stats

	// Precise values.
	Ns       int64 `json:"ns"`        // the timed span (see the package doc)
	TTFTNs   int64 `json:"ttft_ns"`   // inference start → first token chosen
	SampleNs int64 `json:"sample_ns"` // argmax time inside the timed span (tg)
	// Memory after the repetition: the session's high-water mark (the
	// session serves every test of one cache configuration, in order, so
	// it covers the earlier tests too) and the KV cache's bytes.
	PeakMem int64 `json:"peak_bytes"`
	KVBytes int64 `json:"kv_bytes"`
}

// TokS is the repetition's rate: timed tokens per second.
func (r Rep) TokS(t Test) float64 {
	return stats.RateNs(int64(t.NPrompt+t.NGen), r.Ns)
}

// Model describes the benchmarked file.
type Model struct {
	Path     string `json:"model_path"`
	Name     string `json:"model_filename"`
	SHA256   string `json:"model_sha256"`
	Size     int64  `json:"model_size"`     // weight bytes
	Params   int64  `json:"model_n_params"` // parameters
	Kind     string `json:"model_kind"`     // off-graph | in-graph
	Chunk    int    `json:"prefill_chunk"`
	MaxCtx   int    `json:"max_ctx_len"`
	Vocab    int    `json:"vocab"`
	TokenSrc string `json:"token_source"` // how prompt ids were chosen
}

// Result is one test's measurement.
type Result struct {
	RunID      int64     `json:"run_id,omitempty"` // the store's id, once saved
	Batch      string    `json:"batch"`            // shared by the tests of one invocation
	Test       Test      `json:"test"`
	Model      Model     `json:"model"`
	Engine     string    `json:"engine"`
	Device     string    `json:"device,omitempty"` // what the engine computed on: cpu, metal, cuda
	Backends   string    `json:"backends"`
	Machine    Machine   `json:"machine"`
	AppVersion string    `json:"app_version"`
	Warmup     bool      `json:"warmup"`
	Seed       uint64    `json:"seed"`
	TestTime   time.Time `json:"test_time"`
	Ended      time.Time `json:"ended"`
	LoadNs     int64     `json:"load_ns"`
	Reps       []Rep     `json:"reps"`
	// Threads is the engine's thread count (ThreadsOf); 0 unknown.
	Threads int `json:"n_threads,omitempty"`
	// BuildCommit names the build as llama-bench's build_commit does; ""
	// = AppVersion.
	BuildCommit string `json:"build_commit,omitempty"`
}

// ThreadsOf is how many threads an engine computes with: its own count
// when it reports one (the CPU engine), else GOMAXPROCS, the Go side's.
func ThreadsOf(e engine.Engine) int {
	if t, ok := e.(interface{ Threads() int }); ok {
		return t.Threads()
	}
	return runtime.GOMAXPROCS(0)
}

// SamplesNs are the repetitions' timed spans.
func (r *Result) SamplesNs() []float64 {
	out := make([]float64, len(r.Reps))
	for i, p := range r.Reps {
		out[i] = float64(p.Ns)
	}
	return out
}

// SamplesTS are the repetitions' rates, tokens per second.
func (r *Result) SamplesTS() []float64 {
	out := make([]float64, len(r.Reps))
	for i, p := range r.Reps {
		out[i] = p.TokS(r.Test)
	}
	return out
}

// AvgTS and StddevTS are the mean and sample standard deviation of the
// rates, as llama-bench's avg_ts and stddev_ts.
func (r *Result) AvgTS() float64    { m, _ := MeanSD(r.SamplesTS()); return m }
func (r *Result) StddevTS() float64 { _, s := MeanSD(r.SamplesTS()); return s }

// AvgNs and StddevNs are the same over the timed spans.
func (r *Result) AvgNs() float64    { m, _ := MeanSD(r.SamplesNs()); return m }
func (r *Result) StddevNs() float64 { _, s := MeanSD(r.SamplesNs()); return s }

// AvgTTFTMs is the mean time to the first token, milliseconds.
func (r *Result) AvgTTFTMs() float64 {
	v := make([]float64, len(r.Reps))
	for i, p := range r.Reps {
		v[i] = float64(p.TTFTNs) / 1e6
	}
	m, _ := MeanSD(v)
	return m
}

// PeakMem is the highest peak any repetition reported, bytes (0 unknown).
func (r *Result) PeakMem() int64 {
	var m int64
	for _, p := range r.Reps {
		m = max(m, p.PeakMem)
	}
	return m
}

// MeanSD is the mean and the sample (n-1) standard deviation; the
// deviation is 0 for fewer than two values.
func MeanSD(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return 0, 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// Options say what to measure. Prompts, Gens and Depths combine as
// llama-bench does: every non-zero prompt size is a pp test, every non-zero
// generation size a tg test, each at every depth and cache spec.
type Options struct {
	PTE       string
	Tokenizer string // tokenizer.json; "" = look next to the .pte, none is fine
	Prompts   []int
	Gens      []int
	Depths    []int // nil = {0}
	Caches    []CacheSpec
	// Numerics are the CPU engine's numerics modes to sweep (each a
	// separate load; "" = the loader's default, exact); nil = {""}.
	Numerics []string
	Reps     int
	NoWarmup bool
	Seed     uint64 // prompt ids; 0 = DefaultSeed

	// Engine is the engine to measure; when nil, EngineChoice (auto, cpu,
	// mlx) is chosen by the loader (inference.Load), with auto's fallback,
	// and Library is the native runner library ("" = the usual search).
	Engine       engine.Engine
	EngineChoice string
	Library      string
	Getenv       func(string) string // the environment of the library search; nil = the process's
	Backends     string              // what the engine runs on, e.g. "CPU" or "MLX"; "" = from the engine's name
	AppVersion   string
	// BuildCommit is llama-bench's build_commit for the results; "" =
	// AppVersion.
	BuildCommit string
	Machine     *Machine // nil = DetectMachine
	Batch       string   // "" = a new one from the clock

	// Progress, when set, is called before every repetition (and warmup)
	// and once when a test ends, from the running goroutine.
	Progress func(Progress)
	// Selected, when set, is told the engine chosen (once per cache
	// configuration), before its tests run.
	Selected func(inference.Selection)
	// Result, when set, is called with each finished test's result.
	Result func(*Result)
	// Clock reads the time for every measurement; nil = time.Now. (Tests
	// and simulations use a virtual clock.)
	Clock func() time.Time
}

// DefaultSeed seeds the synthetic prompt ids.
const DefaultSeed = 20261129

// Progress is where a run is.
type Progress struct {
	Test, Tests int    // 1-based test number of how many
	Name        string // "pp512 @ d4096 | bf16 c2048 w0"
	Rep, Reps   int    // 1-based repetition; 0 during warmup
	Warmup      bool
	Done        bool // the test just finished
	Elapsed     time.Duration
}

// String is the progress line.
func (p Progress) String() string {
	switch {
	case p.Done:
		return fmt.Sprintf("[%d/%d] %s: done (%s)", p.Test, p.Tests, p.Name, p.Elapsed.Round(time.Millisecond))
	case p.Warmup:
		return fmt.Sprintf("[%d/%d] %s: warmup", p.Test, p.Tests, p.Name)
	}
	return fmt.Sprintf("[%d/%d] %s: rep %d/%d", p.Test, p.Tests, p.Name, p.Rep, p.Reps)
}

// ErrDoesNotFit: a test needs more cache cells than the configuration has.
var ErrDoesNotFit = errors.New("test does not fit in the cache")

// Plan is a checked set of tests, ready to run.
type plan struct {
	model  *inference.Model // prepared by the loader, default cache
	info   *modelinfo.Info
	caches []planCache
	tests  int
	toks   *Tokens
}

type planCache struct {
	numerics string
	spec     CacheSpec
	model    *inference.Model // the loader's model for this cache configuration
	cache    Cache
	tests    []Test
}

// Validate checks the options without loading the model.
func (o *Options) validate() error {
	if o.PTE == "" {
		return errors.New("no .pte given")
	}
	if o.Engine == nil && o.EngineChoice == "" {
		return errors.New("no engine given")
	}
	if o.Reps < 1 {
		return fmt.Errorf("repetitions %d: at least 1", o.Reps)
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"prompt", o.Prompts}, {"generation", o.Gens}, {"depth", o.Depths}} {
		for _, n := range l.v {
			if n < 0 {
				return fmt.Errorf("%s size %d is negative", l.name, n)
			}
		}
	}
	any := false
	for _, n := range append(append([]int{}, o.Prompts...), o.Gens...) {
		any = any || n > 0
	}
	if !any {
		return errors.New("no tests: every prompt and generation size is 0")
	}
	return nil
}

// Prepare loads the model's description, resolves the cache specs and
// checks that every test fits, without running anything. The returned
// error lists every test that does not fit (ErrDoesNotFit).
func Prepare(o Options) (tests []Test, err error) {
	p, err := prepare(&o)
	if err != nil {
		return nil, err
	}
	for _, c := range p.caches {
		tests = append(tests, c.tests...)
	}
	return tests, nil
}

// PrepareModels is the loader's model for each cache configuration the
// options ask for (prepared, not open), in order: what Run measures.
func PrepareModels(o Options) ([]*inference.Model, error) {
	p, err := prepare(&o)
	if err != nil {
		return nil, err
	}
	out := make([]*inference.Model, len(p.caches))
	for i, c := range p.caches {
		out[i] = c.model
	}
	return out, nil
}

func prepare(o *Options) (*plan, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	// The loader reads the model and its tokenizer and checks that they
	// belong together, as it does for a chat.
	nums := o.Numerics
	if len(nums) == 0 {
		nums = []string{""}
	}
	m, err := inference.Prepare(o.PTE, inference.LoadOptions{Engine: o.EngineChoice, Library: o.Library, Getenv: o.Getenv,
		Tokenizer: o.Tokenizer, Hash: true, Numerics: nums[0]})
	if err != nil {
		return nil, err
	}
	info := m.Info
	specs := o.Caches
	if len(specs) == 0 {
		specs = []CacheSpec{{}}
	}
	p := &plan{model: m, info: info}
	var misfits []string
	seen := map[string]bool{}
	for _, num := range nums {
		for _, spec := range specs {
			pc, err := planFor(o, m, num, spec)
			if err != nil {
				return nil, err
			}
			if seen[num+"|"+pc.cache.String()] {
				continue
			}
			seen[num+"|"+pc.cache.String()] = true
			misfits = append(misfits, pc.plan(o.Prompts, o.Gens, o.Depths)...)
			p.tests += len(pc.tests)
			p.caches = append(p.caches, pc)
		}
	}
	if len(misfits) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrDoesNotFit, strings.Join(misfits, "; "))
	}
	var tk *tokenizer.Tokenizer
	if m.Chat != nil {
		tk = m.Chat.HF
	}
	p.toks, err = newTokens(info, tk, tokenizerName(m), seedOr(o.Seed))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// selections are the engines a run opens on: the given one, else one per
// numerics mode (the engine holds the mode), chosen by the mode's first
// open.
type selections struct {
	given  *inference.Selection
	byMode map[string]*inference.Selection
}

// of is the selection for mode, nil until its first open chose one.
func (s selections) of(mode string) *inference.Selection {
	if s.given != nil {
		return s.given
	}
	return s.byMode[mode]
}

// openOn opens m on sel, or on the engine the loader chooses when sel is
// nil, and returns the selection it opened on.
func openOn(ctx context.Context, m *inference.Model, sel *inference.Selection) (*inference.Selection, error) {
	if sel != nil {
		return sel, m.OpenOn(ctx, *sel)
	}
	if err := m.Open(ctx); err != nil {
		return nil, err
	}
	return &m.Engine, nil
}

// ranNumerics is the open model's numerics mode as a Test holds it: ""
// for exact, as results from before the modes read.
func ranNumerics(m *inference.Model) string {
	if n := m.Numerics(); n != engine.NumericsExact {
		return n
	}
	return ""
}

// planFor is the loader's model for one numerics mode and cache spec.
func planFor(o *Options, m *inference.Model, num string, spec CacheSpec) (planCache, error) {
	info := m.Info
	if info.Kind != modelinfo.OffGraph && (spec.Capacity != 0 || spec.Windows != "" || (spec.DType != "" && spec.DType != "bf16")) {
		return planCache{}, fmt.Errorf("%s keeps its cache in the graph: the kv flags do not apply", filepath.Base(o.PTE))
	}
	pm, err := m.WithPolicy(spec.Policy())
	if err != nil {
		return planCache{}, fmt.Errorf("cache %+v: %w", spec, err)
	}
	if pm, err = pm.WithNumerics(num); err != nil {
		return planCache{}, err
	}
	return planCache{numerics: num, spec: spec, model: pm, cache: resolveCache(pm.Cache, info)}, nil
}

// plan lists the configuration's tests, and those that do not fit.
func (pc *planCache) plan(prompts, gens, depths []int) (misfits []string) {
	if len(depths) == 0 {
		depths = []int{0}
	}
	for _, d := range depths {
		var ts []Test
		for _, n := range prompts {
			if n > 0 {
				ts = append(ts, Test{NPrompt: n, NDepth: d, Cache: pc.cache, Numerics: pc.numerics})
			}
		}
		for _, n := range gens {
			if n > 0 {
				ts = append(ts, Test{NGen: n, NDepth: d, Cache: pc.cache, Numerics: pc.numerics})
			}
		}
		for _, t := range ts {
			if pc.cache.Capacity > 0 && t.Tokens() > pc.cache.Capacity {
				misfits = append(misfits, fmt.Sprintf("%s needs %d cache cells, %s holds %d", t.Name(), t.Tokens(), pc.cache, pc.cache.Capacity))
				continue
			}
			pc.tests = append(pc.tests, t)
		}
	}
	return misfits
}

func seedOr(s uint64) uint64 {
	if s == 0 {
		return DefaultSeed
	}
	return s
}

// Run measures every test and returns the results in order. It checks
// every test before running any (an error wrapping ErrDoesNotFit lists the
// misfits). A canceled ctx stops between forwards with ctx's error and the
// results finished so far.
func Run(ctx context.Context, o Options) ([]*Result, error) {
	p, err := prepare(&o)
	if err != nil {
		return nil, err
	}
	m := o.Machine
	if m == nil {
		d := DetectMachine()
		m = &d
	}
	now := o.Clock
	if now == nil {
		now = time.Now
	}
	batch := o.Batch
	if batch == "" {
		batch = NewBatch(now())
	}
	model := Model{
		Path: p.info.Path, Name: modelinfo.DisplayName(p.info.Path), SHA256: p.info.SHA256,
		Size: p.info.Weights.Bytes, Params: p.info.Weights.Params, Kind: string(p.info.Kind),
		Chunk: p.info.PrefillChunk, MaxCtx: p.info.MaxCtxLen, Vocab: p.info.VocabSize,
		TokenSrc: p.toks.Source,
	}
	var out []*Result
	n := 0
	sels := selections{byMode: map[string]*inference.Selection{}} // chosen once per numerics mode, by its first open
	if o.Engine != nil {
		sel := &inference.Selection{Engine: o.Engine, Name: o.Engine.Name(), Device: engine.DeviceOf(o.Engine, engine.HostOS), Reason: "given"}
		if c, err := engine.Canonical(sel.Name); err == nil {
			sel.Name = c
		}
		sels.given = sel
	}
	for _, pc := range p.caches {
		if len(pc.tests) == 0 {
			continue
		}
		loadStart := now()
		sel, err := openOn(ctx, pc.model, sels.of(pc.numerics))
		if err != nil {
			return out, fmt.Errorf("open %s (%s): %w", filepath.Base(o.PTE), pc.cache, err)
		}
		sels.byMode[pc.numerics] = sel
		sess := pc.model.Session
		loadEnd := now()
		if o.Selected != nil {
			o.Selected(*sel)
		}
		backends := o.Backends
		if backends == "" {
			backends = BackendsFor(sel.Name)
		}
		r := runner{ctx: ctx, sess: sess, chunk: pc.model.PrefillChunk(), toks: p.toks, now: now}
		if pc.cache.Capacity == 0 || sess.Capacity() < pc.cache.Capacity {
			pc.cache.Capacity = sess.Capacity()
		}
		for _, t := range pc.tests {
			n++
			t.Cache, t.Numerics = pc.cache, ranNumerics(pc.model)
			if sess.Capacity() > 0 && t.Tokens() > sess.Capacity() {
				sess.Close()
				return out, fmt.Errorf("%w: %s needs %d cache cells, the session holds %d", ErrDoesNotFit, t.Name(), t.Tokens(), sess.Capacity())
			}
			res := &Result{
				Batch: batch, Test: t, Model: model, Engine: sel.Name, Device: sel.Device, Backends: backends,
				Machine: *m, AppVersion: o.AppVersion, Warmup: !o.NoWarmup, Seed: seedOr(o.Seed),
				TestTime: now(), LoadNs: loadEnd.Sub(loadStart).Nanoseconds(), Threads: ThreadsOf(sel.Engine),
				BuildCommit: o.BuildCommit,
			}
			pr := Progress{Test: n, Tests: p.tests, Name: t.Key(), Reps: o.Reps}
			if !o.NoWarmup {
				if o.Progress != nil {
					w := pr
					w.Warmup = true
					o.Progress(w)
				}
				wt := t
				if wt.NGen > 0 {
					wt.NGen = 1 // llama-bench warms tg up with one token
				}
				wt.NDepth = 0
				if _, err := r.rep(wt); err != nil {
					sess.Close()
					return out, fmt.Errorf("%s warmup: %w", t.Name(), err)
				}
			}
			for i := 1; i <= o.Reps; i++ {
				if o.Progress != nil {
					rp := pr
					rp.Rep = i
					o.Progress(rp)
				}
				rep, err := r.rep(t)
				if err != nil {
					sess.Close()
					return out, fmt.Errorf("%s rep %d: %w", t.Name(), i, err)
				}
				rep.ModelLoadStartMs, rep.ModelLoadEndMs = loadStart.UnixMilli(), loadEnd.UnixMilli()
				res.Reps = append(res.Reps, rep)
			}
			res.Ended = now()
			if o.Progress != nil {
				d := pr
				d.Done, d.Rep, d.Elapsed = true, o.Reps, res.Ended.Sub(res.TestTime)
				o.Progress(d)
			}
			out = append(out, res)
			if o.Result != nil {
				o.Result(res)
			}
		}
		if err := sess.Close(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// NewBatch names one invocation's set of results.
func NewBatch(t time.Time) string { return t.UTC().Format("20060102T150405.000000000Z") }

// BackendsFor is the backends column for an engine name.
func BackendsFor(engineName string) string {
	name, err := engine.Canonical(engineName)
	if err != nil {
		return engineName
	}
	return strings.ToUpper(name)
}

type runner struct {
	ctx   context.Context
	sess  engine.Session
	chunk int
	toks  *Tokens
	now   func() time.Time
}

// prefill is the generation loop's prefill (inference.Prefill): ids from
// the session's length in chunks of the model's prefill chunk.
func (r *runner) prefill(ids []int) ([]float32, error) {
	return inference.Prefill(r.ctx, r.sess, ids, r.chunk, nil)
}

// rep runs one repetition of t from a cleared cache.
func (r *runner) rep(t Test) (Rep, error) {
	var rep Rep
	if err := r.sess.Clear(); err != nil {
		return rep, fmt.Errorf("clear: %w", err)
	}
	ids := r.toks.IDs(t.NDepth + t.NPrompt + 1)
	if t.NDepth > 0 {
		if _, err := r.prefill(ids[:t.NDepth]); err != nil {
			return rep, fmt.Errorf("depth: %w", err)
		}
	}
	rep.NumPromptTokens, rep.NumGeneratedTokens = int64(t.NPrompt), int64(t.NGen)
	t0 := r.now()
	rep.InferenceStartMs = t0.UnixMilli()
	var logits []float32
	if t.NPrompt > 0 {
		var err error
		if logits, err = r.prefill(ids[t.NDepth : t.NDepth+t.NPrompt]); err != nil {
			return rep, err
		}
	}
	t1 := r.now()
	rep.PromptEvalEndMs = t1.UnixMilli()
	if t.NPrompt > 0 {
		rep.AggregateModelExecutionTimeMs = t1.Sub(t0).Milliseconds()
	}
	if t.NGen == 0 {
		// pp: the first token is chosen after the timed span.
		if _, err := sampler.Argmax(logits); err != nil {
			return rep, err
		}
		t2 := r.now()
		rep.Ns = t1.Sub(t0).Nanoseconds()
		rep.TTFTNs = t2.Sub(t0).Nanoseconds()
		rep.FirstTokenMs, rep.InferenceEndMs = t2.UnixMilli(), t2.UnixMilli()
		rep.AggregateSamplingTimeMs = t2.Sub(t1).Milliseconds()
	} else {
		tok := int64(ids[t.NDepth+t.NPrompt])
		if logits != nil {
			id, err := sampler.Argmax(logits)
			if err != nil {
				return rep, err
			}
			tok = int64(id)
		}
		pos := int64(r.sess.Len())
		var fwd, samp time.Duration
		in, ps := []int64{0}, []int64{0}
		for i := 0; i < t.NGen; i++ {
			if err := r.ctx.Err(); err != nil {
				return rep, err
			}
			in[0], ps[0] = tok, pos
			f0 := r.now()
			lg, err := r.sess.Forward(r.ctx, in, ps)
			if err != nil {
				return rep, fmt.Errorf("decode step %d at position %d: %w", i, pos, err)
			}
			f1 := r.now()
			id, err := sampler.Argmax(lg)
			if err != nil {
				return rep, fmt.Errorf("decode step %d at position %d: %w", i, pos, err)
			}
			tok = int64(id)
			f2 := r.now()
			fwd += f1.Sub(f0)
			samp += f2.Sub(f1)
			if i == 0 {
				rep.FirstTokenMs = f2.UnixMilli()
				rep.TTFTNs = f2.Sub(t0).Nanoseconds()
			}
			pos++
		}
		t2 := r.now()
		rep.Ns = t2.Sub(t0).Nanoseconds()
		rep.InferenceEndMs = t2.UnixMilli()
		rep.SampleNs = samp.Nanoseconds()
		rep.AggregateSamplingTimeMs = samp.Milliseconds()
		rep.AggregateModelExecutionTimeMs += fwd.Milliseconds()
	}
	mem := r.sess.Memory()
	rep.PeakMem, rep.KVBytes = mem.PeakBytes, mem.KVBytes
	return rep, nil
}
