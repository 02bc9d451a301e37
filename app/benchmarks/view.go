package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"image"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/inference/bench/plot"
	"etchat/inference/engine"
	"gonum.org/v1/plot/vg"
)

// allModels is the filter choice that shows every model.
const allModels = "All models"

// View is the Benchmarks view's widgets over a ViewModel.
type View struct {
	vm  *ViewModel
	win fyne.Window
	ctx context.Context
	// do runs a widget update from any goroutine: fyne.Do in the app;
	// tests queue the updates and run them on the test goroutine (Fyne's
	// test driver would run them on the caller's).
	do func(func())

	root fyne.CanvasObject

	model                                                        *widget.Select // the library's models
	models                                                       []LibraryModel // what model offers
	formVer                                                      int            // vm.FormVersion copied into the fields
	pte, tok, prompts, gens, depths, reps, dtypes, caps, windows *widget.Entry
	engine                                                       *widget.Select
	noWarmup                                                     *widget.Check
	start, cancel                                                *widget.Button
	progress                                                     *widget.ProgressBar
	status                                                       *widget.Label

	results *widget.Label // the last run's tests, after Run

	filter *widget.Select
	table  *widget.Table
	rows   []Row
	empty  *widget.Label
	trend  *canvas.Image // pp
	trendG *canvas.Image // tg
	qual   *canvas.Image // perplexity against decode speed (quality.go)

	base, cand *widget.Entry
	compare    *widget.Button
	cmpText    *widget.Label
	cmpChart   *canvas.Image

	trendVer, cmpVer int // chart data versions drawn; -1 = none yet
}

// NewView builds the Benchmarks view: run form, history table, chart and
// comparison, in tabs. w parents the file dialog. It sets vm.OnChange to
// redraw through fyne.Do and loads the history in the background.
func NewView(vm *ViewModel, w fyne.Window) fyne.CanvasObject {
	v := newView(context.Background(), vm, w, fyne.Do)
	go vm.Refresh(v.ctx)
	return v.root
}

// NewViewWith is NewView with the function that runs widget updates from
// other goroutines (the app's, which tests replace); it does not load the
// history: the caller calls vm.Refresh when its do is in place.
func NewViewWith(ctx context.Context, vm *ViewModel, w fyne.Window, do func(func())) fyne.CanvasObject {
	return newView(ctx, vm, w, do).root
}

func newView(ctx context.Context, vm *ViewModel, w fyne.Window, do func(func())) *View {
	v := &View{vm: vm, win: w, ctx: ctx, do: do, trendVer: -1, cmpVer: -1, formVer: -1}
	tabs := container.NewAppTabs(
		container.NewTabItem("Run", v.newRunTab()),
		container.NewTabItem("History", v.newHistoryTab()),
		container.NewTabItem("Chart", v.newChartTab()),
		container.NewTabItem("Compare", v.newCompareTab()),
	)
	v.root = tabs
	vm.OnChange = func() { v.do(v.redraw) }
	v.redraw()
	return v
}

// showFilter offers the history's models in the filter and shows the
// view-model's choice, which may be set from outside (the server
// indicator shows the served model's runs).
func (v *View) showFilter() {
	v.filter.Options = append([]string{allModels}, v.vm.Models()...)
	v.filter.Selected = allModels
	if f := v.vm.Filter(); f != "" {
		v.filter.Selected = f
	}
	v.filter.Refresh()
}

// entry is a text field with its text and placeholder.
func entry(text, hint string) *widget.Entry {
	e := widget.NewEntry()
	e.SetText(text)
	e.SetPlaceHolder(hint)
	return e
}

// newRunTab is the run form, its Start and Cancel, progress and results.
func (v *View) newRunTab() fyne.CanvasObject {
	f := v.vm.Form()
	v.pte = entry(f.PTE, "/path/to/model.pte")
	v.tok = entry(f.Tokenizer, "optional tokenizer.json (default: next to the .pte)")
	v.prompts = entry(f.Prompts, "512,1024")
	v.gens = entry(f.Gens, "128")
	v.depths = entry(f.Depths, "0,4096")
	v.reps = entry(f.Reps, "5")
	v.dtypes = entry(f.KVDTypes, "bf16,fp16")
	v.caps = entry(f.KVCapacities, "0 = the model's")
	v.windows = entry(f.KVWindows, "e.g. 512;0 (empty = the model's)")
	v.engine = widget.NewSelect(engine.Choices(), nil)
	v.engine.SetSelected(f.Engine)
	v.noWarmup = widget.NewCheck("skip the warmup", nil)
	v.noWarmup.SetChecked(f.NoWarmup)
	browse := widget.NewButtonWithIcon("", theme.FolderOpenIcon(), func() {
		d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
			if err == nil && rc != nil {
				v.choose(rc.URI().Path())
				rc.Close()
			}
		}, v.win)
		d.SetFilter(storage.NewExtensionFileFilter([]string{".pte"}))
		d.Show()
	})
	v.model = widget.NewSelect(nil, func(label string) {
		for _, m := range v.models {
			if m.Label == label && m.Path != v.pte.Text {
				v.choose(m.Path)
			}
		}
	})
	v.model.PlaceHolder = "(pick a model of the library)"
	form := widget.NewForm(
		widget.NewFormItem("Model", v.model),
		widget.NewFormItem("or a .pte file", container.NewBorder(nil, nil, nil, browse, v.pte)),
		widget.NewFormItem("Tokenizer", v.tok),
		// Two fields a row, so that Start is in view at 800×600 (the
		// window's menu bar takes from the 600 too).
		widget.NewFormItem("Prompt sizes (pp)", pair(v.prompts, "Generation sizes (tg)", v.gens)),
		widget.NewFormItem("Depths", pair(v.depths, "Repetitions", v.reps)),
		widget.NewFormItem("KV storage dtypes", pair(v.dtypes, "KV capacities", v.caps)),
		widget.NewFormItem("KV windows", v.windows),
		widget.NewFormItem("Engine", container.NewGridWithColumns(2, v.engine, v.noWarmup)),
	)
	v.start = widget.NewButtonWithIcon("Start", theme.MediaPlayIcon(), v.onStart)
	v.start.Importance = widget.HighImportance
	v.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), v.vm.Cancel)
	v.progress = widget.NewProgressBar()
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.results = widget.NewLabel("")
	v.results.TextStyle = fyne.TextStyle{Monospace: true}
	return container.NewVScroll(container.NewVBox(form, container.NewHBox(v.start, v.cancel), v.progress, v.status, v.results))
}

// newHistoryTab is the stored runs: the model filter over the sortable table.
func (v *View) newHistoryTab() fyne.CanvasObject {
	v.filter = widget.NewSelect([]string{allModels}, func(s string) {
		if s == allModels {
			s = ""
		}
		v.vm.SetFilter(s)
	})
	v.filter.SetSelected(allModels)
	v.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.rows), len(Columns) },
		func() fyne.CanvasObject { return widget.NewLabel("2006-01-02 15:04:05") },
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row < len(v.rows) {
				o.(*widget.Label).SetText(v.rows[id.Row].Cells()[id.Col])
			}
		})
	v.table.ShowHeaderColumn = false
	v.table.CreateHeader = func() fyne.CanvasObject { return widget.NewButton("", nil) }
	v.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		b := o.(*widget.Button)
		if id.Col < 0 || id.Col >= len(Columns) {
			return
		}
		col, desc := v.vm.Sort()
		text := Columns[id.Col]
		if col == id.Col {
			text += map[bool]string{true: " ▼", false: " ▲"}[desc]
		}
		b.SetText(text)
		c := id.Col
		b.OnTapped = func() {
			cur, d := v.vm.Sort()
			v.vm.SortBy(c, !(cur == c && d)) // a new column sorts descending first
		}
	}
	for i, wd := range []float32{60, 170, 190, 70, 130, 130, 90, 80, 80, 50} {
		v.table.SetColumnWidth(i, wd)
	}
	v.table.OnSelected = func(id widget.TableCellID) {
		if id.Row >= 0 && id.Row < len(v.rows) {
			r := v.rows[id.Row]
			// Selecting a row offers it to the comparison: first the
			// baseline, then the candidate.
			if v.base.Text == "" || v.cand.Text != "" {
				v.base.SetText(r.Selector(v.vm.allRows()))
				v.cand.SetText("")
			} else {
				v.cand.SetText(r.Selector(v.vm.allRows()))
			}
		}
	}
	v.empty = widget.NewLabel("")
	v.empty.Wrapping = fyne.TextWrapWord
	refresh := widget.NewButtonWithIcon("Refresh", theme.ViewRefreshIcon(), func() { go v.vm.Refresh(v.ctx) })
	histTop := container.NewVBox(container.NewHBox(widget.NewLabel("Model"), v.filter, refresh), v.empty)
	return container.New(layout.NewBorderLayout(histTop, nil, nil, nil), histTop, v.table) // Tab: filter, then table
}

// newChartTab is t/s over time, prompt processing and generation apart.
func (v *View) newChartTab() fyne.CanvasObject {
	v.trend = canvas.NewImageFromImage(nil)
	v.trend.FillMode = canvas.ImageFillContain
	v.trend.SetMinSize(fyne.NewSize(320, 180))
	v.trendG = canvas.NewImageFromImage(nil)
	v.trendG.FillMode = canvas.ImageFillContain
	v.trendG.SetMinSize(fyne.NewSize(320, 180))
	v.qual = canvas.NewImageFromImage(nil)
	v.qual.FillMode = canvas.ImageFillContain
	v.qual.SetMinSize(fyne.NewSize(320, 180))
	// The caption wraps and the three charts scroll: otherwise the tab
	// would need more than an 800×600 window.
	caption := widget.NewLabel("t/s over time, per model, engine and test (the history's model filter applies); " +
		"perplexity against decode speed per model family")
	caption.Wrapping = fyne.TextWrapWord
	return container.NewBorder(caption, nil, nil, nil,
		container.NewVScroll(container.NewGridWithColumns(1, v.trend, v.trendG, v.qual)))
}

// newCompareTab is the baseline and candidate, Compare and its result.
func (v *View) newCompareTab() fyne.CanvasObject {
	v.base = entry("", "a run id (pick a History row), or a filter, e.g. model=NAME,latest")
	v.cand = entry("", "a run id (pick a second History row)")
	// Broken into short lines: the label does not wrap (the comparison it
	// shows is a table), and one line ran off an 800-pixel window.
	v.cmpText = widget.NewLabel("Pick two runs in History (the first row you select is the baseline,\nthe second the candidate) and press Compare.\nTests are matched by kind and size; the cache is a column.")
	v.cmpText.TextStyle = fyne.TextStyle{Monospace: true}
	v.cmpChart = canvas.NewImageFromImage(nil)
	v.cmpChart.FillMode = canvas.ImageFillContain
	v.cmpChart.SetMinSize(fyne.NewSize(560, 300))
	v.compare = widget.NewButtonWithIcon("Compare", theme.SearchIcon(), func() {
		b, c := v.base.Text, v.cand.Text
		go v.vm.Compare(v.ctx, b, c)
	})
	cmpForm := widget.NewForm(widget.NewFormItem("Baseline", v.base), widget.NewFormItem("Candidate", v.cand))
	cmpTop := container.NewVBox(cmpForm, container.NewHBox(v.compare))
	return container.New(layout.NewBorderLayout(cmpTop, nil, nil, nil), cmpTop,
		container.NewVSplit(container.NewScroll(v.cmpText), v.cmpChart))
}

// Selector picks the row's whole invocation (all its tests) for a
// comparison: their run ids.
func (r Row) Selector(all []Row) string {
	var ids []string
	for _, x := range all {
		if x.Batch == r.Batch {
			ids = append(ids, strconv.FormatInt(x.RunID, 10))
		}
	}
	return strings.Join(ids, ",")
}

func (v *View) formValue() Form {
	return Form{
		PTE: v.pte.Text, Tokenizer: v.tok.Text, Prompts: v.prompts.Text, Gens: v.gens.Text, Depths: v.depths.Text,
		Reps: v.reps.Text, NoWarmup: v.noWarmup.Checked, KVDTypes: v.dtypes.Text, KVCapacities: v.caps.Text,
		KVWindows: v.windows.Text, Engine: v.engine.Selected,
	}
}

// choose makes path the form's model; the view-model fills in the
// tokenizer next to it and the redraw copies both into the fields.
func (v *View) choose(path string) {
	v.vm.SetForm(v.formValue())
	v.vm.ChooseModel(path)
}

// setFields copies f into the form's widgets.
func (v *View) setFields(f Form) {
	for e, text := range map[*widget.Entry]string{v.pte: f.PTE, v.tok: f.Tokenizer, v.prompts: f.Prompts, v.gens: f.Gens,
		v.depths: f.Depths, v.reps: f.Reps, v.dtypes: f.KVDTypes, v.caps: f.KVCapacities, v.windows: f.KVWindows} {
		e.SetText(text)
	}
	v.engine.SetSelected(f.Engine)
	v.noWarmup.SetChecked(f.NoWarmup)
}

func (v *View) onStart() {
	v.vm.SetForm(v.formValue())
	v.start.Disable()
	go func() {
		// Start checks the model file (hashing it) before returning.
		if err := v.vm.Start(v.ctx); err != nil {
			v.do(func() {
				v.redraw()
				dialog.ShowError(errors.New("The benchmark did not start: "+Explain(err)), v.win)
			})
		}
	}()
}

// redraw copies the view-model's state into the widgets (UI goroutine).
func (v *View) redraw() {
	rs := v.vm.Run()
	if rs.Running {
		v.start.Disable()
		v.cancel.Enable()
	} else {
		v.start.Enable()
		v.cancel.Disable()
	}
	v.progress.SetValue(rs.Fraction)
	v.status.SetText(rs.Status)

	if fv := v.vm.FormVersion(); fv != v.formVer {
		v.formVer = fv
		v.setFields(v.vm.Form())
	}
	v.models = v.vm.Library()
	labels := make([]string, len(v.models))
	sel := ""
	for i, m := range v.models {
		labels[i] = m.Label
		if m.Path == v.pte.Text {
			sel = m.Label
		}
	}
	v.model.Options = labels
	if sel != v.model.Selected {
		v.model.Selected = sel // no OnChanged: the fields say it already
	}
	v.model.Refresh()

	v.showFilter()
	var empty string
	v.rows, empty = v.vm.History()
	v.empty.SetText(empty)
	if empty == "" {
		v.empty.Hide()
	} else {
		v.empty.Show()
	}
	v.table.Refresh()

	if rows := v.vm.ResultRows(); len(rows) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%-14s %-28s %10s %8s %9s %5s\n", ResultColumns[0], ResultColumns[1], ResultColumns[2], ResultColumns[3], ResultColumns[4], ResultColumns[5])
		for _, r := range rows {
			fmt.Fprintf(&b, "%-14s %-28s %10s %8s %9s %5s\n", r[0], r[1], r[2], r[3], r[4], r[5])
		}
		v.results.SetText(b.String())
	} else {
		v.results.SetText("")
	}

	th := fyne.CurrentApp().Settings().Theme()
	variant := fyne.CurrentApp().Settings().ThemeVariant()
	fg, bg := th.Color(theme.ColorNameForeground, variant), th.Color(theme.ColorNameBackground, variant)
	v.vm.mu.Lock()
	themeChanged := v.vm.chartFG != fg || v.vm.chartBG != bg
	v.vm.mu.Unlock()
	if themeChanged {
		v.vm.SetChartColors(fg, bg) // the charts follow the theme
	}
	tv, cv := v.vm.ChartVersions()
	if tv != v.trendVer {
		v.trendVer = tv
		sz := plot.Size{W: 8 * vg.Inch, H: 3 * vg.Inch}
		v.trend.Image = chartOrNil(v.vm.TrendChart(sz, "pp", fg, bg))
		v.trendG.Image = chartOrNil(v.vm.TrendChart(sz, "tg", fg, bg))
		v.qual.Image = chartOrNil(v.vm.VariantsChart(sz, fg, bg))
		v.trend.Refresh()
		v.trendG.Refresh()
		v.qual.Refresh()
	}

	text, _, err := v.vm.CompareResult()
	switch {
	case err != nil:
		v.cmpText.SetText(err.Error())
	case text != "":
		v.cmpText.SetText(text)
	}
	if cv != v.cmpVer {
		v.cmpVer = cv
		v.cmpChart.Image = chartOrNil(v.vm.CompareChart(plot.Size{W: 7 * vg.Inch, H: 3.5 * vg.Inch}))
		v.cmpChart.Refresh()
	}
}

func chartOrNil(img image.Image, err error) image.Image {
	if err != nil {
		return nil
	}
	return img
}

// pair is a form row's field with a second labelled field beside it.
func pair(first fyne.CanvasObject, label string, second fyne.CanvasObject) fyne.CanvasObject {
	l := widget.NewLabelWithStyle(label, fyne.TextAlignTrailing, fyne.TextStyle{Bold: true})
	return container.NewGridWithColumns(2, first, container.NewBorder(nil, nil, l, nil, second))
}
