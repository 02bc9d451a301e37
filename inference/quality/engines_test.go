package quality

import (
	"math"
	"path/filepath"
	"testing"

	"etchat/inference"
	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
)

// TestBenchQ4AgainstBF16: the 4-bit export of the bench model against its
// bf16 export (the same weights before quantization; no tokenizer, so
// synthetic ids) has a real KL divergence: positive and well above the
// uint16 base's rounding, with the top token often changed. Its base PPL is
// the bf16 model's own.
func TestBenchQ4AgainstBF16(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("skipping: two 65/18 MB models under -short")
	}
	cpu := inference.LoadOptions{Engine: "cpu"}
	base := filepath.Join(t.TempDir(), "bf16.etl")
	bf, err := Run(bg, Options{PTE: fixtures.PTE(fixtures.BenchBF16), Load: cpu, RandomIDs: 256, Seed: 7, Ctx: 128, SaveLogits: base})
	if err != nil {
		t.Fatal(err)
	}
	q4, err := Run(bg, Options{PTE: fixtures.PTE(fixtures.BenchQ4), Load: cpu, RandomIDs: 256, Seed: 7, KLBase: base})
	if err != nil {
		t.Fatal(err)
	}
	k := q4.KLD
	t.Logf("bf16 %s; q4 %s; median %.4f, max %.4f, Δp rms %.4f%%", bf, q4, k.Median, k.Max, k.DeltaPRMS)
	if k.Mean < 0.01 || k.Mean < 10*k.MeanErr || k.SameTop >= 99 || k.Max < k.Median || k.DeltaPRMS <= 0 {
		t.Errorf("q4 against bf16: %+v", *k)
	}
	if math.Abs(k.BasePPL-bf.PPL) > 1e-5*bf.PPL || q4.Scored != bf.Scored || k.Base.Model != "llama-bench-bf16" {
		t.Errorf("base PPL %v, the bf16 run's %v; scored %d and %d; base %+v", k.BasePPL, bf.PPL, q4.Scored, bf.Scored, k.Base)
	}
}

// engineBound is how far the native engine may be from the CPU engine on
// a fixture: relative PPL and mean KLD. fp32 programs compute alike up to
// summation order; bf16 ones (MLX computes in bf16 where the CPU engine
// widens to fp32) differ by bf16 rounding of every activation.
var engineBound = map[string][2]float64{
	fixtures.Llama3: {1e-3, 1e-4}, fixtures.Gemma3: {1e-3, 1e-4}, fixtures.Qwen3: {1e-3, 1e-4},
	fixtures.Llama3Q4: {1e-3, 1e-4}, fixtures.Qwen3Q8: {1e-3, 1e-4}, fixtures.Gemma4: {1e-3, 1e-4},
	fixtures.BenchBF16: {0.05, 0.05}, fixtures.BenchQ4: {0.05, 0.05},
}

// TestEnginesAgree: on every fixture the native engine's PPL and its KLD
// against the CPU engine's saved logits are within engineBound, with the
// same top token at least 95% of the time (the base differing only in
// engine is accepted, and recorded).
func TestEnginesAgree(t *testing.T) {
	lib := nativelib.Require(t)
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.Llama3Q4, fixtures.Qwen3Q8, fixtures.Gemma4,
		fixtures.BenchBF16, fixtures.BenchQ4} {
		t.Run(name, func(t *testing.T) {
			o := Options{PTE: filepath.Join(fixtures.Unpacked(t, name), "model.pte"), Load: inference.LoadOptions{Engine: "cpu"}, Ctx: 64,
				SaveLogits: filepath.Join(t.TempDir(), "cpu.etl")}
			if name == fixtures.BenchBF16 || name == fixtures.BenchQ4 {
				o.RandomIDs, o.Ctx = 256, 128
			} else {
				o.Text = DefaultText[:3000]
			}
			c, err := Run(bg, o)
			if err != nil {
				t.Fatal(err)
			}
			o.Load = inference.LoadOptions{Engine: "mlx", Library: lib}
			o.KLBase, o.SaveLogits = o.SaveLogits, ""
			n, err := Run(bg, o)
			if err != nil {
				t.Fatal(err)
			}
			b := engineBound[name]
			rel := math.Abs(n.PPL/c.PPL - 1)
			t.Logf("cpu %s; mlx %s (PPL rel diff %.2g, KLD max %.3g)", c, n, rel, n.KLD.Max)
			if rel > b[0] || n.KLD.Mean > b[1] || n.KLD.SameTop < 95 || n.KLD.Base.Engine != "cpu" || n.Engine != "mlx" {
				t.Errorf("engines differ beyond (%g, %g): %+v", b[0], b[1], *n.KLD)
			}
		})
	}
}
