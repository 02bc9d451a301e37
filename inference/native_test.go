package inference

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/mlx"
	"etchat/inference/modelinfo"
	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
)

// The native engine (ExecuTorch + the MLX delegate, through our C ABI
// library) and the CPU engine run the same tables here: each is the
// other's oracle, and both answer to PyTorch's references. The native
// subtests need the real library (scripts/build-native): outside CI they
// skip loudly when it is missing, under CI=true they fail.

type engineUnderTest struct {
	name string
	open func(t *testing.T) engine.Engine
}

var nativeEngines = map[string]engine.Engine{}

func engineCPU(*testing.T) engine.Engine { return cpu.New(cpu.Options{}) }

// engineNative is one engine per library for the whole test binary: the
// library is loaded once per process, as in the app.
func engineNative(t *testing.T) engine.Engine {
	t.Helper()
	lib := nativelib.Require(t)
	if e, ok := nativeEngines[lib]; ok {
		return e
	}
	e, err := mlx.New(mlx.Options{Library: lib})
	if err != nil {
		t.Fatalf("native engine from %s: %v", lib, err)
	}
	nativeEngines[lib] = e
	return e
}

var bothEngines = []engineUnderTest{{"cpu", engineCPU}, {"mlx", engineNative}}

// forEachEngine runs f as a subtest per engine.
func forEachEngine(t *testing.T, f func(t *testing.T, e engine.Engine)) {
	for _, eu := range bothEngines {
		t.Run(eu.name, func(t *testing.T) { f(t, eu.open(t)) })
	}
}

// fixtureConfig is the runner-default cache config of a fixture with the
// given KV storage type.
func fixtureConfig(t *testing.T, name, kvDType string) (*modelinfo.Info, *kvcache.Config) {
	t.Helper()
	info, err := modelinfo.Load(fixtures.PTE(name), modelinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != modelinfo.OffGraph {
		return info, nil
	}
	policy := kvcache.DefaultPolicy()
	policy.StorageDType = kvDType
	cfg, err := info.CacheConfig(policy)
	if err != nil {
		t.Fatal(err)
	}
	return info, cfg
}

func openOn(t *testing.T, e engine.Engine, name, kvDType string) (engine.Session, *kvcache.Config) {
	t.Helper()
	_, cfg := fixtureConfig(t, name, kvDType)
	s, err := e.Open(bg, fixtures.PTE(name), cfg)
	if err != nil {
		t.Fatalf("%s on %s: %v", name, e.Name(), err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cfg
}

// refLogitsCase is what the reference-logits tests need of a case.
type refLogitsCase struct {
	Kind       string `json:"kind"`
	Prompt     string `json:"prompt"`
	InputIDs   []int  `json:"input_ids"`
	GreedyIDs  []int  `json:"greedy_ids"`
	LogitsFile string `json:"prefill_last_logits_file"`
	StablePref int    `json:"stable_prefix_len"`
}

// prefillChunks runs ids in chunks of chunk from the cache's current length and
// returns the last position's logits (a copy).
func prefillChunks(t *testing.T, s engine.Session, ids []int, chunk int) []float32 {
	t.Helper()
	var last []float32
	for i := 0; i < len(ids); i += chunk {
		j := min(i+chunk, len(ids))
		tok := make([]int64, j-i)
		pos := make([]int64, j-i)
		for k := range tok {
			tok[k] = int64(ids[i+k])
			pos[k] = int64(s.Len() + k)
		}
		l, err := s.Forward(bg, tok, pos)
		if err != nil {
			t.Fatalf("forward at %d: %v", s.Len(), err)
		}
		last = l
	}
	return append([]float32(nil), last...)
}

func argmaxOf(l []float32) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}

// greedy decodes n tokens after a prefill whose last logits are first.
func greedy(t *testing.T, s engine.Session, first []float32, n int) []int {
	t.Helper()
	out := []int{argmaxOf(first)}
	for len(out) < n {
		l, err := s.Forward(bg, []int64{int64(out[len(out)-1])}, []int64{int64(s.Len())})
		if err != nil {
			t.Fatalf("decode at %d: %v", s.Len(), err)
		}
		out = append(out, argmaxOf(l))
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// The tiny fixtures with fp32 activations: every case's greedy ids and the
// last prefill logits within 1e-4 of PyTorch's (fp32 KV), on both engines.
// The twins written with a newer ExecuTorch's metadata (one of them
// returning the last position's logits only) have llama3-tiny-q4's
// references.
var referenceFixtures = []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.Llama3Q4, fixtures.Qwen3Q8, fixtures.Gemma4,
	fixtures.Llama3Q4Meta2, fixtures.Llama3Q4Last}

// chatFor is the --chat a fixture's reference was rendered with: auto (the
// model's own template) but for gemma4-tiny, whose stand-in tokenizer
// carries gemma3's template while its references use the gemma4 turns.
func chatFor(name string) string {
	if name == fixtures.Gemma4 {
		return "gemma4"
	}
	return "auto"
}

func TestNativeReferenceCases(t *testing.T) {
	for _, name := range referenceFixtures {
		t.Run(name, func(t *testing.T) {
			var ref struct{ Cases []refLogitsCase }
			fixtures.Reference(t, name, &ref)
			forEachEngine(t, func(t *testing.T, e engine.Engine) {
				s, cfg := openOn(t, e, name, "fp32")
				tol := 1e-4
				if name == fixtures.Gemma4 && e.Name() != "cpu" {
					// MLX's fp32 kernels sum in another order, and these weights
					// amplify it: MLX alone moves chat2's logits by 6.9e-5
					// between a prefill in chunks of 8 and one of 1, and it ends
					// 1.1e-4 from PyTorch's (the Go engine: 2e-5; HF's own cached
					// and uncached runs differ by up to 7e-4, the fixture's
					// README). The ids are exact.
					tol = 2e-4
				}
				for i, c := range ref.Cases {
					if err := s.Clear(); err != nil {
						t.Fatal(err)
					}
					logits := prefillChunks(t, s, c.InputIDs, cfg.MaxWrite)
					if d := maxAbsDiff(logits, fixtures.Logits(t, name, c.LogitsFile)); d > tol {
						t.Errorf("case %d: last prefill logits differ by %g (> %g)", i, d, tol)
					}
					if got := greedy(t, s, logits, len(c.GreedyIDs)); !slices.Equal(got, c.GreedyIDs) {
						t.Errorf("case %d (%s): %v, want %v", i, c.Kind, got, c.GreedyIDs)
					}
				}
			})
		})
	}
}

// From text: the chat cases through the tokenizer, template and the
// generation loop, on both engines (the quantized fixtures use their float
// siblings' tokenizers, byte-identical).
func TestNativeChatCasesFromText(t *testing.T) {
	for _, name := range referenceFixtures {
		t.Run(name, func(t *testing.T) {
			if name == fixtures.Gemma4 {
				heavyGemma4(t) // TestNativeReferenceCases has its ids under -race
			}
			var ref reference
			fixtures.Reference(t, name, &ref)
			dir := fixtures.Unpacked(t, name)
			info, _ := fixtureConfig(t, name, "fp32")
			chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, chatFor(name), info.EOSIDs)
			if err != nil {
				t.Fatal(err)
			}
			forEachEngine(t, func(t *testing.T, e engine.Engine) {
				s, cfg := openOn(t, e, name, "fp32")
				for i, c := range ref.Cases {
					if c.Kind != "chat" {
						continue
					}
					ids, err := chat.Encode(c.Prompt)
					if err != nil || !slices.Equal(ids, c.InputIDs) {
						t.Fatalf("case %d: encoded %v (%v), want %v", i, ids, err, c.InputIDs)
					}
					if err := s.Clear(); err != nil {
						t.Fatal(err)
					}
					res, err := Generate(bg, s, ids, Options{MaxNewTokens: len(c.GreedyIDs), IgnoreEOS: true,
						StopIDs: chat.StopIDs, PrefillChunk: cfg.MaxWrite, Decoder: chat.Tokenizer})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(res.GeneratedIDs, c.GreedyIDs) || res.Text != c.Text {
						t.Errorf("case %d: %v %q, want %v %q", i, res.GeneratedIDs, res.Text, c.GreedyIDs, c.Text)
					}
				}
			})
		})
	}
}

// bf16 and fp16 KV storage: the same tolerance as the CPU engine's own
// test (0.1 on the last prefill logits; greedy ids equal where the
// reference margin allows), and the two engines give the same tokens.
// gemma4-tiny's bounds are wider, for the reason TestGemma4KVStorage
// (inference/cpu) gives: 0.6 at bf16 and 0.1 at fp16.
func TestNativeKVStorageAgrees(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Gemma4} {
		var ref struct{ Cases []refLogitsCase }
		fixtures.Reference(t, name, &ref)
		c := ref.Cases[len(ref.Cases)-1]
		for _, dt := range []string{"bf16", "fp16"} {
			tol := 0.1
			if name == fixtures.Gemma4 && dt == "bf16" {
				tol = 0.6
			}
			t.Run(name+"/"+dt, func(t *testing.T) {
				if name == fixtures.Gemma4 {
					heavyGemma4(t)
				}
				got := map[string][]int{}
				forEachEngine(t, func(t *testing.T, e engine.Engine) {
					s, cfg := openOn(t, e, name, dt)
					logits := prefillChunks(t, s, c.InputIDs, cfg.MaxWrite)
					if d := maxAbsDiff(logits, fixtures.Logits(t, name, c.LogitsFile)); d > tol {
						t.Errorf("%s KV: last prefill logits differ by %g (> %g)", dt, d, tol)
					}
					got[e.Name()] = greedy(t, s, logits, len(c.GreedyIDs))
				})
				agree(t, got)
			})
		}
	}
}

// agree fails when the engines that ran produced different ids.
func agree(t *testing.T, got map[string][]int) {
	t.Helper()
	var first string
	for name, ids := range got {
		if first == "" {
			first = name
			continue
		}
		if !slices.Equal(ids, got[first]) {
			t.Errorf("engines disagree:\n%s: %v\n%s: %v", first, got[first], name, ids)
		}
	}
}

// A decode to full capacity on gemma3: its ring layers (window 8) wrap many
// times; both engines must produce the same tokens all the way, at a small
// capacity so the ring wraps and the test stays short.
func TestNativeDecodeToCapacityAgrees(t *testing.T) {
	got := map[string][]int{}
	forEachEngine(t, func(t *testing.T, e engine.Engine) {
		info, err := modelinfo.Load(fixtures.PTE(fixtures.Gemma3), modelinfo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		policy := kvcache.DefaultPolicy()
		policy.StorageDType = "fp32"
		cfg, err := info.CacheConfig(policy)
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.Open(bg, fixtures.PTE(fixtures.Gemma3), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var ref struct{ Cases []refLogitsCase }
		fixtures.Reference(t, fixtures.Gemma3, &ref)
		first := prefillChunks(t, s, ref.Cases[0].InputIDs, cfg.MaxWrite)
		ids := greedy(t, s, first, s.Capacity()-s.Len()+1)
		if s.Len() != s.Capacity() {
			t.Fatalf("decoded to %d of %d", s.Len(), s.Capacity())
		}
		got[e.Name()] = ids
	})
	agree(t, got)
}

// The in-graph twin: its reference (the off-graph model's greedy ids) on
// both engines; the native library registers aten::copy_ for it.
func TestNativeInGraph(t *testing.T) {
	var ref reference
	fixtures.Reference(t, fixtures.Llama3, &ref)
	forEachEngine(t, func(t *testing.T, e engine.Engine) {
		s, err := e.Open(bg, fixtures.PTE(fixtures.InGraph), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i, c := range ref.Cases[:2] {
			if i > 0 {
				// In-graph programs cannot clear: a fresh session per case.
				s.Close()
				if s, err = e.Open(bg, fixtures.PTE(fixtures.InGraph), nil); err != nil {
					t.Fatal(err)
				}
			}
			got := greedy(t, s, prefillChunks(t, s, c.InputIDs, 32), len(c.GreedyIDs))
			if !slices.Equal(got, c.GreedyIDs) {
				t.Errorf("case %d: %v, want %v", i, got, c.GreedyIDs)
			}
		}
	})
}

// The multiturn reference with its rewind, on both engines, through a
// Conversation (the same steps as TestFixtureMultiturnConversation).
func TestNativeMultiturn(t *testing.T) {
	for _, name := range []string{fixtures.Gemma3, fixtures.Llama3, fixtures.Llama3Q4, fixtures.Llama3Q4Last} {
		t.Run(name, func(t *testing.T) {
			var ref reference
			fixtures.Reference(t, name, &ref)
			mt := ref.Multiturn
			dir := fixtures.Unpacked(t, name)
			info, _ := fixtureConfig(t, name, "fp32")
			chat, err := LoadChat(filepath.Join(dir, "tokenizer.json"), dir, "auto", info.EOSIDs)
			if err != nil {
				t.Fatal(err)
			}
			forEachEngine(t, func(t *testing.T, e engine.Engine) {
				s, cfg := openOn(t, e, name, "fp32")
				c, err := NewConversation(s, ConversationOptions{Tokenizer: chat.Tokenizer, Template: chat.Template, Cache: cfg,
					Generation: Options{MaxNewTokens: 8, IgnoreEOS: true, StopIDs: chat.StopIDs, TurnEndIDs: chat.TurnEndIDs, PrefillChunk: cfg.MaxWrite}})
				if err != nil {
					t.Fatal(err)
				}
				r1, err := c.Send(bg, mt.Turn1.Messages[0].Content, nil)
				if err != nil || !slices.Equal(r1.GeneratedIDs, mt.Turn1.GeneratedIDs) {
					t.Fatalf("turn 1: %v (%v), want %v", r1.GeneratedIDs, err, mt.Turn1.GeneratedIDs)
				}
				replyAsText(t, c) // the reference re-renders turn 1's reply from its text
				r2, err := c.Send(bg, mt.Turn2.Messages[2].Content, nil)
				if err != nil || !slices.Equal(r2.GeneratedIDs, mt.Turn2.GeneratedIDs) {
					t.Fatalf("turn 2: %v (%v), want %v", r2.GeneratedIDs, err, mt.Turn2.GeneratedIDs)
				}
				if r2.Reused != mt.Turn2.CommonPrefixLen {
					t.Errorf("turn 2 reused %d, want %d", r2.Reused, mt.Turn2.CommonPrefixLen)
				}
				if _, err := c.UndoTurn(bg); err != nil {
					t.Fatal(err)
				}
				r3, err := c.Regenerate(bg, nil)
				if err == nil {
					// After undoing turn 2 the last turn is turn 1's reply.
					if !slices.Equal(r3.GeneratedIDs, mt.Turn1.GeneratedIDs) {
						t.Errorf("regenerated turn 1: %v, want %v", r3.GeneratedIDs, mt.Turn1.GeneratedIDs)
					}
				}
				if err := s.Rewind(0); err != nil {
					t.Errorf("rewind to 0: %v", err)
				}
			})
		})
	}
}

// The benchmark models, once per CI run without -race (scripts/test sets
// ETCHAT_BENCH_MODELS=1): llama-bench-bf16's p20/p300 greedy ids (bf16
// eager, the reference's bf16 tolerance) and llama-bench-q4's stable
// prefix, on both engines.
func TestNativeBenchModels(t *testing.T) {
	if os.Getenv("ETCHAT_BENCH_MODELS") == "" {
		t.Skip("ETCHAT_BENCH_MODELS unset (scripts/test runs these without -race)")
	}
	var bf struct {
		Prompts []struct {
			Name     string `json:"name"`
			InputIDs []int  `json:"input_ids"`
			BF16     struct {
				GreedyIDs []int `json:"greedy_ids"`
			} `json:"bf16_eager"`
		}
	}
	fixtures.Reference(t, fixtures.BenchBF16, &bf)
	var q4 struct{ Cases []refLogitsCase }
	fixtures.Reference(t, fixtures.BenchQ4, &q4)
	forEachEngine(t, func(t *testing.T, e engine.Engine) {
		s, cfg := openOn(t, e, fixtures.BenchBF16, "bf16")
		for _, p := range bf.Prompts {
			if err := s.Clear(); err != nil {
				t.Fatal(err)
			}
			got := greedy(t, s, prefillChunks(t, s, p.InputIDs, cfg.MaxWrite), len(p.BF16.GreedyIDs))
			if !slices.Equal(got, p.BF16.GreedyIDs) {
				t.Errorf("bench-bf16 %s: %v, want %v", p.Name, got, p.BF16.GreedyIDs)
			}
		}
		q, qcfg := openOn(t, e, fixtures.BenchQ4, "bf16")
		c := q4.Cases[0]
		got := greedy(t, q, prefillChunks(t, q, c.InputIDs, qcfg.MaxWrite), c.StablePref)
		want := c.GreedyIDs[:c.StablePref]
		if e.Name() != "cpu" && mlxCPUbf16QMM(e) {
			// MLX's CPU backend accumulates a bf16 quantized matmul in bf16
			// (mlx/backend/cpu/quantized.cpp, _qmm_t: "T sum = 0"), which
			// moves the first token off PyTorch's (docs/native-engine.md has
			// the experiment). Should a new MLX fix it, this fails: update
			// the docs and hold it to the reference like the others.
			if got[0] == want[0] {
				t.Errorf("bench-q4 on MLX CPU now starts like PyTorch (%v): the documented bf16 deviation is gone", got)
			}
			t.Logf("MLX CPU, bf16 q4: %v; PyTorch: %v", got, want)
		} else if !slices.Equal(got, want) {
			t.Errorf("bench-q4 stable prefix: %v, want %v", got, want)
		}
	})
}

// mlxCPUbf16QMM reports whether e is the native engine on MLX's CPU
// backend, whose bf16 quantized matmul accumulates in bf16.
func mlxCPUbf16QMM(e engine.Engine) bool {
	d, ok := e.(interface{ Device() string })
	return ok && d.Device() == "cpu"
}

// A program that returns the last position's logits only (the
// llama3-tiny-q4-last twin, get_logits_to_keep_mode 1) on both engines:
// Forward's one row is the mode-0 twin's last row; ForwardAll of a step of
// several tokens is refused before it runs (engine.ErrLastRowOnly, the
// cache unchanged), and a token at a time gives every position's row, the
// same as the mode-0 twin's ForwardAll of the whole prompt.
func TestLogitsLastRowOnly(t *testing.T) {
	var ref struct{ Cases []refLogitsCase }
	fixtures.Reference(t, fixtures.Llama3Q4Last, &ref)
	ids := ref.Cases[0].InputIDs[:12]
	tok := make([]int64, len(ids))
	pos := make([]int64, len(ids))
	for i, id := range ids {
		tok[i], pos[i] = int64(id), int64(i)
	}
	forEachEngine(t, func(t *testing.T, e engine.Engine) {
		full, _ := openOn(t, e, fixtures.Llama3Q4Meta2, "fp32")
		last, _ := openOn(t, e, fixtures.Llama3Q4Last, "fp32")
		if m := engine.SessionLogitsMode(last); m != engine.LogitsLast {
			t.Errorf("last twin's mode %v", m)
		}
		if m := engine.SessionLogitsMode(full); m != engine.LogitsFull {
			t.Errorf("meta2 twin's mode %v", m)
		}
		all, err := full.ForwardAll(bg, tok, pos)
		if err != nil {
			t.Fatal(err)
		}
		all = slices.Clone(all)
		V := full.Vocab()
		if _, err := last.ForwardAll(bg, tok, pos); !errors.Is(err, engine.ErrLastRowOnly) || !errors.Is(err, engine.ErrUnsupported) {
			t.Fatalf("ForwardAll of %d tokens on mode 1: %v, want ErrLastRowOnly", len(tok), err)
		}
		if last.Len() != 0 {
			t.Fatalf("the refused step ran: the cache holds %d", last.Len())
		}
		for i := range tok {
			row, err := last.ForwardAll(bg, tok[i:i+1], pos[i:i+1])
			if err != nil || len(row) != V {
				t.Fatalf("token %d: %d logits, %v", i, len(row), err)
			}
			if d := maxAbsDiff(row, all[i*V:(i+1)*V]); d > 1e-4 {
				t.Errorf("position %d: one token at a time differs from mode 0's row by %g", i, d)
			}
		}
		// A chunk through Forward: the one row the program returns.
		if err := last.Clear(); err != nil {
			t.Fatal(err)
		}
		row, err := last.Forward(bg, tok, pos)
		if err != nil || len(row) != V {
			t.Fatalf("Forward of %d tokens: %d logits, %v", len(tok), len(row), err)
		}
		if d := maxAbsDiff(row, all[(len(tok)-1)*V:]); d > 1e-4 {
			t.Errorf("mode 1's row differs from mode 0's last by %g", d)
		}
	})
}
