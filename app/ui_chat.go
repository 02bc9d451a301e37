package app

import (
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/inference"
)

// chatView is the Chat tab: conversations on the left, the transcript,
// meter and composer on the right.
type chatView struct {
	u    *UI
	root fyne.CanvasObject

	model    *widget.Select
	models   []LibraryEntry
	convList *widget.List
	convs    []ConversationSummary
	newBtn   *widget.Button
	delBtn   *widget.Button
	search   *widget.Entry // filters the list by title
	renBtn   *widget.Button
	expBtn   *widget.Button

	title      *widget.Label
	engineLine *widget.Label // the engine, its device, and why auto chose it
	meter      *widget.ProgressBar
	meterText  string // the meter's text, in meterLabel beside the bar
	meterLabel *widget.Label
	activity   *widget.Label
	progress   *widget.ProgressBar
	progressIn *widget.ProgressBarInfinite
	errLabel   *widget.Label

	transcript *widget.RichText
	scroll     *container.Scroll
	shown      int                 // messages drawn in transcript (plus the live pair)
	live       *widget.TextSegment // the streaming reply's text

	input     *composer
	draftNote *widget.Label
	sendBtn   *widget.Button
	stopBtn   *widget.Button
	undoBtn   *widget.Button
	regenBtn  *widget.Button
	moreBtn   *widget.Button
	greedy    *widget.Check
	undoN     *widget.Entry
	settings  *widget.Button
	header    *fyne.Container
	main      *fyne.Container // header, messages, composer
	// activityRow (what runs, its progress) shows only while busy, so an
	// idle chat has no empty band above the messages.
	activityRow *fyne.Container
	restored    int // the RestoreSeq applied to the message box

	st          ChatState
	syncing     bool
	settingsDlg *dialog.CustomDialog
	menu        chatMenu
}

// chatMenu is the Chat menu's items, enabled as their buttons are.
type chatMenu struct {
	newConv, send, stop, undoTurn, undoTokens, regen, edit, reset, settings *fyne.MenuItem
}

// refreshMenu enables the Chat menu's items from the state, as the
// buttons (an item that would act on nothing is off); the menu is redrawn
// only when one changed.
func (v *chatView) refreshMenu() {
	m, st := &v.menu, v.st
	if m.send == nil {
		return // the menu is built after the view
	}
	idle := !st.Busy && st.Model != nil
	changed := false
	set := func(it *fyne.MenuItem, on bool) {
		if it.Disabled == on {
			it.Disabled = !on
			changed = true
		}
	}
	set(m.newConv, idle)
	set(m.send, idle)
	set(m.stop, st.Busy)
	set(m.undoTurn, st.CanUndo())
	set(m.undoTokens, st.CanUndoTokens())
	set(m.regen, st.CanRegenerate())
	set(m.edit, st.CanUndo())
	set(m.reset, st.CanReset())
	set(m.settings, idle)
	if mm := v.u.Win.MainMenu(); changed && mm != nil {
		mm.Refresh()
	}
}

func newChatView(u *UI) *chatView {
	v := &chatView{u: u}
	side := v.newSide()
	header := v.newHeader()
	transcript := v.newTranscript()
	composerBox := v.newComposerBox()
	v.main = borderInOrder(header, composerBox, nil, nil, transcript)
	split := container.NewHSplit(side, v.main)
	split.Offset = 0.24
	v.root = split
	u.Chat.OnChange = u.coalesce(v.refresh)
	u.Chat.OnError = func(err error) {
		if errors.Is(err, inference.ErrPromptTooLong) {
			return // routine: the red line under the meter says it, no dialog on top
		}
		u.do(func() { u.ShowError(err) })
	}
	u.Library.Subscribe(u.coalesce(v.refreshModels))
	v.refreshModels()
	v.refresh()
	return v
}

// newSide is the model selector, New, the conversation list and Delete.
func (v *chatView) newSide() fyne.CanvasObject {
	v.model = widget.NewSelect(nil, func(name string) {
		if v.syncing {
			return
		}
		for _, e := range v.models {
			if e.Label() == name {
				v.setModel(e.Info)
			}
		}
	})
	v.model.PlaceHolder = "choose a model"
	v.convList = widget.NewList(
		func() int { return len(v.convs) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("conversation title")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(v.convs) {
				c := v.convs[i]
				o.(*widget.Label).SetText(c.Title)
			}
		})
	v.convList.OnSelected = func(i widget.ListItemID) {
		if v.syncing || i >= len(v.convs) || v.convs[i].ID == v.st.ConvID {
			return
		}
		v.do(v.u.Chat.OpenConversation(v.convs[i].ID))
	}
	v.newBtn = widget.NewButtonWithIcon("New", theme.ContentAddIcon(), v.newConversation)
	v.delBtn = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), v.deleteConversation)
	v.search = widget.NewEntry()
	v.search.SetPlaceHolder("Search titles")
	v.search.OnChanged = func(string) { v.refresh() }
	// Text only: at 800 pixels the side bar is 190 wide, two icon buttons
	// side by side would not fit.
	v.renBtn = widget.NewButton("Rename…", v.renameConversation)
	v.expBtn = widget.NewButton("Export…", v.exportConversation)
	return borderInOrder(
		container.NewVBox(widget.NewLabelWithStyle("Model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.model, v.newBtn,
			widget.NewLabelWithStyle("Conversations", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.search),
		container.NewVBox(container.NewGridWithColumns(2, v.renBtn, v.expBtn), v.delBtn), nil, nil, v.convList)
}

// newHeader is the title, engine line, context meter, activity and error.
func (v *chatView) newHeader() *fyne.Container {
	v.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.title.Truncation = fyne.TextTruncateEllipsis
	v.engineLine = widget.NewLabel("")
	v.engineLine.Wrapping = fyne.TextWrapWord
	v.engineLine.SizeName = theme.SizeNameCaptionText
	// The meter's text is a label beside the bar, in the window's own text
	// colour: text drawn inside a bar is white on pale blue in the light
	// theme.
	v.meter = widget.NewProgressBar()
	v.meter.TextFormatter = func() string { return "" }
	v.meterLabel = widget.NewLabel("")
	v.settings = widget.NewButtonWithIcon("Settings…", theme.SettingsIcon(), func() { v.showSettings() })
	v.greedy = widget.NewCheck("Greedy", func(on bool) {
		if !v.syncing {
			v.do(v.u.Chat.SetGreedy(on))
		}
	})
	v.activity = widget.NewLabel("")
	v.activity.Truncation = fyne.TextTruncateEllipsis
	v.progress = widget.NewProgressBar()
	v.progressIn = widget.NewProgressBarInfinite()
	v.progressIn.Stop()
	v.errLabel = widget.NewLabel("")
	v.errLabel.Wrapping = fyne.TextWrapWord
	v.errLabel.Importance = widget.DangerImportance
	v.activityRow = activityRow(v.activity, container.NewStack(v.progress, v.progressIn))
	v.header = container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(v.greedy, v.settings), v.title),
		v.engineLine,
		container.NewBorder(nil, nil, widget.NewLabel("Context"), v.meterLabel, v.meter),
		v.activityRow,
		v.errLabel,
	)

	return v.header
}

// activityRow is what runs and its progress, side by side. The label
// shares the row (not the Border's leading slot, where a truncating label
// gets its minimum width and only ever shows "…").
func activityRow(activity *widget.Label, bar fyne.CanvasObject) *fyne.Container {
	return container.NewGridWithColumns(2, activity, bar)
}

// do shows an error an action refused at once.
func (v *chatView) do(err error) {
	if err != nil {
		v.u.ShowError(err)
	}
}

func (v *chatView) refreshModels() {
	v.models = nil
	var names []string
	for _, e := range v.u.Library.Entries() {
		if e.Chattable() {
			v.models = append(v.models, e)
			names = append(names, e.Label())
		}
	}
	v.syncing = true
	v.model.SetOptions(names)
	v.selectModel(v.st.Model)
	v.syncing = false
}

// selectModel shows m in the model selector (syncing must be set).
func (v *chatView) selectModel(m *ModelInfo) {
	if m == nil {
		v.model.ClearSelected()
		return
	}
	for _, e := range v.models {
		if e.Path == m.Path {
			v.model.SetSelected(e.Label())
			return
		}
	}
	v.model.ClearSelected()
}

// setModel switches the chat to m.
func (v *chatView) setModel(m *ModelInfo) {
	go func() {
		if err := v.u.Chat.SetModel(v.u.ctx, m); err != nil {
			v.u.do(func() { v.u.ShowError(err) })
		}
	}()
}

func setEnabledW(w fyne.Disableable, on bool) {
	if on {
		w.Enable()
	} else {
		w.Disable()
	}
}

func setEnabled(b *widget.Button, on bool) {
	if on {
		b.Enable()
	} else {
		b.Disable()
	}
}

// refresh redraws from the view-model (UI goroutine only).
func (v *chatView) refresh() {
	st := v.u.Chat.State()
	v.st = st
	v.syncing = true
	v.selectModel(st.Model)
	v.convs = FilterConversations(st.Conversations, v.search.Text)
	v.convList.Refresh()
	found := false
	for i, c := range v.convs {
		if c.ID == st.ConvID {
			v.convList.Select(i)
			found = true
		}
	}
	if !found {
		v.convList.UnselectAll()
	}
	v.syncing = false

	switch {
	case st.Model == nil:
		v.title.SetText("Choose a model on the left, or select one in the Models tab and press Chat.")
	case !st.Loaded:
		v.title.SetText(ModelName(st.Model.Path) + " — type a message to start a conversation, or open one from the list")
	default:
		t := st.Title
		if t == "" {
			t = "Conversation"
		}
		v.title.SetText(fmt.Sprintf("%s — %s", t, ModelName(st.Model.Path)))
	}
	v.engineLine.SetText(EngineLine(st))
	if v.engineLine.Text == "" {
		v.engineLine.Hide()
	} else {
		v.engineLine.Show()
	}
	if st.Model != nil && st.ConvID != 0 {
		v.u.Prefs.SetLastConversation(st.Model.Path, st.ConvID) // reopened at the next start
	}
	v.greedy.SetChecked(st.Greedy())
	setEnabledW(v.greedy, !st.Busy && st.Model != nil)
	if st.RestoreSeq != v.restored {
		v.restored = st.RestoreSeq
		if strings.TrimSpace(v.input.Text) == "" {
			v.input.SetText(st.Restore) // a send that got no reply: the text comes back
		}
	}
	v.draftNote.SetText(st.DraftNote)
	v.meterText = st.Meter()
	v.meterLabel.SetText(v.meterText)
	v.meter.SetValue(st.MeterFraction())

	v.showActivity(st)
	if st.Err != "" {
		v.errLabel.SetText(st.Err)
		v.errLabel.Show()
	} else {
		v.errLabel.Hide()
	}
	v.header.Refresh()
	v.main.Refresh() // lay out again: a line shown is not drawn over the messages, a hidden one leaves no band
	setEnabled(v.sendBtn, !st.Busy && st.Model != nil)
	setEnabled(v.newBtn, !st.Busy && st.Model != nil)
	setEnabled(v.settings, !st.Busy && st.Model != nil)
	setEnabled(v.undoBtn, st.CanUndo())
	setEnabled(v.regenBtn, st.CanRegenerate())
	setEnabled(v.moreBtn, st.CanUndoTokens() || st.CanUndo() || st.CanReset())
	setEnabled(v.stopBtn, st.Busy)
	setEnabled(v.delBtn, !st.Busy && st.ConvID != 0)
	setEnabled(v.renBtn, !st.Busy && st.ConvID != 0)
	setEnabled(v.expBtn, st.ConvID != 0)
	v.refreshMenu()
	v.drawTranscript(st)
}

// EngineLine is the header's engine line: "engine: cpu on cpu", and why
// when auto fell back to the CPU engine.
func EngineLine(st ChatState) string {
	if !st.Loaded || st.Engine.Name == "" {
		return ""
	}
	line := "engine: " + st.Engine.String()
	if st.Engine.Fallback && st.Engine.Reason != "" {
		line += " — " + st.Engine.Reason
	}
	return line
}

// showActivity shows the status line and its bar while an action runs or
// a reopened history is read into the cache.
func (v *chatView) showActivity(st ChatState) {
	if st.Busy || st.Warming { // a warm shows its progress too
		v.activityRow.Show()
		v.activity.SetText(st.Activity)
		if st.Progress.Total > 0 {
			v.progressIn.Stop()
			v.progressIn.Hide()
			v.progress.Show()
			v.progress.Max = float64(st.Progress.Total)
			v.progress.SetValue(float64(st.Progress.Done))
		} else {
			v.progress.Hide()
			v.progressIn.Show()
			if !v.progressIn.Running() {
				v.progressIn.Start()
			}
		}
	} else {
		v.activityRow.Hide()
		v.activity.SetText("")
		v.progress.Hide()
		v.progressIn.Stop()
		v.progressIn.Hide()
	}
}
