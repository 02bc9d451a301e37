// The system prompt bar above the transcript (issue 40 item 2): the
// prompt collapsed to a line, Edit opens it in place.

package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// systemBar is the bar's widgets: the collapsed line with Edit, or the
// editor with its note, Cancel and Apply.
type systemBar struct {
	line            *widget.Label
	edit            *widget.Button
	entry           *escEntry
	cancel, apply   *widget.Button
	collapsed, open *fyne.Container
	root            *fyne.Container
}

// SystemEditNote says what applying an edited prompt does.
const SystemEditNote = "The prompt comes first in the cache: applying empties it, and your next message reads the whole conversation again under the new prompt. The old prompt and its conversation stay as a branch (‹ › on the system message)."

func (v *chatView) newSystemBar() fyne.CanvasObject {
	b := &systemBar{line: widget.NewLabel("")}
	b.line.Truncation = fyne.TextTruncateEllipsis
	b.edit = widget.NewButtonWithIcon("Edit", theme.DocumentCreateIcon(), func() { v.openSystemBar(true) })
	b.entry = v.u.newEscEntry(true)
	b.entry.Wrapping = fyne.TextWrapWord
	b.entry.SetMinRowsVisible(3)
	b.entry.SetPlaceHolder("No system prompt. Type one, e.g. \"Answer briefly.\"")
	b.cancel = widget.NewButton("Cancel", func() { v.openSystemBar(false) })
	b.apply = widget.NewButtonWithIcon("Apply", theme.ConfirmIcon(), func() {
		v.openSystemBar(false)
		v.do(v.u.Chat.SetSystemPrompt(b.entry.Text))
	})
	b.apply.Importance = widget.HighImportance
	note := widget.NewLabel(SystemEditNote)
	note.Wrapping = fyne.TextWrapWord
	note.SizeName = theme.SizeNameCaptionText
	title := widget.NewLabelWithStyle("System prompt:", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	b.collapsed = container.NewBorder(nil, nil, title, b.edit, b.line)
	b.open = container.NewBorder(nil, container.NewBorder(nil, nil, nil, container.NewHBox(b.cancel, b.apply), note), nil, nil, b.entry)
	b.open.Hide()
	b.root = container.NewVBox(b.collapsed, b.open, widget.NewSeparator())
	v.system = b
	return b.root
}

// openSystemBar opens the editor on the prompt in use, or closes it.
func (v *chatView) openSystemBar(open bool) {
	b := v.system
	if open {
		b.entry.SetText(v.u.Chat.State().System())
		b.collapsed.Hide()
		b.open.Show()
		v.u.Win.Canvas().Focus(b.entry)
	} else {
		b.open.Hide()
		b.collapsed.Show()
	}
	b.root.Refresh()
	v.main.Refresh()
	v.scroll.ScrollToBottom() // the transcript's height changed: keep the latest message in view
}

// refreshSystemBar shows the prompt's line; the bar is there once a model
// is chosen.
func (v *chatView) refreshSystemBar(st ChatState) {
	b := v.system
	if b == nil {
		return
	}
	showIf(b.root, st.Model != nil)
	b.line.SetText(st.SystemLine())
	setEnabled(b.edit, st.CanEditSystem())
	setEnabled(b.apply, st.CanEditSystem())
}
