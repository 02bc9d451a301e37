package inference

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

// Auto falls back to the CPU engine, visibly, when the native engine loads
// but cannot open the program or run its first forward; asked for
// explicitly, the native engine fails with the full error.
func TestLoadFallback(t *testing.T) {
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	for _, c := range []struct {
		name              string
		failOpen, failFwd bool
		want              string // in the reason
	}{
		{"open fails", true, false, "no Metal device second line of the library's log"},
		{"first forward fails", false, true, "mlx.metallib not found"},
		{"works", false, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			nat := &fakeNative{Engine: cpu.New(cpu.Options{}), device: engine.DeviceMetal, failOpen: c.failOpen, failFwd: c.failFwd}
			swapEngines(t, map[string]engine.Constructor{
				engine.CPU: func(engine.Config) (engine.Engine, error) { return cpu.New(cpu.Options{}), nil },
				engine.MLX: func(engine.Config) (engine.Engine, error) { return nat, nil },
			})
			var steps []string
			m, err := Load(bg, pte, LoadOptions{Progress: func(s LoadStep) { steps = append(steps, s.Stage) }})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !slices.Equal(steps, []string{StageModel, StageTokenizer, StageEngine, StageProgram, StageReady}) {
				t.Errorf("progress %v", steps)
			}
			if c.want == "" {
				if m.Engine.Name != "mlx" || m.Engine.Device != "metal" || m.Engine.Fallback || m.Session.Len() != 0 || nat.firstForwards != 1 {
					t.Errorf("native on metal: %+v, len %d, first forwards %d", m.Engine, m.Session.Len(), nat.firstForwards)
				}
			} else {
				line := m.Engine.String()
				if m.Engine.Name != "cpu" || !m.Engine.Fallback || !strings.Contains(line, c.want) || !strings.HasPrefix(line, "engine: cpu on cpu (auto: mlx on metal failed (") {
					t.Errorf("fallback: %q (%+v)", line, m.Engine)
				}
			}
			// The model still generates the reference's greedy ids.
			var ref reference
			fixtures.Reference(t, fixtures.Llama3, &ref)
			rc := ref.Cases[0]
			gen := m.Generation(len(rc.GreedyIDs), sampler.Sampling{})
			gen.IgnoreEOS = true
			r, err := Generate(bg, m.Session, rc.InputIDs, gen)
			if err != nil || !slices.Equal(r.GeneratedIDs, rc.GreedyIDs) {
				t.Errorf("generated %v (%v), want %v", r.GeneratedIDs, err, rc.GreedyIDs)
			}
			if c.want == "" {
				return
			}
			// Asked for by name, the failure is the error, whole.
			nat.firstForwards = 0
			_, err = Load(bg, pte, LoadOptions{Engine: "metal"})
			if c.failOpen && (err == nil || !strings.Contains(err.Error(), "no Metal device\nsecond line")) {
				t.Errorf("explicit native, open fails: %v", err)
			}
			// An explicit choice runs no probe: the failure comes at the first forward.
			if c.failFwd && (err != nil || nat.firstForwards != 0) {
				t.Errorf("explicit native, probe ran: %v, %d", err, nat.firstForwards)
			}
		})
	}
}

// An in-graph program cannot clear its cache: the probe reopens it.
func TestLoadProbeInGraph(t *testing.T) {
	nat := &fakeNative{Engine: cpu.New(cpu.Options{}), device: engine.DeviceMetal}
	swapEngines(t, map[string]engine.Constructor{
		engine.CPU: func(engine.Config) (engine.Engine, error) { return cpu.New(cpu.Options{}), nil },
		engine.MLX: func(engine.Config) (engine.Engine, error) { return nat, nil },
	})
	m, err := Load(bg, fixtures.PTE(fixtures.InGraph), LoadOptions{Tokenizer: fixtures.Tokenizer(t, fixtures.Llama3)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Engine.Name != "mlx" || nat.opens != 2 || m.Session.Len() != 0 {
		t.Errorf("in-graph probe: %+v, opens %d, len %d", m.Engine, nat.opens, m.Session.Len())
	}
}

// What a user fixes comes back typed, before any engine loads.
func TestLoadTypedErrors(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	pte := filepath.Join(dir, "model.pte")
	for _, c := range []struct {
		p     kvcache.Policy
		field kvcache.Field
		n     int // fields at fault
	}{
		{kvcache.Policy{StorageDType: "int3"}, CacheFieldStorageDType, 1},
		{kvcache.Policy{Capacity: -5, StorageDType: "int3"}, CacheFieldCapacity, 2},
		{kvcache.Policy{Windows: "x"}, CacheFieldWindows, 1},
		{kvcache.Policy{InitialCapacity: -7}, CacheFieldInitialCapacity, 1},
		{kvcache.Policy{Capacity: 129, InitialCapacity: -1}, CacheFieldCapacity, 1}, // the model's context is 128
		{kvcache.Policy{Capacity: 4096, StorageDType: "fp8", Windows: "8,", InitialCapacity: -2}, CacheFieldCapacity, 4},
	} {
		var ce *CacheConfigError
		_, err := Load(bg, pte, LoadOptions{Engine: "cpu", Policy: c.p})
		if !errors.As(err, &ce) || ce.Field != c.field || len(kvcache.FieldErrors(err)) != c.n {
			t.Errorf("policy %+v: %v (%+v), want field %s first of %d", c.p, err, ce, c.field, c.n)
		}
	}
	var te *TokenizerError
	if _, err := Load(bg, pte, LoadOptions{Engine: "cpu", Tokenizer: filepath.Join(dir, "none.json")}); !errors.As(err, &te) || !te.Given {
		t.Errorf("missing tokenizer: %v", err)
	}
	var tmpl *TemplateError
	if _, err := Load(bg, pte, LoadOptions{Engine: "cpu", Chat: "no-such-template"}); !errors.As(err, &tmpl) {
		t.Errorf("bad template: %v", err)
	}
	var vm *VocabMismatchError
	if _, err := Load(bg, pte, LoadOptions{Engine: "cpu", Tokenizer: fixtures.Tokenizer(t, fixtures.Qwen3)}); !errors.As(err, &vm) || vm.ModelVocab == 0 {
		t.Errorf("foreign tokenizer: %v", err)
	}
	var ue *engine.UnknownError
	if _, err := Prepare(pte, LoadOptions{Engine: "tpu"}); !errors.As(err, &ue) {
		t.Errorf("unknown engine: %v", err)
	}
	// Without a tokenizer and without needing one, the stop set is the
	// .pte's EOS ids; needing one, its absence is a TokenizerError.
	bare := filepath.Join(t.TempDir(), "model.pte")
	if err := os.Symlink(pte, bare); err != nil {
		t.Fatal(err)
	}
	m, err := Prepare(bare, LoadOptions{})
	if err != nil || m.Chat != nil || !slices.Equal(m.StopIDs, appendNew(appendNew(nil, m.Info.EOSIDs...), m.Info.Companion.GenerationEOS...)) {
		t.Errorf("no tokenizer: %+v, %v", m, err)
	}
	if _, err := Prepare(bare, LoadOptions{NeedTokenizer: true}); !errors.As(err, &te) || te.Given {
		t.Errorf("needed tokenizer: %v", err)
	}
}
