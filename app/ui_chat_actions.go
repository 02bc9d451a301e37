package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// showMore opens the menu of the rarer actions.
func (v *chatView) showMore() {
	st := v.u.Chat.State()
	undoTok := fyne.NewMenuItem("Undo Tokens…", v.undoTokensDialog)
	undoTok.Disabled = !st.CanUndoTokens()
	edit := fyne.NewMenuItem("Edit Last Message…", v.editLast)
	edit.Disabled = !st.CanUndo()
	reset := fyne.NewMenuItem("Reset Conversation…", v.reset)
	reset.Disabled = !st.CanReset()
	cont := fyne.NewMenuItem("Continue Reply", v.continueReply)
	cont.Disabled = !st.CanContinue()
	tree := fyne.NewMenuItem("Branch Tree…", v.showBranchTree)
	tree.Disabled = !st.CanShowTree()
	m := fyne.NewMenu("", cont, undoTok, edit, reset, tree)
	c := v.u.Win.Canvas()
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(v.moreBtn)
	widget.ShowPopUpMenuAtPosition(m, c, pos.Add(fyne.NewPos(0, v.moreBtn.Size().Height)))
}

// newConversation starts a conversation with the model's preset, else its
// defaults (its generation_config.json's sampling, else the app's), not
// the open one's settings.
func (v *chatView) newConversation() {
	v.do(v.u.Chat.NewConversation(v.u.Chat.Defaults(v.st.Model, v.u.Prefs.Engine())))
}

func (v *chatView) undoTurn() { v.do(v.u.Chat.UndoTurn()) }
func (v *chatView) redo() {
	if v.u.Chat.State().CanRedo() {
		v.do(v.u.Chat.Redo())
	}
}
func (v *chatView) regenerate() { v.do(v.u.Chat.Regenerate()) }

func (v *chatView) undoTokens() {
	n, err := strconv.Atoi(strings.TrimSpace(v.undoN.Text))
	if err != nil {
		v.u.ShowError(fmt.Errorf("undo tokens: %q is not a whole number; type how many tokens to take back", v.undoN.Text))
		return
	}
	v.do(v.u.Chat.UndoTokens(n))
}

func (v *chatView) undoTokensDialog() {
	e := v.u.newEscEntry(false)
	e.SetText(v.undoN.Text)
	d := dialog.NewForm("Undo Tokens", "Undo", "Cancel", []*widget.FormItem{widget.NewFormItem("Tokens", e)}, func(ok bool) {
		if ok {
			v.undoN.SetText(e.Text)
			v.undoTokens()
		}
	}, v.u.Win)
	e.OnSubmitted = func(string) { d.Submit() } // Enter confirms, as Undo
	d.Show()
	v.u.Win.Canvas().Focus(e)
}

func (v *chatView) reset() {
	dialog.ShowConfirm("Reset the conversation?", "The messages are removed from the open conversation (the store keeps the earlier branch).", func(ok bool) {
		if ok {
			v.do(v.u.Chat.Reset())
		}
	}, v.u.Win)
}

func (v *chatView) editLast() {
	st := v.u.Chat.State()
	if !st.CanEditLast() {
		v.u.ShowError(errors.New("there is no message to edit yet"))
		return
	}
	v.editDialog("Edit Last Message", st.LastUserText(), func(text string) { v.do(v.u.Chat.EditLast(text)) })
}

// editDialog asks for a message's new text (starting from text) and hands
// it to send.
func (v *chatView) editDialog(title, text string, send func(string)) {
	e := v.u.newEscEntry(true)
	e.SetText(text)
	e.Wrapping = fyne.TextWrapWord
	e.SetMinRowsVisible(5)
	d := dialog.NewCustomConfirm(title, "Send", "Cancel", container.NewGridWrap(fyne.NewSize(520, 140), e), func(ok bool) {
		if ok {
			send(e.Text)
		}
	}, v.u.Win)
	d.Show()
	v.u.Win.Canvas().Focus(e)
}

// renameConversation asks for the open conversation's new title.
func (v *chatView) renameConversation() {
	id := v.st.ConvID
	if id == 0 {
		return
	}
	e := v.u.newEscEntry(false)
	e.SetText(v.st.Title)
	d := dialog.NewForm("Rename Conversation", "Rename", "Cancel", []*widget.FormItem{widget.NewFormItem("Title", e)}, func(ok bool) {
		if !ok {
			return
		}
		title := e.Text
		go func() {
			if err := v.u.Chat.RenameConversation(v.u.ctx, id, title); err != nil {
				v.u.do(func() { v.u.ShowError(err) })
			}
		}()
	}, v.u.Win)
	e.OnSubmitted = func(string) { d.Submit() }
	d.Show()
	v.u.Win.Canvas().Focus(e)
}

// exportConversation saves the open conversation as Markdown or JSON (by
// the file name's extension), as `etchat history --export-conversation`.
func (v *chatView) exportConversation() {
	id, title := v.st.ConvID, v.st.Title
	if id == 0 {
		return
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		go v.exportTo(w, err, id, func(note string) { dialog.ShowInformation("Export", note, v.u.Win) })
	}, v.u.Win)
	d.SetFileName(exportName(title))
	d.SetFilter(storage.NewExtensionFileFilter([]string{".md", ".json"}))
	d.Show()
}

// exportTo writes conversation id into w, the file the save dialog
// opened (nil: cancelled; err: the dialog could not open it), and says how
// that went through done, on the UI goroutine: where the file is, or why
// not and what to do.
func (v *chatView) exportTo(w fyne.URIWriteCloser, err error, id int64, done func(note string)) {
	say := func(note string) { v.u.do(func() { done(note) }) }
	if err != nil {
		// The dialog joins the typed name to its folder, so a typed path
		// (absolute, or with folders) names a file that cannot be made.
		say(fmt.Sprintf("The conversation was not exported: the file could not be created (%v). Type a file name only, "+
			"ending in .md or .json, and choose the folder in the dialog's list.", err))
		return
	}
	if w == nil {
		return // cancelled
	}
	err = v.u.Chat.ExportConversation(v.u.ctx, w, id, ExportFormat(w.URI().Name()))
	if cerr := w.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("could not write %s: %w", w.URI().Path(), cerr)
	}
	if err != nil {
		say("The conversation was not exported: " + err.Error())
		return
	}
	say("Exported as " + strings.ToUpper(ExportFormat(w.URI().Name())) + " to " + w.URI().Path())
}

// exportName is a file name for a conversation's export: its title with
// the characters file systems refuse replaced.
func exportName(title string) string {
	name := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`/\:*?"<>|`, r) || r < ' ' {
			return '-'
		}
		return r
	}, strings.TrimSpace(title))
	if name == "" {
		name = "conversation"
	}
	return name + ".md"
}

func (v *chatView) deleteConversation() {
	id := v.st.ConvID
	if id == 0 {
		return
	}
	dialog.ShowConfirm("Delete the conversation?", "It is removed from the database with all its branches.", func(ok bool) {
		if !ok {
			return
		}
		go func() {
			if err := v.u.Chat.DeleteConversation(v.u.ctx, id); err != nil {
				v.u.do(func() { v.u.ShowError(err) })
			}
		}()
	}, v.u.Win)
}

// sheetSize is the settings sheet's scrolled area in a window of size win:
// 660×600 where that fits, else smaller, so the dialog's title and buttons
// stay inside the window instead of over the fields (at 800×600 the sheet
// with its buttons was taller than the window).
func sheetSize(win fyne.Size) fyne.Size {
	const chrome = 150 // the dialog's title, buttons and padding
	return fyne.NewSize(max(320, min(660, win.Width-80)), max(200, min(600, win.Height-chrome)))
}

// hideSettings closes the settings sheet if it is open.
func (v *chatView) hideSettings() {
	if v.settingsDlg != nil {
		v.settingsDlg.Hide()
	}
}

// showSettings opens the settings sheet (nil when no model is chosen).
func (v *chatView) showSettings() *settingsSheet {
	st := v.u.Chat.State()
	if st.Model == nil {
		v.u.ShowError(errors.New("choose a model first: its cache layout decides which settings are possible"))
		return nil
	}
	s := st.Settings
	if s.Engine == "" {
		s = DefaultSettings(v.u.Prefs.Engine())
	}
	form := NewSettingsForm(s, st.Model)
	form.Holds = st.Position
	sheet := newSettingsSheet(form, v.u.newEscEntry)
	var d *dialog.CustomDialog
	apply := widget.NewButtonWithIcon("Apply", theme.ConfirmIcon(), func() {
		r := sheet.form.Evaluate()
		if !r.OK() {
			sheet.refresh()
			return
		}
		d.Hide()
		v.do(v.u.Chat.ApplySettings(r.Settings))
	})
	apply.Importance = widget.HighImportance
	sheet.onValid = func(ok bool) { setEnabled(apply, ok) }
	sheet.refresh()
	d = dialog.NewCustomWithoutButtons("Conversation Settings", container.NewGridWrap(sheetSize(v.u.Win.Canvas().Size()), container.NewVScroll(sheet.root)), v.u.Win)
	d.SetButtons([]fyne.CanvasObject{widget.NewButton("Cancel", func() { d.Hide() }), apply})
	d.Show()
	v.settingsDlg = d
	return sheet
}
