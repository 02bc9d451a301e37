package plot

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
	"time"

	"etchat/inference/bench"
)

// result makes a result whose repetitions ran at the given rates.
func result(t bench.Test, when time.Time, rates ...float64) *bench.Result {
	r := &bench.Result{Test: t, TestTime: when, Engine: "cpu", Model: bench.Model{Name: "llama-bench-bf16"}}
	n := float64(t.NPrompt + t.NGen)
	for _, ts := range rates {
		r.Reps = append(r.Reps, bench.Rep{Ns: int64(math.Round(n * 1e9 / ts))})
	}
	return r
}

var cache = bench.Cache{DType: "bf16", Capacity: 2048, Windows: "0"}

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// count is how many pixels have exactly color c.
func count(img image.Image, c color.RGBA) int {
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == c {
				n++
			}
		}
	}
	return n
}

func distinct(img image.Image) int {
	seen := map[color.Color]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 2 {
		for x := bd.Min.X; x < bd.Max.X; x += 2 {
			seen[img.At(x, y)] = true
		}
	}
	return len(seen)
}

func TestBarsBaselineCandidate(t *testing.T) {
	now := time.Now()
	pp, tg := bench.Test{NPrompt: 512, Cache: cache}, bench.Test{NGen: 128, Cache: cache}
	base := []*bench.Result{result(pp, now, 1000, 1010, 990), result(tg, now, 1000, 1000, 1000)}
	cand := []*bench.Result{result(pp, now, 500, 505, 495), result(tg, now, 500, 500, 500)}
	b, err := BarsPNG(cand, base, Size{})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, b)
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != 768 || h != 432 {
		t.Errorf("size %dx%d, want 768x432 (8 × 4.5 in at 96 dpi)", w, h)
	}
	if n := distinct(img); n < 8 {
		t.Fatalf("only %d colors: blank chart", n)
	}
	// Baseline bars (first color) are twice as tall as the candidate's
	// (second color), at equal widths; the legend swatches add a little.
	nb, nc := count(img, palette[0]), count(img, palette[1])
	if nb == 0 || nc == 0 {
		t.Fatalf("bars missing: %d baseline, %d candidate pixels", nb, nc)
	}
	if ratio := float64(nb) / float64(nc); ratio < 1.6 || ratio > 2.3 {
		t.Errorf("baseline/candidate bar area %.2f, want about 2", ratio)
	}
}

func TestBarsSingleRun(t *testing.T) {
	now := time.Now()
	rs := []*bench.Result{result(bench.Test{NPrompt: 128, Cache: cache}, now, 300, 320)}
	b, err := BarsPNG(rs, nil, Size{W: 400, H: 300})
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, b)
	if count(img, palette[0]) == 0 || count(img, palette[1]) != 0 {
		t.Errorf("one series expected: %d / %d pixels", count(img, palette[0]), count(img, palette[1]))
	}
}

func TestTrend(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tg := bench.Test{NGen: 128, Cache: cache}
	pp := bench.Test{NPrompt: 512, Cache: cache}
	var rs []*bench.Result
	for i := range 4 {
		when := t0.Add(time.Duration(i) * 24 * time.Hour)
		rs = append(rs, result(tg, when, 20+float64(i), 21+float64(i)), result(pp, when, 300-10*float64(i), 310))
	}
	p, err := Trend(rs)
	if err != nil {
		t.Fatal(err)
	}
	img := Image(p, Size{})
	if n := distinct(img); n < 8 {
		t.Fatalf("only %d colors", n)
	}
	if count(img, palette[0]) == 0 || count(img, palette[1]) == 0 {
		t.Errorf("two lines expected")
	}
	// One instant only still draws.
	if _, err := TrendPNG(rs[:1], Size{}); err != nil {
		t.Fatal(err)
	}
}

// Runs seconds, minutes or days apart: the time axis labels more than one
// mark and never one label twice (runs a few seconds apart once showed
// the same minute under every mark).
func TestTrendTimeLabelsDiffer(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 21, 5, 0, 0, time.UTC)
	tg := bench.Test{NGen: 128, Cache: cache}
	pp := bench.Test{NPrompt: 512, Cache: cache}
	for _, step := range []time.Duration{2 * time.Second, 5 * time.Second, 40 * time.Second, 7 * time.Minute, 24 * time.Hour} {
		var rs []*bench.Result // two lines (one alone is drawn an hour either side)
		for i := range 3 {
			when := t0.Add(time.Duration(i) * step)
			rs = append(rs, result(tg, when, 20, 21), result(pp, when, 300, 310))
		}
		p, err := Trend(rs)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			if tk.Label == "" {
				continue
			}
			if seen[tk.Label] {
				t.Errorf("runs %v apart: %q labels two marks", step, tk.Label)
			}
			seen[tk.Label] = true
		}
		if len(seen) < 2 {
			t.Errorf("runs %v apart: %d labels on the time axis", step, len(seen))
		}
	}
}

func TestNoData(t *testing.T) {
	if _, err := BarsPNG(nil, nil, Size{}); !errors.Is(err, ErrNoData) {
		t.Errorf("bars: %v", err)
	}
	if _, err := TrendPNG(nil, Size{}); !errors.Is(err, ErrNoData) {
		t.Errorf("trend: %v", err)
	}
}
