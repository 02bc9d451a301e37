package app

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/inference/modelinfo"
)

// libraryView is the Models tab: the list on the left, the details pane on
// the right.
type libraryView struct {
	u       *UI
	preset  *presetRow // the selected model's preset (ui_presets.go)
	root    fyne.CanvasObject
	list    *widget.List
	entries []LibraryEntry
	empty   *widget.Label
	// scanBar and scanText show models being read (start, add, rescan).
	scanBar  *widget.ProgressBar
	scanText *widget.Label
	scanBox  *fyne.Container

	title    *widget.Label
	blocked  *widget.Label   // why Chat is disabled, at the top
	facts    *fyne.Container // label/value pairs in a form layout
	capacity *widget.Entry
	dtype    *widget.Select
	memory   *widget.Label
	layers   *widget.Table
	layerRow [][]string
	layerH   *minHeight
	layerBox *fyne.Container
	summary  *widget.Label
	details  fyne.CanvasObject
	noSel    *widget.Label

	removeBtn, deleteBtn, chatBtn *widget.Button
	left                          *fyne.Container
	syncing                       bool
}

func newLibraryView(u *UI) *libraryView {
	v := &libraryView{u: u}
	v.list = widget.NewList(
		func() int { return len(v.entries) },
		func() fyne.CanvasObject {
			name := widget.NewLabelWithStyle("name", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
			// The name and folder wrap and the badge keeps its place at the
			// right: in a row of both at 800×600 the badge and the folder
			// were cut.
			name.Wrapping = fyne.TextWrapWord
			badge := widget.NewLabel("badge")
			row := widget.NewLabel("row")
			row.Wrapping = fyne.TextWrapWord // the tokenizer status comes first and is never cut
			return container.NewVBox(container.NewBorder(nil, nil, nil, badge, name), row)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(v.entries) {
				return
			}
			e := v.entries[i]
			box := o.(*fyne.Container)
			head := box.Objects[0].(*fyne.Container)
			head.Objects[0].(*widget.Label).SetText(e.Label())
			badge := head.Objects[1].(*widget.Label) // the border lists the name, then the badge
			badge.SetText("[" + e.Badge() + "]")
			badge.Importance = badgeImportance(e)
			badge.Refresh()
			box.Objects[1].(*widget.Label).SetText(e.Row())
			head.Refresh() // lay the name and badge out for their new widths
			// The wrapped row's height depends on its width: measure it at
			// the width the list gives its rows, not the template's (the
			// first drawing clipped rows until a redraw).
			if w := v.list.Size().Width; w > 0 { // the list gives its rows its own width
				box.Resize(fyne.NewSize(w, box.MinSize().Height))
			}
			v.list.SetItemHeight(i, box.MinSize().Height)
		},
	)
	v.list.OnSelected = func(i widget.ListItemID) {
		if v.syncing || i >= len(v.entries) {
			return
		}
		u.Library.Select(v.entries[i].Path)
	}
	v.empty = widget.NewLabel("No models yet. Add .pte files or a folder with the buttons above, or drop them onto this window.")
	v.empty.Wrapping = fyne.TextWrapWord

	add := widget.NewButtonWithIcon("Add…", theme.FileIcon(), v.addPath)
	addDir := widget.NewButtonWithIcon("Add Folder…", theme.FolderOpenIcon(), v.addFolder)
	rescan := widget.NewButtonWithIcon("Rescan", theme.ViewRefreshIcon(), v.rescan)
	v.removeBtn = widget.NewButtonWithIcon("Remove", theme.ContentRemoveIcon(), v.remove)
	v.deleteBtn = widget.NewButtonWithIcon("Delete File…", theme.DeleteIcon(), v.deleteFile)
	v.chatBtn = widget.NewButtonWithIcon("Chat", theme.MailComposeIcon(), v.openChat)
	v.chatBtn.Importance = widget.HighImportance
	toolbar := container.NewHBox(add, addDir, rescan, v.removeBtn, v.deleteBtn, v.chatBtn)

	// Details pane.
	v.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.title.Wrapping = fyne.TextWrapWord // a name with its folder (two of one name) must not widen the details past the window
	v.blocked = widget.NewLabel("")
	v.blocked.Wrapping = fyne.TextWrapWord
	v.blocked.Importance = widget.WarningImportance
	v.facts = container.New(layout.NewFormLayout())
	v.capacity = widget.NewEntry()
	v.capacity.SetPlaceHolder("model maximum")
	v.dtype = widget.NewSelect(DTypes, nil)
	v.dtype.SetSelected("bf16")
	v.capacity.OnChanged = func(string) { v.estimateChanged() }
	v.dtype.OnChanged = func(string) { v.estimateChanged() }
	v.memory = widget.NewLabel("")
	v.memory.Wrapping = fyne.TextWrapWord
	v.summary = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	v.summary.Wrapping = fyne.TextWrapWord
	v.layers = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.layerRow), len(LayerHeader) },
		func() fyne.CanvasObject { return widget.NewLabel("KV full") },
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row < len(v.layerRow) && id.Col < len(v.layerRow[id.Row]) {
				o.(*widget.Label).SetText(v.layerRow[id.Row][id.Col])
			}
		})
	v.layers.ShowHeaderColumn = false
	v.layers.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Col >= 0 && id.Col < len(LayerHeader) {
			o.(*widget.Label).SetText(LayerHeader[id.Col])
		}
	}
	estimate := widget.NewForm(widget.NewFormItem("Capacity", v.capacity), widget.NewFormItem("KV dtype", v.dtype))
	v.layerH = &minHeight{h: 180}
	v.layerBox = container.New(v.layerH, v.layers)
	v.details = container.NewVScroll(container.New(scrollGutter{}, container.NewVBox(
		v.title, v.blocked, v.newPresetRow(),
		widget.NewLabelWithStyle("KV cache estimate", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		estimate, v.memory, v.summary, v.layerBox, widget.NewSeparator(), v.facts,
	)))
	v.noSel = widget.NewLabel("Select a model to see its details.")
	right := container.NewStack(v.details, v.noSel)

	v.scanBar = widget.NewProgressBar()
	v.scanText = widget.NewLabel("")
	v.scanText.Truncation = fyne.TextTruncateEllipsis
	v.scanBox = container.NewVBox(v.scanText, v.scanBar)
	v.scanBox.Hide()
	v.left = container.NewBorder(v.scanBox, nil, nil, nil, container.New(&remeasureOnWidth{list: v.list}, v.list, v.empty))
	left := v.left
	split := container.NewHSplit(left, right)
	split.Offset = 0.3 // the details need the room: the per-cache table fits without scrolling sideways at 800×600
	v.root = borderInOrder(toolbar, nil, nil, nil, split)
	u.Library.Subscribe(u.coalesce(v.refresh))
	v.refresh()
	return v
}

// scrollGutter lays its content out a scroll bar's width short of the
// right edge: a Scroll draws its bar over its content, where it covered
// the fields that reach the edge (the Capacity entry at 800×600).
type scrollGutter struct{}

func (scrollGutter) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for _, o := range objs {
		s = s.Max(o.MinSize())
	}
	return s.AddWidthHeight(theme.ScrollBarSize(), 0)
}

func (scrollGutter) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	inner := fyne.NewSize(max(0, size.Width-theme.ScrollBarSize()), size.Height)
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(inner)
	}
}

func badgeImportance(e LibraryEntry) widget.Importance {
	switch {
	case e.Info == nil || e.Info.Kind == modelinfo.Unsupported:
		return widget.DangerImportance
	case e.Info.Kind == modelinfo.InGraph:
		return widget.WarningImportance
	}
	return widget.SuccessImportance
}

// refresh redraws from the view-model (UI goroutine only).
func (v *libraryView) refresh() {
	v.entries = v.u.Library.Entries()
	v.list.Refresh()
	if sc := v.u.Library.Scanning(); sc.Active() {
		v.scanText.SetText(sc.Text())
		v.scanBar.SetValue(sc.Fraction())
		v.scanBox.Show()
	} else {
		v.scanBox.Hide()
	}
	v.left.Refresh() // lay out again: a hidden progress line leaves no band
	if len(v.entries) == 0 && !v.u.Library.Scanning().Active() {
		v.empty.Show()
	} else {
		v.empty.Hide()
	}
	sel, ok := v.u.Library.Selected()
	v.syncing = true
	if ok {
		for i, e := range v.entries {
			if e.Path == sel.Path {
				v.list.Select(i)
			}
		}
	} else {
		v.list.UnselectAll()
	}
	v.syncing = false
	for _, b := range []*widget.Button{v.removeBtn, v.deleteBtn} {
		if ok {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	if ok && sel.Chattable() {
		v.chatBtn.Enable()
	} else {
		v.chatBtn.Disable()
	}
	v.refreshPreset(sel, ok)
	v.refreshDetails()
}

func (v *libraryView) refreshDetails() {
	d, ok := v.u.Library.Details()
	if !ok {
		v.details.Hide()
		v.noSel.Show()
		return
	}
	v.noSel.Hide()
	v.details.Show()
	v.title.SetText(d.Title)
	v.blocked.SetText(d.ChatBlocked)
	if d.ChatBlocked == "" {
		v.blocked.Hide()
	} else {
		v.blocked.Show()
	}
	// An in-graph program's cache is fixed by the export: nothing to pick.
	setEnabledW(v.capacity, d.Configurable)
	setEnabledW(v.dtype, d.Configurable)
	v.facts.RemoveAll()
	for _, f := range d.Facts {
		l := widget.NewLabel(f[1])
		l.Wrapping = fyne.TextWrapWord
		if !strings.Contains(f[1], " ") {
			l.Wrapping = fyne.TextWrapBreak // paths and hashes
		}
		v.facts.Add(widget.NewLabelWithStyle(f[0], fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}))
		v.facts.Add(l)
	}
	v.facts.Refresh()
	v.memory.SetText(d.Memory)
	if d.CacheErr != "" {
		v.memory.Importance = widget.DangerImportance
	} else {
		v.memory.Importance = widget.MediumImportance
	}
	v.memory.Refresh()
	v.summary.SetText(d.Summary)
	v.layerRow = d.Layers
	v.fitLayerColumns()
	// room for every layer up to ten, then the table scrolls
	v.layerH.h = float32(min(len(d.Layers), 10)+1)*40 + 8
	v.layerBox.Refresh()
	v.layers.Refresh()
}

func (v *libraryView) estimateChanged() {
	if v.syncing {
		return
	}
	v.u.Library.SetEstimate(v.capacity.Text, v.dtype.Selected)
}

func (v *libraryView) addFile() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			v.u.ShowError(err)
			return
		}
		if r == nil {
			return
		}
		uri := r.URI()
		r.Close()
		v.u.AddURIs([]fyne.URI{uri})
	}, v.u.Win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".pte"}))
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

// addPath asks for a file or folder path (typed or pasted; Browse opens
// the file dialog) and adds it.
func (v *libraryView) addPath() {
	e := v.u.newEscEntry(false)
	e.SetPlaceHolder("/path/to/model.pte or a folder of models")
	var d *dialog.CustomDialog
	add := func() {
		p := strings.TrimSpace(e.Text)
		if p == "" {
			return
		}
		d.Hide()
		v.u.AddURIs([]fyne.URI{storage.NewFileURI(p)})
	}
	e.OnSubmitted = func(string) { add() }
	browseFile := widget.NewButtonWithIcon("File…", theme.FileIcon(), func() { d.Hide(); v.addFile() })
	browseDir := widget.NewButtonWithIcon("Folder…", theme.FolderOpenIcon(), func() { d.Hide(); v.addFolder() })
	addBtn := widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), add)
	addBtn.Importance = widget.HighImportance
	content := container.NewVBox(widget.NewLabel("Path of a .pte file or a folder (every .pte under it is added):"), e,
		container.NewHBox(widget.NewLabel("or browse:"), browseFile, browseDir))
	d = dialog.NewCustomWithoutButtons("Add Models", container.NewGridWrap(fyne.NewSize(560, 140), content), v.u.Win)
	d.SetButtons([]fyne.CanvasObject{widget.NewButton("Cancel", func() { d.Hide() }), addBtn})
	d.Show()
	v.u.Win.Canvas().Focus(e)
}

func (v *libraryView) addFolder() {
	d := dialog.NewFolderOpen(func(l fyne.ListableURI, err error) {
		if err != nil {
			v.u.ShowError(err)
			return
		}
		if l == nil {
			return
		}
		v.u.AddURIs([]fyne.URI{l})
	}, v.u.Win)
	d.Resize(fyne.NewSize(900, 600))
	d.Show()
}

func (v *libraryView) rescan() {
	go v.u.Library.Rescan(v.u.ctx)
}

func (v *libraryView) remove() {
	sel, ok := v.u.Library.Selected()
	if !ok {
		return
	}
	go func() {
		if err := v.u.Library.Remove(v.u.ctx, sel.Path); err != nil {
			v.u.do(func() { v.u.ShowError(err) })
		}
	}()
}

func (v *libraryView) deleteFile() {
	sel, ok := v.u.Library.Selected()
	if !ok {
		return
	}
	msg := fmt.Sprintf("Delete %s from the disk?\n\n%s\n\nThis cannot be undone. Remove only forgets it.", sel.Name(), sel.Path)
	dialog.ShowConfirm("Delete the model file?", msg, func(yes bool) {
		if !yes {
			return
		}
		go func() {
			if err := v.u.Library.DeleteFile(v.u.ctx, sel.Path); err != nil {
				v.u.do(func() { v.u.ShowError(err) })
			}
		}()
	}, v.u.Win)
}

// openChat switches the chat to the selected model.
func (v *libraryView) openChat() {
	sel, ok := v.u.Library.Selected()
	if !ok {
		return
	}
	if !sel.Chattable() {
		why := strings.TrimSpace(sel.Reason())
		if why == "" {
			why = "it has no tokenizer.json next to it"
		}
		v.u.ShowError(errors.New(sel.Name() + " cannot be chatted with: " + why))
		return
	}
	v.u.chat.setModel(sel.Info)
	v.u.SelectTab(TabChat)
}

// minHeight lays its objects over its whole area and asks for a height
// only, so a table inside a scroll neither collapses nor widens the pane.
type minHeight struct{ h float32 }

func (h *minHeight) MinSize([]fyne.CanvasObject) fyne.Size { return fyne.NewSize(1, h.h) }

func (h *minHeight) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

// remeasureOnWidth stacks its objects, as container.NewStack, and has the
// list measure its rows again when its width changes: a wrapped row's
// height follows the width, and the list keeps the heights it was given
// (rows were clipped after the window narrowed, until a redraw).
type remeasureOnWidth struct {
	list  *widget.List
	width float32
}

func (r *remeasureOnWidth) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
	if size.Width != r.width {
		r.width = size.Width
		r.list.Refresh()
	}
}

func (r *remeasureOnWidth) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var m fyne.Size
	for _, o := range objs {
		if o.Visible() {
			m = m.Max(o.MinSize())
		}
	}
	return m
}

// fitLayerColumns sizes each column of the per-cache table to its widest
// text, header included: fixed widths cut a shared cache's cell ("4
// (4,6,7,8)" on Gemma 4) into its neighbour, and were wider than the
// details pane at 800×600 elsewhere.
func (v *libraryView) fitLayerColumns() {
	pad := 2 * theme.InnerPadding()
	size := theme.TextSize()
	for c, h := range LayerHeader {
		w := fyne.MeasureText(h, size, fyne.TextStyle{Bold: true}).Width
		for _, row := range v.layerRow {
			if c < len(row) {
				w = max(w, fyne.MeasureText(row[c], size, fyne.TextStyle{}).Width)
			}
		}
		v.layers.SetColumnWidth(c, float32(math.Ceil(float64(w+pad))))
	}
}
