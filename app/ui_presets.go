// The library's preset row and editor (issue 40 item 2).

package app

import (
	"context"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// presetRow is the details pane's line about the selected model's preset
// and its Edit Preset… button.
type presetRow struct {
	text *widget.Label
	edit *widget.Button
	root fyne.CanvasObject
	dlg  *dialog.CustomDialog
}

func (v *libraryView) newPresetRow() fyne.CanvasObject {
	r := &presetRow{text: widget.NewLabel(""), edit: widget.NewButton("Edit Preset…", func() { v.showPresetEditor() })}
	r.text.Wrapping = fyne.TextWrapWord
	r.root = container.NewBorder(nil, nil, nil, r.edit, r.text)
	v.preset = r
	return r.root
}

// PresetLine is what the library says of m's preset.
func PresetLine(p Preset, ok bool) string {
	if !ok {
		return "Preset: none — New uses the model's generation_config.json, else the app's defaults"
	}
	return "Preset: " + p.Summary()
}

// refreshPreset shows the selected model's preset.
func (v *libraryView) refreshPreset(e LibraryEntry, selected bool) {
	if v.preset == nil {
		return
	}
	if !selected || !e.Runnable() {
		v.preset.root.Hide()
		return
	}
	p, ok, err := v.u.Chat.presets.Get(context.Background(), e.Info)
	text := PresetLine(p, ok)
	if err != nil {
		text = "Preset: " + err.Error()
	}
	v.preset.text.SetText(text)
	v.preset.root.Show()
}

// showPresetEditor edits the selected model's preset: the settings sheet's
// preset fields, filled with the preset or what New would use now.
func (v *libraryView) showPresetEditor() *settingsSheet {
	e, ok := v.u.Library.Selected()
	if !ok || !e.Runnable() {
		return nil
	}
	ps := v.u.Chat.presets
	ctx := context.Background()
	_, has, _ := ps.Get(ctx, e.Info)
	sheet := newSettingsSheetOf(ps.Form(ctx, e.Info, v.u.Prefs.Engine()), v.u.newEscEntry, PresetFields)
	var d *dialog.CustomDialog
	done := func(err error) {
		if err != nil {
			v.u.ShowError(err)
			return
		}
		d.Hide()
		v.refreshPreset(e, true)
	}
	save := widget.NewButtonWithIcon("Save Preset", theme.ConfirmIcon(), func() { done(ps.Save(ctx, e.Info, sheet.form)) })
	save.Importance = widget.HighImportance
	sheet.onValid = func(ok bool) { setEnabled(save, ok) }
	sheet.refresh()
	clear := widget.NewButton("Clear Preset", func() { done(ps.Clear(ctx, e.Info)) })
	if !has {
		clear.Disable()
	}
	title := "Preset for " + e.Label()
	note := widget.NewLabel("New conversations with this model start from these settings (before its generation_config.json and the app's defaults).")
	note.Wrapping = fyne.TextWrapWord
	body := container.NewBorder(note, nil, nil, nil, container.NewVScroll(sheet.root))
	d = dialog.NewCustomWithoutButtons(title, container.NewGridWrap(sheetSize(v.u.Win.Canvas().Size()), body), v.u.Win)
	d.SetButtons([]fyne.CanvasObject{widget.NewButton("Cancel", func() { d.Hide() }), clear, save})
	d.Show()
	v.preset.dlg = d
	return sheet
}
