package quality

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/engines"
	"etchat/internal/fixtures"
)

var bg = context.Background()

func TestMain(m *testing.M) {
	engines.Register()
	os.Exit(m.Run())
}

// cpuFP32 is the CPU engine with an fp32 KV cache: the references' own
// arithmetic (the default bf16 cache moves the NLL in the third digit).
var cpuFP32 = inference.LoadOptions{Engine: "cpu", Policy: func() kvcache.Policy {
	p := kvcache.DefaultPolicy()
	p.StorageDType = "fp32"
	return p
}()}

// load opens a fixture on the CPU engine with an fp32 cache.
func load(t *testing.T, name string) *inference.Model {
	t.Helper()
	m, err := inference.Load(bg, filepath.Join(fixtures.Unpacked(t, name), "model.pte"), cpuFP32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// refLog is the float64 log-softmax of a row, written independently of
// logSoftmax: log p_i = x_i - max - log Σ exp(x_j - max).
func refLog(row []float32, id int) float64 {
	mx := math.Inf(-1)
	for _, x := range row {
		mx = math.Max(mx, float64(x))
	}
	var s float64
	for _, x := range row {
		s += math.Exp(float64(x) - mx)
	}
	return float64(row[id]) - mx - math.Log(s)
}

type refCase struct {
	Kind       string `json:"kind"`
	InputIDs   []int  `json:"input_ids"`
	GreedyIDs  []int  `json:"greedy_ids"`
	LogitsFile string `json:"prefill_last_logits_file"`
}

// TestFirstTokenNLLMatchesReference: for every reference case of the
// fixtures with a tokenizer, the window scorer's negative log-likelihood
// of the first greedy token (a window ending in that token, scored through
// the feeder and accumulator) equals the one from PyTorch's last-prefill
// logits.
func TestFirstTokenNLLMatchesReference(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.Llama3Q4, fixtures.Qwen3Q8, fixtures.Gemma4} {
		t.Run(name, func(t *testing.T) {
			if raceOn && name == fixtures.Gemma4 {
				t.Skip("skipping: gemma4 under -race (run without it)")
			}
			var ref struct{ Cases []refCase }
			fixtures.Reference(t, name, &ref)
			m := load(t, name)
			n := 0
			for _, c := range ref.Cases {
				if c.LogitsFile == "" || len(c.GreedyIDs) == 0 {
					continue
				}
				n++
				want := -refLog(fixtures.Logits(t, name, c.LogitsFile), c.GreedyIDs[0])
				tokens := append(append([]int(nil), c.InputIDs...), c.GreedyIDs[0])
				if len(tokens) < 4 {
					continue
				}
				plan, err := NewPlan(len(tokens), len(tokens), m.PrefillChunk(), nil)
				if err != nil {
					t.Fatal(err)
				}
				a := &accum{lp: make([]float64, m.Session.Vocab())}
				f := &feeder{sess: m.Session, plan: plan, tokens: tokens, vocab: m.Session.Vocab()}
				var got float64
				err = f.run(bg, 0, func(w, pos int, l []float32, target int) error {
					before := a.nll.sum
					if err := a.add(w, pos, l, target); err != nil {
						return err
					}
					if pos == len(c.InputIDs)-1 {
						if target != c.GreedyIDs[0] {
							t.Errorf("%s: position %d predicts %d, want %d", c.LogitsFile, pos, target, c.GreedyIDs[0])
						}
						got = a.nll.sum - before
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(got-want) > 1e-3 { // logits within the fixtures' 1e-4
					t.Errorf("%s: NLL of %d = %.6f, reference %.6f", c.LogitsFile, c.GreedyIDs[0], got, want)
				}
			}
			if n == 0 {
				t.Fatal("no case with prefill logits")
			}
		})
	}
}

// independentPPL scores the plan's windows on s without the package's
// feeder: one ForwardAll per chunk of every window, each row through
// refLog, and returns exp(mean NLL) and how many it scored.
func independentPPL(t *testing.T, s engine.Session, tokens []int, ctx, chunk int, bos []int) (float64, int) {
	var sum float64
	n := 0
	for w := 0; (w+1)*ctx <= len(tokens); w++ {
		ids := make([]int64, ctx)
		for i := range ids {
			ids[i] = int64(tokens[w*ctx+i])
		}
		for i, b := range bos {
			ids[i] = int64(b)
		}
		if err := s.Clear(); err != nil {
			t.Fatal(err)
		}
		for st := 0; st < ctx-1; st += chunk {
			e := min(st+chunk, ctx-1)
			pos := make([]int64, e-st)
			for i := range pos {
				pos[i] = int64(st + i)
			}
			out, err := s.ForwardAll(bg, ids[st:e], pos)
			if err != nil {
				t.Fatal(err)
			}
			V := s.Vocab()
			for i := range pos {
				p := st + i
				if p >= ctx/2 {
					sum -= refLog(out[i*V:(i+1)*V], int(ids[p+1]))
					n++
				}
			}
		}
	}
	return math.Exp(sum / float64(n)), n
}

// TestPerplexityMatchesFloat64LogSoftmax: Run's PPL over the bundled text
// on the fp32 CPU engine equals one computed from the same engine's rows
// with a plain float64 log-softmax, window by window.
func TestPerplexityMatchesFloat64LogSoftmax(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	text := DefaultText[:2500]
	r, err := Run(bg, Options{PTE: filepath.Join(dir, "model.pte"), Load: cpuFP32,
		Text: text, TextSource: DefaultTextSource, Ctx: 64})
	if err != nil {
		t.Fatal(err)
	}
	m := load(t, fixtures.Llama3)
	tokens := append(m.Chat.HF.SpecialPrefix(), m.Chat.HF.Encode(text, false)...)
	want, n := independentPPL(t, m.Session, tokens, 64, m.PrefillChunk(), m.Chat.HF.SpecialPrefix())
	t.Logf("%s (%d windows of %d, %d tokens in the text, %.1f tok/s)", r, r.Windows, r.Ctx, r.Tokens, r.TokS)
	if r.Scored != n || r.Windows != len(tokens)/64 || r.Scored != r.Windows*31 {
		t.Errorf("scored %d tokens in %d windows; the independent count is %d of %d tokens", r.Scored, r.Windows, n, len(tokens))
	}
	if math.Abs(r.PPL-want) > 1e-9*want {
		t.Errorf("PPL %.12g, float64 log-softmax %.12g", r.PPL, want)
	}
	if r.PPLErr <= 0 || r.PPLErr > r.PPL || r.Stepwise || r.KLD != nil || r.TokS <= 0 {
		t.Errorf("result %+v", r)
	}
	if n := len(m.Chat.HF.Encode(DefaultText, false)); n < 2000 {
		t.Errorf("the bundled text is %d tokens, want a few thousand", n)
	}
}

// lastRowOnly is a fake at the engine boundary: a real session whose
// ForwardAll returns only the last row, as programs exported with one
// logits row do.
type lastRowOnly struct{ engine.Session }

func (s lastRowOnly) ForwardAll(ctx context.Context, ids, pos []int64) ([]float32, error) {
	return s.Session.Forward(ctx, ids, pos)
}

// unsupportedRows is a fake whose ForwardAll runs the step and then
// answers ErrUnsupported, as the native library does for a program that
// returns one row.
type unsupportedRows struct{ engine.Session }

func (s unsupportedRows) ForwardAll(ctx context.Context, ids, pos []int64) ([]float32, error) {
	if _, err := s.Session.Forward(ctx, ids, pos); err != nil {
		return nil, err
	}
	return nil, errors.Join(engine.ErrUnsupported, errors.New("logits of one row"))
}

// TestStepwiseWhenOneRow: a program that gives one row per forward is
// scored a token at a time, says so, and scores what the all-rows path
// scores; with NoStepwise it is refused with the reason.
func TestStepwiseWhenOneRow(t *testing.T) {
	m := load(t, fixtures.Llama3)
	tokens := append(m.Chat.HF.SpecialPrefix(), m.Chat.HF.Encode(DefaultText[:1600], false)...)
	plan, err := NewPlan(len(tokens), 48, m.PrefillChunk(), m.Chat.HF.SpecialPrefix())
	if err != nil {
		t.Fatal(err)
	}
	score := func(s engine.Session, refuse bool) (float64, *feeder, error) {
		a := &accum{lp: make([]float64, s.Vocab())}
		f := &feeder{sess: s, plan: plan, tokens: tokens, vocab: s.Vocab(), refuse: refuse}
		for w := range plan.Windows {
			if err := f.run(bg, w, a.add); err != nil {
				return 0, f, err
			}
		}
		if int(a.nll.n) != plan.Scored() {
			t.Errorf("scored %d, plan %d", int(a.nll.n), plan.Scored())
		}
		p, _ := ppl(&a.nll)
		return p, f, nil
	}
	all, f, err := score(m.Session, false)
	if err != nil || f.stepwise {
		t.Fatalf("all rows: %v, stepwise %v", err, f.stepwise)
	}
	for _, s := range []engine.Session{lastRowOnly{m.Session}, unsupportedRows{m.Session}} {
		got, f, err := score(s, false)
		if err != nil || !f.stepwise || f.why == "" {
			t.Fatalf("%T: %v, stepwise %v (%q)", s, err, f.stepwise, f.why)
		}
		// One token per step sums in another order than a chunk: the
		// fp32 rows differ in their last bits only.
		if math.Abs(got-all) > 1e-4*all {
			t.Errorf("%T: PPL %.8f step by step, %.8f from all rows", s, got, all)
		}
		t.Logf("%T: %s", s, f.why)
		if _, _, err := score(s, true); !errors.Is(err, ErrRowsUnavailable) {
			t.Errorf("%T with NoStepwise: %v, want ErrRowsUnavailable", s, err)
		}
	}
}

// TestKLDAgainstItselfIsZero: a model against its own saved logits, full
// rows and top-k, has a KLD of (almost) zero — the uint16 rows' rounding
// only — the same top token everywhere and the same PPL as its base.
func TestKLDAgainstItselfIsZero(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Qwen3)
	pte := filepath.Join(dir, "model.pte")
	text := DefaultText[:1800]
	for _, k := range []int{0, 16} {
		if raceOn && k == 0 {
			continue // full rows: 150k values a token, slow under -race
		}
		base := filepath.Join(t.TempDir(), "base.etl")
		o := Options{PTE: pte, Load: inference.LoadOptions{Engine: "cpu"}, Text: text, Ctx: 64, SaveLogits: base, TopK: k}
		r0, err := Run(bg, o)
		if err != nil {
			t.Fatal(err)
		}
		o.SaveLogits, o.KLBase, o.Ctx = "", base, 0 // the window comes from the base
		r, err := Run(bg, o)
		if err != nil {
			t.Fatal(err)
		}
		kl := r.KLD
		t.Logf("top_k %d: %s; max %.3g, Δp rms %.3g%%", k, r, kl.Max, kl.DeltaPRMS)
		if kl.SameTop != 100 || kl.Mean < 0 || kl.Mean > 1e-7 || kl.Max > 1e-6 || kl.DeltaPRMS > 1e-4 || len(kl.Agree) != r.Scored {
			t.Errorf("top_k %d: %+v", k, *kl)
		}
		if math.Abs(kl.BasePPL-r0.PPL) > 1e-5*r0.PPL || r.Ctx != 64 || !kl.Base.SameTokenizer || kl.Base.TopK != k {
			t.Errorf("top_k %d: base PPL %v, its own run %v; ctx %d; base %+v", k, kl.BasePPL, r0.PPL, r.Ctx, kl.Base)
		}
	}
}

// TestBaseRefused: a base over other tokens, another window, another
// vocabulary, or a file cut short is refused with a typed error.
func TestBaseRefused(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	pte := filepath.Join(dir, "model.pte")
	base := filepath.Join(t.TempDir(), "base.etl")
	cpu := inference.LoadOptions{Engine: "cpu"}
	if _, err := Run(bg, Options{PTE: pte, Load: cpu, Text: DefaultText[:2000], Ctx: 32, SaveLogits: base, TopK: 4}); err != nil {
		t.Fatal(err)
	}
	var mis *BaseMismatchError
	_, err := Run(bg, Options{PTE: pte, Load: cpu, Text: DefaultText[2000:4000], KLBase: base})
	if !errors.As(err, &mis) || mis.What != "tokens" {
		t.Errorf("other text: %v", err)
	}
	_, err = Run(bg, Options{PTE: pte, Load: cpu, Text: DefaultText[:2000], Ctx: 64, KLBase: base})
	if !errors.As(err, &mis) || mis.What != "window" {
		t.Errorf("other window: %v", err)
	}
	qwen := filepath.Join(fixtures.Unpacked(t, fixtures.Qwen3), "model.pte")
	_, err = Run(bg, Options{PTE: qwen, Load: cpu, Text: DefaultText[:2000], KLBase: base})
	if !errors.As(err, &mis) || mis.What != "vocabulary" {
		t.Errorf("other model: %v", err)
	}
	b, _ := os.ReadFile(base)
	cut := filepath.Join(t.TempDir(), "cut.etl")
	os.WriteFile(cut, b[:len(b)-40], 0o644)
	var bad *BaseFormatError
	if _, err := Run(bg, Options{PTE: pte, Load: cpu, Text: DefaultText[:2000], KLBase: cut}); !errors.As(err, &bad) {
		t.Errorf("a cut file: %v", err)
	}
	os.WriteFile(cut, []byte("not a base"), 0o644)
	if _, err := Run(bg, Options{PTE: pte, Load: cpu, Text: DefaultText[:2000], KLBase: cut}); !errors.As(err, &bad) {
		t.Errorf("not a base: %v", err)
	}
}

// TestStopKeepsTheWindowsDone: cancelling after the first window returns
// that window's figures, Stopped, the context's error, and no half-written
// logits file.
func TestStopKeepsTheWindowsDone(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	save := filepath.Join(t.TempDir(), "base.etl")
	r, err := Run(ctx, Options{PTE: filepath.Join(dir, "model.pte"), Load: inference.LoadOptions{Engine: "cpu"}, Text: DefaultText,
		Ctx: 32, SaveLogits: save, Progress: func(p Progress) {
			if p.Window == 1 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || r == nil || !r.Stopped || r.Scored != r.Ctx-1-r.First || r.PPL <= 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(save)); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestTopK(t *testing.T) {
	lp := []float64{-3, -1, -2, -1, -5, -0.5}
	got := topK(nil, lp, 3)
	if len(got) != 3 || got[0] != 5 || got[1] != 1 || got[2] != 3 {
		t.Errorf("topK = %v", got)
	}
	if got := topK(nil, lp, 10); len(got) != 6 || got[5] != 4 {
		t.Errorf("topK(10) = %v", got)
	}
}
