package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"sync"

	gonumplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"etchat/inference/bench"
	"etchat/inference/bench/plot"
	"etchat/inference/modelinfo"
	"etchat/inference/quality"
	"etchat/store"
)

// QualityRuns is the part of Runs that lists stored quality runs (etchat
// perplexity and the Quality view); a Runs without it draws no quality
// chart. benchstore.Runs has it.
type QualityRuns interface {
	QualityRuns(ctx context.Context, limit int) ([]store.Run, error)
}

// Variant is one model's point on the chart of perplexity against decode
// speed: its newest quality run and its newest generation benchmark.
type Variant struct {
	Model, SHA256, Path string
	// Family is the variants it is drawn with: the architecture in its
	// config.json and its tokenizer (Family).
	Family      string
	PPL, PPLErr float64
	Over        string // what the PPL was measured over: the text and window
	DecodeTokS  float64
	DecodeSD    float64
}

// Variants pairs, by model sha256, each model's newest quality run with
// its newest generation (tg) result. Models without both are left out:
// the chart is of trade-offs. family names a model's family by its path.
func Variants(results []*bench.Result, runs []store.Run, family func(path string) string) []Variant {
	tg := map[string]*bench.Result{}
	for _, r := range results {
		if r.Test.NGen == 0 || r.Model.SHA256 == "" {
			continue
		}
		if old, ok := tg[r.Model.SHA256]; !ok || r.TestTime.After(old.TestTime) {
			tg[r.Model.SHA256] = r
		}
	}
	seen := map[string]bool{}
	var out []Variant
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Started.After(runs[j].Started) })
	for _, run := range runs {
		b, ok := tg[run.ModelSHA256]
		if run.Kind != store.RunQuality || !ok || seen[run.ModelSHA256] || run.Error != "" || run.Quality.PPL <= 0 {
			continue
		}
		seen[run.ModelSHA256] = true
		v := Variant{Model: run.ModelName, SHA256: run.ModelSHA256, Path: run.ModelPath, PPL: run.Quality.PPL, PPLErr: run.Quality.PPLErr,
			DecodeTokS: b.AvgTS(), DecodeSD: b.StddevTS()}
		var r quality.Result
		if json.Unmarshal(run.Config, &r) == nil {
			v.Over = fmt.Sprintf("%s, ctx %d", r.Text, r.Ctx)
		}
		v.Family = family(run.ModelPath)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Family+out[i].Model < out[j].Family+out[j].Model })
	return out
}

var (
	familyMu sync.Mutex
	families = map[string]string{}
)

// Family is a model's family: the architecture named in the config.json
// beside it and the sha256 of its tokenizer.json (the first 8 digits), or
// the vocabulary size where it has no tokenizer. Variants of one model
// (another quantization, another KV dtype) share it.
func Family(path string) string {
	familyMu.Lock()
	defer familyMu.Unlock()
	if f, ok := families[path]; ok {
		return f
	}
	dir := filepath.Dir(path)
	var cfg struct {
		Architectures []string `json:"architectures"`
		VocabSize     int      `json:"vocab_size"`
	}
	arch := "unknown architecture"
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil && json.Unmarshal(b, &cfg) == nil && len(cfg.Architectures) > 0 {
		arch = cfg.Architectures[0]
	}
	tok := fmt.Sprintf("no tokenizer, vocab %d", cfg.VocabSize)
	if sha, err := modelinfo.HashFile(filepath.Join(dir, modelinfo.TokenizerFile)); err == nil {
		tok = "tokenizer " + sha[:8]
	}
	f := arch + ", " + tok
	families[path] = f
	return f
}

// variantsPlot is perplexity against decode speed, a series per family
// and text: lower and to the right is better.
func variantsPlot(vs []Variant) (*gonumplot.Plot, error) {
	if len(vs) == 0 {
		return nil, plot.ErrNoData
	}
	groups := map[string][]Variant{}
	var keys []string
	for _, v := range vs {
		k := v.Family + " · " + v.Over
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], v)
	}
	sort.Strings(keys)
	p := gonumplot.New()
	p.Title.Text = "perplexity against decode speed (lower right is better)"
	p.X.Label.Text = "decode t/s"
	p.Y.Label.Text = "PPL"
	for i, k := range keys {
		g := groups[k]
		pts := make(plotter.XYs, len(g))
		labels := make([]string, len(g))
		for j, v := range g {
			pts[j] = plotter.XY{X: v.DecodeTokS, Y: v.PPL}
			labels[j] = v.Model
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Color = plotPalette[i%len(plotPalette)]
		sc.Radius = vg.Points(4)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
		if err != nil {
			return nil, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Color = sc.Color
			lb.Offset.X = vg.Points(6)
		}
		p.Add(sc, lb)
		p.Legend.Add(k, sc)
	}
	pad := func(lo, hi float64) (float64, float64) {
		d := max((hi-lo)*0.2, hi*0.1, 1e-9)
		return max(lo-d, 0), hi + d
	}
	p.X.Min, p.X.Max = pad(p.X.Min, p.X.Max)
	p.Y.Min, p.Y.Max = pad(p.Y.Min, p.Y.Max)
	p.Y.Max *= 1.25 // room for the legend
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, nil
}

var plotPalette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
}

// Variants is the chart's data: the variants of the models in the run
// history (read by Refresh).
func (vm *ViewModel) Variants() []Variant {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.variants
}

// VariantsChart draws Variants in the theme's colours.
func (vm *ViewModel) VariantsChart(sz plot.Size, fg, bg color.Color) (image.Image, error) {
	p, err := variantsPlot(vm.Variants())
	if err != nil {
		return nil, err
	}
	return themed(p, sz, fg, bg), nil
}

// refreshVariants reads the quality runs and pairs them with rs.
func (vm *ViewModel) refreshVariants(ctx context.Context, rs []*bench.Result) error {
	qr, ok := vm.deps.Runs.(QualityRuns)
	if !ok {
		return nil
	}
	runs, err := qr.QualityRuns(ctx, 2000)
	if err != nil {
		return err
	}
	vs := Variants(rs, runs, Family)
	vm.mu.Lock()
	vm.variants = vs
	vm.mu.Unlock()
	return nil
}
