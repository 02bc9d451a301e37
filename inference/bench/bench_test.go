package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
	"etchat/inference/tokenizer"
	"etchat/internal/fixtures"
)

// checkResult asserts what every measured result must satisfy.
func checkResult(t *testing.T, r *Result, reps int) {
	t.Helper()
	if len(r.Reps) != reps {
		t.Fatalf("%s: %d reps, want %d", r.Test.Name(), len(r.Reps), reps)
	}
	for i, p := range r.Reps {
		if p.Ns <= 0 || p.TTFTNs <= 0 {
			t.Errorf("%s rep %d: ns %d ttft %d not positive", r.Test.Name(), i, p.Ns, p.TTFTNs)
		}
		if p.NumPromptTokens != int64(r.Test.NPrompt) || p.NumGeneratedTokens != int64(r.Test.NGen) {
			t.Errorf("%s rep %d: counts %d/%d", r.Test.Name(), i, p.NumPromptTokens, p.NumGeneratedTokens)
		}
		if !(p.ModelLoadStartMs <= p.ModelLoadEndMs && p.ModelLoadEndMs <= p.InferenceStartMs &&
			p.InferenceStartMs <= p.PromptEvalEndMs && p.PromptEvalEndMs <= p.InferenceEndMs &&
			p.InferenceStartMs <= p.FirstTokenMs && p.FirstTokenMs <= p.InferenceEndMs) {
			t.Errorf("%s rep %d: timestamps out of order: %+v", r.Test.Name(), i, p)
		}
		if p.PeakMem <= 0 || p.KVBytes <= 0 {
			t.Errorf("%s rep %d: memory not reported: peak %d kv %d", r.Test.Name(), i, p.PeakMem, p.KVBytes)
		}
		if got, want := p.TokS(r.Test), float64(r.Test.NPrompt+r.Test.NGen)/(float64(p.Ns)/1e9); math.Abs(got-want) > 1e-9*want {
			t.Errorf("tok/s %v, want %v", got, want)
		}
	}
	if r.AvgTS() <= 0 || math.IsNaN(r.StddevTS()) {
		t.Errorf("%s: avg %v sd %v", r.Test.Name(), r.AvgTS(), r.StddevTS())
	}
}

func TestRunFixtures(t *testing.T) {
	cases := []struct {
		fixture   string
		tokenizer bool
		cache     string
		heavy     bool
	}{
		{fixtures.Llama3, true, "bf16 c128 w0", false},
		{fixtures.Qwen3, true, "", true},
		{fixtures.InGraph, false, "in-graph c128", false},
		{fixtures.BenchBF16, false, "bf16 c2048 w0", true},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			if c.heavy && raceEnabled {
				t.Skip("slow under the race detector; runs without -race")
			}
			o := opts(t, c.fixture, []int{6}, []int{2}, 2)
			o.Depths = []int{0, 3}
			if c.tokenizer {
				o.Tokenizer = fixtures.Tokenizer(t, c.fixture)
			}
			var progress []Progress
			o.Progress = func(p Progress) { progress = append(progress, p) }
			rs := run(t, o)
			want := []string{"pp6", "tg2", "pp6 @ d3", "tg2 @ d3"}
			var got []string
			for _, r := range rs {
				got = append(got, r.Test.Name())
				checkResult(t, r, 2)
				if r.Model.SHA256 == "" || r.Model.Size <= 0 || r.Model.Params <= 0 || r.Engine != "cpu" || r.Device != "cpu" || r.Backends != "CPU" {
					t.Errorf("model/engine not described: %+v %s %s", r.Model, r.Engine, r.Backends)
				}
				if c.cache != "" && r.Test.Cache.String() != c.cache {
					t.Errorf("cache %q, want %q", r.Test.Cache, c.cache)
				}
				if r.Batch != rs[0].Batch || r.Batch == "" {
					t.Errorf("batch %q vs %q", r.Batch, rs[0].Batch)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("tests %v, want %v", got, want)
			}
			// warmup + 2 reps + done, per test
			if len(progress) != 4*len(want) {
				t.Fatalf("%d progress calls, want %d", len(progress), 4*len(want))
			}
			if p := progress[0]; !p.Warmup || p.Test != 1 || p.Tests != 4 {
				t.Errorf("first progress %+v", p)
			}
			if p := progress[len(progress)-1]; !p.Done || p.Test != 4 || !strings.Contains(p.String(), "done") {
				t.Errorf("last progress %+v", p)
			}
		})
	}
}

func TestCacheSpecsAndNoWarmup(t *testing.T) {
	o := opts(t, fixtures.Llama3, []int{8}, nil, 1)
	o.NoWarmup = true
	o.Caches = []CacheSpec{{DType: "bf16"}, {DType: "fp16", Capacity: 64}, {DType: "fp32"}, {Windows: "16"}}
	var warm int
	o.Progress = func(p Progress) {
		if p.Warmup {
			warm++
		}
	}
	rs := run(t, o)
	var caches []string
	for _, r := range rs {
		caches = append(caches, r.Test.Cache.String())
		checkResult(t, r, 1)
	}
	if want := []string{"bf16 c128 w0", "fp16 c64 w0", "fp32 c128 w0", "bf16 c128 w16"}; !slices.Equal(caches, want) {
		t.Fatalf("caches %v, want %v", caches, want)
	}
	if warm != 0 {
		t.Errorf("%d warmups with NoWarmup", warm)
	}
	// fp32 keeps twice the bytes of bf16 per cell.
	if rs[2].Reps[0].KVBytes <= rs[0].Reps[0].KVBytes {
		t.Errorf("fp32 KV bytes %d not above bf16's %d", rs[2].Reps[0].KVBytes, rs[0].Reps[0].KVBytes)
	}
}

func TestDoesNotFitBeforeRunning(t *testing.T) {
	ce := &countingEngine{Engine: cpuEngine()}
	o := opts(t, fixtures.Llama3, []int{100}, []int{20}, 1)
	o.Engine = ce
	o.Depths = []int{0, 110}
	_, err := Run(context.Background(), o)
	if !errors.Is(err, ErrDoesNotFit) {
		t.Fatalf("err %v, want ErrDoesNotFit", err)
	}
	for _, want := range []string{"pp100 @ d110 needs 210", "tg20 @ d110 needs 130", "holds 128"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "pp100 needs") {
		t.Errorf("error %q names a test that fits", err)
	}
	if n := ce.opens.Load(); n != 0 {
		t.Errorf("engine opened %d times before the check", n)
	}
	// A smaller capacity makes a fitting test misfit.
	o.Depths, o.Caches = nil, []CacheSpec{{Capacity: 64}}
	if _, err := Prepare(o); !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "pp100 needs 100") {
		t.Fatalf("capacity 64: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	base := opts(t, fixtures.Llama3, []int{8}, []int{2}, 1)
	cases := map[string]func(o *Options){
		"at least 1":                        func(o *Options) { o.Reps = 0 },
		"negative":                          func(o *Options) { o.Prompts = []int{-1} },
		"no tests":                          func(o *Options) { o.Prompts, o.Gens = []int{0}, nil },
		"no such file":                      func(o *Options) { o.PTE = "/nonexistent/model.pte" },
		"storage dtype \"int4\" is unknown": func(o *Options) { o.Caches = []CacheSpec{{DType: "int4"}} },
		"no engine":                         func(o *Options) { o.Engine = nil },
	}
	for want, mod := range cases {
		o := base
		mod(&o)
		_, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v", want, err)
		}
	}
	o := opts(t, fixtures.InGraph, []int{8}, nil, 1)
	o.Caches = []CacheSpec{{DType: "fp16"}}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "in the graph") {
		t.Errorf("kv flags on an in-graph model: %v", err)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o := opts(t, fixtures.Llama3, []int{8}, []int{4}, 3)
	o.Progress = func(p Progress) {
		if p.Test == 2 && p.Rep == 2 {
			cancel()
		}
	}
	rs, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want canceled", err)
	}
	if len(rs) != 1 || rs[0].Test.Name() != "pp8" {
		t.Fatalf("finished results %d, want the first test", len(rs))
	}
}

func TestTokens(t *testing.T) {
	// With a tokenizer: no added/special ids, all below both vocabularies.
	info, err := modelinfo.Load(fixtures.PTE(fixtures.Llama3), modelinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokPath := fixtures.Tokenizer(t, fixtures.Llama3)
	tk, err := tokenizer.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := NewTokens(info, tokPath, 7)
	if err != nil {
		t.Fatal(err)
	}
	added := map[int]bool{}
	for _, a := range tk.AddedTokens() {
		added[a.ID] = true
	}
	if len(added) == 0 || len(toks.Excluded) < len(added) {
		t.Fatalf("%d added tokens, %d excluded", len(added), len(toks.Excluded))
	}
	ids := toks.IDs(5000)
	for _, id := range ids {
		if id < 0 || id >= info.VocabSize || id >= tk.VocabSize() || added[id] || tk.IsSpecial(id) {
			t.Fatalf("id %d is not an ordinary vocabulary id", id)
		}
	}
	distinct := map[int]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	if len(distinct) < 1000 {
		t.Errorf("only %d distinct ids in 5000", len(distinct))
	}

	// Without a tokenizer (llama-bench-bf16): the published BOS 1 and EOS 2 are avoided.
	binfo, err := modelinfo.Load(fixtures.PTE(fixtures.BenchBF16), modelinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bt, err := NewTokens(binfo, "", DefaultSeed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(bt.Excluded, 1) || !slices.Contains(bt.Excluded, 2) || bt.Vocab != 16384 {
		t.Fatalf("excluded %v vocab %d", bt.Excluded, bt.Vocab)
	}
	for _, id := range bt.IDs(50000) {
		if id == 1 || id == 2 || id < 0 || id >= 16384 {
			t.Fatalf("id %d", id)
		}
	}
	if !strings.Contains(bt.Source, "no tokenizer") {
		t.Errorf("source %q", bt.Source)
	}
	again, _ := NewTokens(binfo, "", DefaultSeed)
	other, _ := NewTokens(binfo, "", DefaultSeed+1)
	if !slices.Equal(again.IDs(500), bt.IDs(500)) {
		t.Error("same seed, different ids")
	}
	if slices.Equal(other.IDs(500), bt.IDs(500)) {
		t.Error("different seed, same ids")
	}
}

// Decode chooses each next token with the sampler's argmax (NaN entries
// skipped, the lower id on ties), as chat's greedy decoding does; a row of
// NaN stops the test with an error instead of feeding token 0.
func TestDecodeArgmax(t *testing.T) {
	nan := float32(math.NaN())
	rows := [][]float32{{nan, 1, 7, 7, -1}, {3, nan, 9, 2, 9}, {nan, nan, nan, -2, -3}}
	o := opts(t, fixtures.Llama3, nil, []int{len(rows)}, 1)
	o.NoWarmup = true
	o.Engine = &fixedLogits{cpuEngine(), rows, nil}
	run(t, o)
	e := o.Engine.(*fixedLogits)
	// The first step's input is a synthetic id; each next one is the argmax
	// of the row before.
	if got := e.inputs[1:]; !slices.Equal(got, []int64{2, 2}) {
		t.Errorf("decode inputs %v, want [2 2] (argmax of %v)", got, rows[:2])
	}
	o.Engine = &fixedLogits{cpuEngine(), [][]float32{{nan, nan}}, nil}
	if _, err := Run(context.Background(), o); !errors.Is(err, sampler.ErrBadLogits) {
		t.Errorf("all-NaN row: %v", err)
	}
}

// fixedLogits answers every forward with the next of rows (then the last
// again) and records each forward's first id.
type fixedLogits struct {
	engine.Engine
	rows   [][]float32
	inputs []int64
}

func (e *fixedLogits) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := e.Engine.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return &fixedSession{s, e}, nil
}

type fixedSession struct {
	engine.Session
	e *fixedLogits
}

func (s *fixedSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	if _, err := s.Session.Forward(ctx, ids, pos); err != nil {
		return nil, err
	}
	i := min(len(s.e.inputs), len(s.e.rows)-1)
	s.e.inputs = append(s.e.inputs, ids[0])
	return s.e.rows[i], nil
}

func TestMeanSD(t *testing.T) {
	m, s := MeanSD([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if m != 5 || math.Abs(s-2.138089935299395) > 1e-12 {
		t.Errorf("mean %v sd %v", m, s)
	}
	if m, s := MeanSD([]float64{3}); m != 3 || s != 0 {
		t.Errorf("one value: %v %v", m, s)
	}
}

func TestTestNames(t *testing.T) {
	for _, c := range []struct {
		t    Test
		want string
	}{
		{Test{NPrompt: 512}, "pp512"},
		{Test{NGen: 128}, "tg128"},
		{Test{NPrompt: 512, NDepth: 4096}, "pp512 @ d4096"},
		{Test{NGen: 32, NDepth: 7}, "tg32 @ d7"},
	} {
		if got := c.t.Name(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}

func TestParseLists(t *testing.T) {
	if got, err := ParseSizes(" 512, 1024,512,0"); err != nil || !slices.Equal(got, []int{512, 1024, 0}) {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"", "abc", "1,,2", "-4", "1.5"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	specs, err := ParseCacheSpecs("bf16,fp16", "0,1024", "8,8,0;")
	if err != nil || len(specs) != 8 || specs[0] != (CacheSpec{DType: "bf16", Windows: "8,8,0"}) ||
		specs[7] != (CacheSpec{DType: "fp16", Capacity: 1024}) {
		t.Fatalf("%v %v", specs, err)
	}
	for _, c := range []struct{ d, c, w, list string }{
		{"int4", "0", "", "dtype"}, {"bf16", "x", "", "capacity"}, {"bf16", "0", "8;a", "windows"}, {"bf16", "0", "8,,0", "windows"},
	} {
		_, err := ParseCacheSpecs(c.d, c.c, c.w)
		var le *CacheListError
		if !errors.As(err, &le) || le.List != c.list {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// The forwards a run makes: chunks of at most the model's prefill chunk
// (32 for the llama3 fixture) after an untimed depth prefill, and single
// tokens for tg, each repetition from a cleared cache.
func TestForwardPattern(t *testing.T) {
	rec := &recordingEngine{Engine: cpuEngine()}
	o := opts(t, fixtures.Llama3, []int{70}, []int{3}, 2)
	o.Depths = []int{40}
	o.Engine = rec
	run(t, o)
	type call = [2]int
	depth := []call{{32, 0}, {8, 32}}
	pp := []call{{32, 40}, {32, 72}, {6, 104}}
	tg := []call{{1, 40}, {1, 41}, {1, 42}}
	var want []call
	want = append(want, call{32, 0}, call{32, 32}, call{6, 64}) // pp warmup: the prompt at depth 0
	for range 2 {
		want = append(append(want, depth...), pp...)
	}
	want = append(want, call{1, 0}) // tg warmup: one step at depth 0
	for range 2 {
		want = append(append(want, depth...), tg...)
	}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("forwards\n got %v\nwant %v", rec.calls, want)
	}
	if rec.clear != 6 {
		t.Errorf("%d clears, want one per repetition and warmup (6)", rec.clear)
	}
}

// A stored run of gemma4-tiny records its cache per cache: six windows (of
// ten layers), and the six caches' KV bytes, counted once though the
// sharing layers write caches 4 and 5 again.
func TestRunGemma4CachesNotLayers(t *testing.T) {
	if raceEnabled {
		t.Skip("slow under the race detector; runs without -race")
	}
	o := opts(t, fixtures.Gemma4, []int{6}, []int{2}, 1)
	rs := run(t, o)
	for _, r := range rs {
		checkResult(t, r, 1)
		if got := r.Test.Cache.String(); got != "bf16 c128 w8,8,8,8,8,0" {
			t.Errorf("%s: cache %q", r.Test.Name(), got)
		}
		// 5 rings of 15 rows × 1 head × 16 and a flat pool of 128 rows × 2 × 32, K and V, bf16.
		if kv := r.Reps[0].KVBytes; kv != (5*15*16+128*2*32)*2*2 {
			t.Errorf("%s: KV bytes %d, want %d", r.Test.Name(), kv, (5*15*16+128*2*32)*2*2)
		}
	}
}
