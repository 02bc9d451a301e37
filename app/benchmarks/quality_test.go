package benchmarks

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"etchat/inference/bench"
	"etchat/inference/bench/plot"
	"etchat/internal/fixtures"
	"etchat/store"
)

// tgResult is a stored-like generation result at rate t/s.
func tgResult(sha string, rate float64, at time.Time) *bench.Result {
	return &bench.Result{Model: bench.Model{SHA256: sha, Name: sha}, Test: bench.Test{NGen: 16}, TestTime: at,
		Reps: []bench.Rep{{Ns: int64(16 / rate * 1e9)}}}
}

// TestVariantsPairQualityWithSpeed: each model's newest quality run meets
// its newest generation benchmark; models without both, stopped runs and
// prompt-only benchmarks are left out; the chart draws them and says when
// there is nothing to draw.
func TestVariantsPairQualityWithSpeed(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	results := []*bench.Result{tgResult("aa", 100, t0), tgResult("aa", 120, t0.Add(time.Hour)), tgResult("bb", 300, t0),
		{Model: bench.Model{SHA256: "cc"}, Test: bench.Test{NPrompt: 64}, Reps: []bench.Rep{{Ns: 1e9}}}}
	q := func(sha string, ppl float64, at time.Time, errText string) store.Run {
		return store.Run{Kind: store.RunQuality, ModelSHA256: sha, ModelName: "m-" + sha, ModelPath: "/m/" + sha + "/model.pte",
			Started: at, Error: errText, Config: []byte(`{"text":"bundled","ctx":128}`), Quality: store.Quality{PPL: ppl, PPLErr: 0.5}}
	}
	runs := []store.Run{q("aa", 12, t0, ""), q("aa", 11, t0.Add(2*time.Hour), ""), q("bb", 15, t0, ""), q("cc", 9, t0, ""),
		q("dd", 9, t0, ""), q("bb", 1, t0.Add(time.Hour), "stopped")}
	vs := Variants(results, runs, func(p string) string { return "llama" })
	if len(vs) != 2 || vs[0].SHA256 != "aa" || vs[0].PPL != 11 || vs[0].DecodeTokS < 119.9 || vs[0].DecodeTokS > 120.1 ||
		vs[1].SHA256 != "bb" || vs[1].PPL != 15 || vs[0].Over != "bundled, ctx 128" || vs[1].Family != "llama" {
		t.Fatalf("variants %+v", vs)
	}
	vm := New(Deps{})
	vm.variants = vs
	if img, err := vm.VariantsChart(plot.Size{}, nil, nil); err != nil || img.Bounds().Dx() < 100 {
		t.Errorf("chart: %v", err)
	}
	vm.variants = nil
	if _, err := vm.VariantsChart(plot.Size{}, nil, nil); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("empty chart: %v", err)
	}
}

// TestFamily: an export and its quantized twin (same architecture, same
// tokenizer) are one family, another model is not, and the bench pair
// without a tokenizer is one by vocabulary.
func TestFamily(t *testing.T) {
	f := func(name string) string { return Family(filepath.Join(fixtures.Unpacked(t, name), "model.pte")) }
	llama, q4, qwen := f(fixtures.Llama3), f(fixtures.Llama3Q4), f(fixtures.Qwen3)
	if llama != q4 || llama == qwen || f(fixtures.BenchBF16) != f(fixtures.BenchQ4) || f(fixtures.BenchBF16) == llama {
		t.Errorf("families: llama %q, q4 %q, qwen %q, bench %q / %q", llama, q4, qwen, f(fixtures.BenchBF16), f(fixtures.BenchQ4))
	}
	t.Logf("%s | %s | %s", llama, qwen, f(fixtures.BenchQ4))
}
