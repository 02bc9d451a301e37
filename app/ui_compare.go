package app

import (
	"errors"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// compareView is the Compare window (File ▸ Compare Two Models…): two
// models of the library, one prompt, the replies side by side with the
// part from the first differing token marked, and each reply's speed.
type compareView struct {
	u      *UI
	vm     *Compare
	win    fyne.Window
	models map[string]*ModelInfo // by library label
	a, b   *widget.Select
	prompt *widget.Entry
	max    *widget.Entry
	start  *widget.Button
	stop   *widget.Button
	status *widget.Label
	note   *widget.Label
	heads  [2]*widget.Label
	speeds [2]*widget.Label
	texts  [2]*widget.RichText
}

// markStyle is the marked part of a reply: from the first token where the
// two differ.
var markStyle = widget.RichTextStyle{Inline: true, ColorName: theme.ColorNameError, TextStyle: fyne.TextStyle{Bold: true}}

// showCompare opens the Compare window.
func (u *UI) showCompare() {
	// The comparison opens its own sessions, not registered for the Serve
	// switch (its server shares only the chat's program).
	var o Opener = u.Backend.Opener
	if eo, ok := o.(*engineOpener); ok {
		cp := *eo
		cp.programs = nil
		o = &cp
	}
	v := newCompareView(u, NewCompare(o), u.App.NewWindow("Compare Two Models"))
	v.win.Resize(fyne.NewSize(1000, 680))
	v.win.SetOnClosed(v.vm.Stop)
	v.win.Show()
}

func newCompareView(u *UI, vm *Compare, w fyne.Window) *compareView {
	v := &compareView{u: u, vm: vm, win: w, models: map[string]*ModelInfo{}}
	var labels []string
	for _, e := range u.Library.Entries() {
		if e.Chattable() {
			labels = append(labels, e.Label())
			v.models[e.Label()] = e.Info
		}
	}
	v.a, v.b = widget.NewSelect(labels, nil), widget.NewSelect(labels, nil)
	if len(labels) > 1 {
		v.a.SetSelected(labels[0])
		v.b.SetSelected(labels[1])
	}
	v.prompt = widget.NewEntry()
	v.prompt.SetPlaceHolder("One prompt for both models")
	v.prompt.OnSubmitted = func(string) { v.run() }
	v.max = widget.NewEntry()
	v.max.SetText("64")
	v.start = widget.NewButtonWithIcon("Compare", theme.MediaPlayIcon(), v.run)
	v.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), vm.Stop)
	v.status, v.note = widget.NewLabel(""), widget.NewLabel("")
	order := widget.NewLabel(CompareOrder + " Temperature 0: a difference is the models'.")
	for _, l := range []*widget.Label{v.status, v.note, order} {
		l.Wrapping = fyne.TextWrapWord
	}
	// Compact enough for 800×600: the two models on one row, and the
	// budget beside the buttons, leave the replies most of the height.
	form := widget.NewForm(widget.NewFormItem("Models", container.NewGridWithColumns(2, v.a, v.b)),
		widget.NewFormItem("Prompt", v.prompt))
	budget := container.NewGridWrap(fyne.NewSize(90, v.max.MinSize().Height), v.max)
	top := container.NewVBox(order, form,
		container.NewHBox(widget.NewLabel("Max tokens"), budget, v.start, v.stop), v.status)
	var scrolls [2]fyne.CanvasObject
	for i := range 2 {
		v.heads[i] = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		v.speeds[i] = widget.NewLabel("")
		v.speeds[i].Wrapping = fyne.TextWrapWord
		v.texts[i] = widget.NewRichText()
		v.texts[i].Wrapping = fyne.TextWrapWord
		scrolls[i] = container.NewVScroll(v.texts[i])
	}
	// The heads and speeds are rows of one grid, so that a speed line that
	// wraps in one column only still leaves both replies starting level.
	heads := container.NewGridWithColumns(2, v.heads[0], v.heads[1], v.speeds[0], v.speeds[1])
	cols := container.NewBorder(heads, nil, nil, nil, container.NewGridWithColumns(2, scrolls[0], scrolls[1]))
	w.SetContent(container.NewBorder(top, v.note, nil, nil, cols))
	vm.OnChange = func() { u.do(v.redraw) }
	v.redraw()
	return v
}

// run starts the comparison with the fields' choices.
func (v *compareView) run() {
	a, b := v.models[v.a.Selected], v.models[v.b.Selected]
	n, err := strconv.Atoi(strings.TrimSpace(v.max.Text))
	if err != nil || n < 1 {
		v.u.ShowError(errors.New("max tokens must be a whole number of at least 1"))
		return
	}
	if v.u.Chat.State().Busy {
		v.u.ShowError(errors.New("the chat is generating: wait for its reply (or stop it) so that each model's speed is its own"))
		return
	}
	s := DefaultSettings(v.u.Prefs.Engine())
	s.Temperature, s.TopP, s.TopK, s.MaxNewTokens = 0, 1, 0, n
	if err := v.vm.Start(v.u.ctx, a, b, v.prompt.Text, s); err != nil {
		v.u.ShowError(err)
	}
}

// redraw draws the view-model's state.
func (v *compareView) redraw() {
	st := v.vm.State()
	if st.Running >= 0 {
		v.start.Disable()
		v.stop.Enable()
	} else {
		v.start.Enable()
		v.stop.Disable()
	}
	v.status.SetText(st.Status)
	v.note.SetText(st.DivergeNote())
	for i := range 2 {
		side := st.Sides[i]
		v.heads[i].SetText(side.Model)
		speed := side.Speed()
		if side.Err != "" {
			speed = side.Err
		}
		v.speeds[i].SetText(speed)
		same, differs := st.Split(i)
		segs := []widget.RichTextSegment{&widget.TextSegment{Style: widget.RichTextStyleInline, Text: same}}
		if differs != "" {
			segs = append(segs, &widget.TextSegment{Style: markStyle, Text: differs})
		}
		v.texts[i].Segments = segs
		v.texts[i].Refresh()
	}
}
