package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// benchView is the Benchmarks tab: an explanation and the stored runs.
type benchView struct {
	u     *UI
	root  fyne.CanvasObject
	table *widget.Table
	rows  [][]string
	empty *widget.Label
}

func newBenchView(u *UI) *benchView {
	v := &benchView{u: u}
	intro := widget.NewLabel(BenchIntro)
	intro.Wrapping = fyne.TextWrapWord
	v.empty = widget.NewLabel("")
	v.empty.Wrapping = fyne.TextWrapWord
	v.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.rows), len(RunHeader) },
		func() fyne.CanvasObject { return widget.NewLabel("2006-01-02 15:04:05") },
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row < len(v.rows) && id.Col < len(v.rows[id.Row]) {
				o.(*widget.Label).SetText(v.rows[id.Row][id.Col])
			}
		})
	v.table.ShowHeaderColumn = false
	v.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 && id.Col < len(RunHeader) {
			o.(*widget.Label).SetText(RunHeader[id.Col])
		}
	}
	for i, w := range []float32{170, 60, 200, 70, 70, 90, 110, 110, 80, 240} {
		v.table.SetColumnWidth(i, w)
	}
	refresh := widget.NewButtonWithIcon("Refresh", theme.ViewRefreshIcon(), v.refresh)
	top := container.NewVBox(intro, container.NewHBox(refresh), v.empty)
	v.root = container.NewBorder(top, nil, nil, nil, v.table)
	u.Bench.OnChange = func() { u.do(v.redraw) }
	return v
}

func (v *benchView) refresh() {
	go func() { _ = v.u.Bench.Refresh(v.u.ctx) }() // the error shows in the tab
}

func (v *benchView) redraw() {
	rows, empty := v.u.Bench.Table()
	v.rows = rows
	v.empty.SetText(empty)
	if empty == "" {
		v.empty.Hide()
	} else {
		v.empty.Show()
	}
	v.table.Refresh()
}
