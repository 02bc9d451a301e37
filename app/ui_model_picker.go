// The chat's model picker dialog and the chosen model's facts under the
// selector (issue 40 item 3).

package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// newModelPicker is the selector's row: the selector and the button that
// opens the picker; and the chosen model's facts under it.
func (v *chatView) newModelPicker() (row, facts fyne.CanvasObject) {
	v.pickBtn = widget.NewButtonWithIcon("", theme.ListIcon(), v.showModelPicker)
	v.modelFacts = widget.NewLabel("")
	v.modelFacts.Wrapping = fyne.TextWrapWord
	v.modelFacts.SizeName = theme.SizeNameCaptionText
	v.modelFacts.Hide()
	return container.NewBorder(nil, nil, nil, v.pickBtn, v.model), v.modelFacts
}

// showModelFacts puts the chosen model's facts under the selector.
func (v *chatView) showModelFacts(m *ModelInfo) {
	if m == nil {
		v.modelFacts.Hide()
		return
	}
	for _, c := range v.choices {
		if c.Entry.Path == m.Path {
			v.modelFacts.SetText(c.Facts)
			v.modelFacts.Show()
			return
		}
	}
	v.modelFacts.Hide()
}

// showModelPicker lists the models the chat can open, each with its size,
// quantization, context and cache kind (a tap picks it), then those it
// cannot, each with why.
func (v *chatView) showModelPicker() {
	chat, left := ModelChoices(v.u.Library.Entries())
	var d dialog.Dialog
	rows := container.NewVBox()
	if len(chat) == 0 {
		rows.Add(widget.NewLabel("No model can chat yet: add one in the Models tab."))
	}
	for _, c := range chat {
		pick := widget.NewButton(c.Entry.Label(), func() {
			d.Hide()
			v.model.SetSelected(c.Entry.Label()) // its OnChanged switches the chat
		})
		pick.Alignment = widget.ButtonAlignLeading
		if v.st.Model != nil && v.st.Model.Path == c.Entry.Path {
			pick.Importance = widget.HighImportance
		}
		rows.Add(pick)
		rows.Add(wrapped(c.Facts, theme.SizeNameCaptionText))
	}
	if len(left) > 0 {
		rows.Add(widget.NewLabelWithStyle("Cannot chat", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
		for _, c := range left {
			rows.Add(wrapped(c.Entry.Label()+": "+c.Why, theme.SizeNameText))
		}
	}
	size := v.u.Win.Canvas().Size()
	scroll := container.NewVScroll(rows)
	scroll.SetMinSize(fyne.NewSize(min(560, size.Width-120), min(360, size.Height-200)))
	d = dialog.NewCustom("Choose a Model", "Close", scroll, v.u.Win)
	v.picker = d
	d.Show()
}

// wrapped is a label that wraps at words, in text size sz.
func wrapped(text string, sz fyne.ThemeSizeName) *widget.Label {
	l := widget.NewLabel(text)
	l.Wrapping = fyne.TextWrapWord
	l.SizeName = sz
	return l
}
