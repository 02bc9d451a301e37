package app

import (
	"bytes"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/widget"

	"etchat/inference/quality"
	"etchat/internal/qualitystore"
	"etchat/store"
)

// qualityView is the Quality window of one model (File → Measure
// Quality…): text and base pickers, Start and Stop, progress, the result
// beside the model's benchmark numbers, and the model's past quality runs.
type qualityView struct {
	u   *UI
	vm  *Quality
	win fyne.Window

	model, bench   *widget.Label
	text, base     *widget.Select
	start, stop    *widget.Button
	bar            *widget.ProgressBar
	status, result *widget.Label
	history        *widget.Label
	baseLabels     map[string]string // label → path
}

const (
	bundledText = "Bundled: Newton's Opticks (12 KB, public domain)"
	fileText    = "A text file…"
	noBase      = "None (perplexity only)"
)

// showQuality opens the Quality window for the library's selected model.
func (u *UI) showQuality() {
	sel, ok := u.Library.Selected()
	if !ok || !sel.Runnable() {
		u.ShowError(fmt.Errorf("select a model that etchat can run in the Models tab first"))
		return
	}
	var st QualityStore
	if u.Backend.DB != nil {
		st = dbQuality{u.Backend.DB}
	}
	vm := NewQuality(quality.Run, st, u.Prefs.Engine())
	v := newQualityView(u, vm, u.App.NewWindow("Quality — "+sel.Label()))
	vm.SetModel(u.ctx, sel, u.Library.Entries())
	v.win.Resize(fyne.NewSize(900, 640))
	v.win.SetOnClosed(vm.Stop)
	v.win.Show()
}

// newQualityView builds the window's content and binds it to vm; every
// update from vm's goroutines goes through u.do.
func newQualityView(u *UI, vm *Quality, w fyne.Window) *qualityView {
	v := &qualityView{u: u, vm: vm, win: w, baseLabels: map[string]string{}}
	v.model, v.bench = widget.NewLabel(""), widget.NewLabel("")
	v.text = widget.NewSelect([]string{bundledText, fileText}, v.pickText)
	v.text.SetSelected(bundledText)
	v.base = widget.NewSelect([]string{noBase}, func(label string) {
		if err := vm.SetBase(v.baseLabels[label]); err != nil {
			u.ShowError(err)
		}
	})
	v.base.SetSelected(noBase)
	v.start = widget.NewButton("Start", func() {
		if err := vm.Start(u.ctx); err != nil {
			u.ShowError(err)
		}
	})
	v.stop = widget.NewButton("Stop", vm.Stop)
	v.bar = widget.NewProgressBar()
	v.status, v.result, v.history = widget.NewLabel(""), widget.NewLabel(""), widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.result.TextStyle = fyne.TextStyle{Monospace: true}
	v.history.TextStyle = fyne.TextStyle{Monospace: true}
	form := widget.NewForm(widget.NewFormItem("Model", v.model), widget.NewFormItem("Benchmarks", v.bench),
		widget.NewFormItem("Text", v.text), widget.NewFormItem("Base model", v.base))
	top := container.NewVBox(form, container.NewHBox(v.start, v.stop), v.bar, v.status)
	body := container.NewVScroll(container.NewVBox(v.result, widget.NewLabel("Past quality runs of this model"), v.history))
	w.SetContent(container.NewBorder(top, nil, nil, nil, body))
	vm.OnChange = func() { u.do(v.refresh) }
	v.refresh()
	return v
}

// pickText asks for a file when "A text file…" is chosen.
func (v *qualityView) pickText(label string) {
	if label != fileText {
		v.vm.SetText("")
		return
	}
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil || r == nil {
			v.text.SetSelected(bundledText)
			return
		}
		r.Close()
		v.vm.SetText(r.URI().Path())
	}, v.win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".txt", ".md"}))
	d.Show()
}

// refresh draws the view-model's state.
func (v *qualityView) refresh() {
	s := v.vm.State()
	v.model.SetText(s.Model.Label())
	v.bench.SetText(orDash(s.Bench))
	labels := []string{noBase}
	v.baseLabels = map[string]string{}
	for _, c := range s.Candidates {
		labels = append(labels, c.Label())
		v.baseLabels[c.Label()] = c.Path
	}
	v.base.Options = labels
	v.base.Refresh()
	if s.Running {
		v.start.Disable()
		v.stop.Enable()
		v.text.Disable()
		v.base.Disable()
	} else {
		v.start.Enable()
		v.stop.Disable()
		v.text.Enable()
		v.base.Enable()
	}
	if p := s.Progress; p.Windows > 0 {
		v.bar.SetValue(float64(p.Window) / float64(p.Windows))
	} else {
		v.bar.SetValue(0)
	}
	status := s.Status
	if s.TextPath != "" && !s.Running {
		status += "\nText: " + s.TextPath
	}
	if s.Err != nil {
		status += "\n" + s.Err.Error()
	}
	v.status.SetText(status)
	v.result.SetText(resultText(s.Result))
	v.history.SetText(historyText(s.History))
}

func orDash(s string) string {
	if s == "" {
		return "no benchmark of this model yet (Benchmarks tab)"
	}
	return s
}

// resultText is the result as etchat perplexity prints it.
func resultText(r *quality.Result) string {
	if r == nil {
		return ""
	}
	var b bytes.Buffer
	quality.Write(&b, "md", []*quality.Result{r})
	return strings.TrimSpace(b.String())
}

// historyText lists past runs, newest first.
func historyText(runs []store.Run) string {
	if len(runs) == 0 {
		return "none yet"
	}
	var b strings.Builder
	for _, run := range runs {
		fmt.Fprintf(&b, "%s  %-4s  PPL %.4g ± %.2g over %d tokens", run.Started.Local().Format("2006-01-02 15:04"), run.Engine,
			run.Quality.PPL, run.Quality.PPLErr, run.Quality.Scored)
		if run.Quality.BaseSHA256 != "" {
			fmt.Fprintf(&b, ", KLD %.4g ± %.2g, same top %.1f%%", run.Quality.KLDMean, run.Quality.KLDMeanErr, run.Quality.SameTopPct)
		}
		if r, err := qualitystore.FromRun(run); err == nil && r.Text != "" {
			fmt.Fprintf(&b, "  (%s, ctx %d)", shortText(r.Text), r.Ctx)
		}
		if run.Error != "" {
			b.WriteString("  " + run.Error)
		}
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

func shortText(s string) string {
	if i := strings.Index(s, ","); i > 0 && strings.HasPrefix(s, "bundled") {
		return "bundled Opticks"
	}
	return s
}
