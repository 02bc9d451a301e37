// Package plot draws benchmark results with gonum/plot: bars of t/s per
// test (one run, or a baseline beside a candidate) and t/s over time per
// model, engine and test. Charts come as PNG bytes (etchat bench --plot,
// etchat compare --plot) or as an image for the app's Benchmarks view.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"etchat/inference/bench"
)

// Size is a chart's size; zero fields mean 8 × 4.5 inches. Images are
// rendered at 96 dots per inch.
type Size struct{ W, H vg.Length }

func (s Size) or() Size {
	if s.W <= 0 {
		s.W = 8 * vg.Inch
	}
	if s.H <= 0 {
		s.H = 4.5 * vg.Inch
	}
	return s
}

// Colors of the series, in order.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
}

// ErrNoData: nothing to draw.
var ErrNoData = errors.New("no benchmark results to draw")

// meanSD gives error bars at data positions.
type meanSD struct {
	plotter.XYs
	sd []float64
}

func (m meanSD) YError(i int) (float64, float64) { return m.sd[i], m.sd[i] }

// Bars is a bar chart of mean t/s (with ± sd error bars) per test: one
// bar per test for candidate alone, or baseline and candidate side by side
// when baseline is not empty (tests matched by identity).
func Bars(candidate, baseline []*bench.Result) (*plot.Plot, error) {
	if len(candidate) == 0 && len(baseline) == 0 {
		return nil, ErrNoData
	}
	var keys []string
	seen := map[string]bool{}
	for _, rs := range [][]*bench.Result{baseline, candidate} {
		for _, r := range rs {
			if k := r.Test.Key(); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	type series struct {
		name string
		rs   []*bench.Result
	}
	sets := []series{{"candidate", candidate}}
	if len(baseline) > 0 {
		sets = []series{{"baseline", baseline}, {"candidate", candidate}}
	}
	if len(baseline) == 0 && len(candidate) > 0 {
		sets[0].name = label(candidate)
	}
	p := plot.New()
	p.Title.Text = "tokens per second (mean ± sd)"
	p.Y.Label.Text = "t/s"
	p.Y.Min = 0
	width := vg.Length(float64(6*vg.Inch) / float64(len(keys)*(len(sets)+1)))
	width = min(width, 0.8*vg.Inch)
	for si, set := range sets {
		by := map[string]*bench.Result{}
		for _, r := range set.rs {
			by[r.Test.Key()] = r
		}
		vals := make(plotter.Values, len(keys))
		errs := meanSD{XYs: make(plotter.XYs, len(keys)), sd: make([]float64, len(keys))}
		off := (float64(si) - float64(len(sets)-1)/2) * 0.8 / float64(len(sets))
		for i, k := range keys {
			if r := by[k]; r != nil {
				vals[i] = r.AvgTS()
				errs.sd[i] = r.StddevTS()
			}
			errs.XYs[i] = plotter.XY{X: float64(i) + off, Y: vals[i]}
		}
		bc, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bc.XMin = off
		bc.Color = palette[si%len(palette)]
		bc.LineStyle.Width = 0
		eb, err := plotter.NewYErrorBars(errs)
		if err != nil {
			return nil, err
		}
		p.Add(bc, eb)
		if len(sets) > 1 || set.name != "" {
			p.Legend.Add(set.name, bc)
		}
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = strings.Replace(k, " | ", "\n", 1)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(keys))-0.4
	p.Y.Max = headroom(append(append([]*bench.Result{}, baseline...), candidate...))
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p, nil
}

func label(rs []*bench.Result) string {
	r := rs[0]
	return fmt.Sprintf("%s on %s, %s", r.Model.Name, r.Engine, r.TestTime.Local().Format("2006-01-02 15:04"))
}

// Trend is t/s over time, one line per model, engine and test (with ± sd
// error bars), for the history of a model's runs.
func Trend(results []*bench.Result) (*plot.Plot, error) {
	if len(results) == 0 {
		return nil, ErrNoData
	}
	groups := map[string][]*bench.Result{}
	var keys []string
	for _, r := range results {
		k := r.Model.Name + " · " + r.Engine + " · " + r.Test.Key()
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	sort.Strings(keys)
	p := plot.New()
	p.Title.Text = "tokens per second over time"
	p.Y.Label.Text = "t/s"
	p.Y.Min = 0
	p.X.Tick.Marker = timeTicks{}
	for i, k := range keys {
		rs := groups[k]
		sort.Slice(rs, func(a, b int) bool { return rs[a].TestTime.Before(rs[b].TestTime) })
		pts := meanSD{XYs: make(plotter.XYs, len(rs)), sd: make([]float64, len(rs))}
		for j, r := range rs {
			pts.XYs[j] = plotter.XY{X: float64(r.TestTime.Unix()), Y: r.AvgTS()}
			pts.sd[j] = r.StddevTS()
		}
		line, scatter, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, err
		}
		c := palette[i%len(palette)]
		line.Color, scatter.Color = c, c
		line.Width = vg.Points(1.5)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		eb.Color = c
		p.Add(line, scatter, eb)
		p.Legend.Add(k, line, scatter)
	}
	if len(keys) == 1 || allSameTime(results) {
		// One instant: widen the axis so the points are not on its edge.
		t := float64(results[0].TestTime.Unix())
		p.X.Min, p.X.Max = min(p.X.Min, t-3600), max(p.X.Max, t+3600)
	} else {
		// Pad the time axis so the first and last points, their error bars
		// and the two-line tick labels under them stay inside the image.
		pad := max((p.X.Max-p.X.Min)*0.05, 30)
		p.X.Min, p.X.Max = p.X.Min-pad, p.X.Max+pad
	}
	p.Y.Max = headroom(results)
	p.Legend.Top = true
	p.Legend.Left = true
	// Inset the legend from the frame so it does not sit on the top gridline.
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(6)
	p.Add(plotter.NewGrid())
	return p, nil
}

// headroom is the y-axis top: the highest mean + sd, plus room for the
// legend above the data.
func headroom(rs []*bench.Result) float64 {
	top := 0.0
	for _, r := range rs {
		top = max(top, r.AvgTS()+r.StddevTS())
	}
	if top <= 0 {
		return 1
	}
	return top * 1.35
}

func allSameTime(rs []*bench.Result) bool {
	for _, r := range rs {
		if r.TestTime.Unix() != rs[0].TestTime.Unix() {
			return false
		}
	}
	return true
}

// Image renders a chart.
func Image(p *plot.Plot, sz Size) image.Image {
	sz = sz.or()
	c := vgimg.NewWith(vgimg.UseWH(sz.W, sz.H), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	return c.Image()
}

// PNG renders a chart as PNG bytes.
func PNG(p *plot.Plot, sz Size) ([]byte, error) {
	sz = sz.or()
	c := vgimg.NewWith(vgimg.UseWH(sz.W, sz.H), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// BarsPNG is Bars as PNG bytes.
func BarsPNG(candidate, baseline []*bench.Result, sz Size) ([]byte, error) {
	p, err := Bars(candidate, baseline)
	if err != nil {
		return nil, err
	}
	return PNG(p, sz)
}

// TrendPNG is Trend as PNG bytes.
func TrendPNG(results []*bench.Result, sz Size) ([]byte, error) {
	p, err := Trend(results)
	if err != nil {
		return nil, err
	}
	return PNG(p, sz)
}

// timeTicks marks the time axis with labels as fine as its span needs and
// no label twice in a row: runs a few seconds apart, labelled to the
// minute, showed one "12-04 21:05" under every mark.
type timeTicks struct{}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	format := "01-02\n15:04"
	if hi-lo < 20*60 {
		format = "01-02\n15:04:05"
	}
	ticks := plot.TimeTicks{Format: format, Time: func(t float64) time.Time { return time.Unix(int64(t), 0).Local() }}.Ticks(lo, hi)
	prev := ""
	for i := range ticks {
		switch {
		case ticks[i].Label == "":
		case ticks[i].Label == prev:
			ticks[i].Label = "" // the mark stays, unlabelled
		default:
			prev = ticks[i].Label
		}
	}
	return ticks
}
