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
	search   *widget.Entry // filters the list by title and message text
	allConvs *widget.Check // lists the conversations of every model
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

	transcript *transcriptBox
	views      []*messageView    // per message: its widget (nil: not drawn)
	liveTop    fyne.CanvasObject // where the turn in progress starts (nil: none)
	liveView   *messageView      // the reply in progress (nil: none)
	scroll     *container.Scroll
	shown      int           // messages drawn in transcript (plus the live pair)
	system     *systemBar    // the system prompt bar (ui_system_bar.go)
	tree       dialog.Dialog // the branch tree, while shown (ui_branch_tree.go)
	// The model picker (ui_model_picker.go).
	pickBtn    *widget.Button
	modelFacts *widget.Label
	choices    []ModelChoice
	picker     dialog.Dialog

	input     *composer
	draftNote *widget.Label
	sendBtn   *widget.Button
	stopBtn   *widget.Button
	undoBtn   *widget.Button
	redoBtn   *widget.Button // shown only while Redo applies
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
	newConv, send, stop, undoTurn, undoTokens, redo, regen, cont, edit, reset, tree, settings *fyne.MenuItem
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
	set(m.redo, st.CanRedo())
	set(m.regen, st.CanRegenerate())
	set(m.cont, st.CanContinue())
	set(m.tree, st.CanShowTree())
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
		if saidInRedLine(err) {
			return // the red line under the meter says it, once: no dialog on top
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
	pickRow, pickFacts := v.newModelPicker()
	v.convList = widget.NewList(
		func() int { return len(v.convs) },
		func() fyne.CanvasObject {
			// Wrapped, not cut: a row cut to one line lost the model's
			// name and the search's snippet in the narrow list.
			l := widget.NewLabel("conversation title")
			l.Wrapping = fyne.TextWrapWord
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= len(v.convs) {
				return
			}
			l := o.(*widget.Label)
			l.SetText(ListLabel(v.convs[i], v.allConvs.Checked))
			// The wrapped height depends on the width the list gives its
			// rows (as the library's rows).
			if w := v.convList.Size().Width; w > 0 {
				l.Resize(fyne.NewSize(w, l.MinSize().Height))
			}
			v.convList.SetItemHeight(i, l.MinSize().Height)
		})
	v.convList.OnSelected = func(i widget.ListItemID) {
		if v.syncing || i >= len(v.convs) || v.convs[i].ID == v.st.ConvID {
			return
		}
		v.openListed(v.convs[i])
	}
	v.newBtn = widget.NewButtonWithIcon("New", theme.ContentAddIcon(), v.newConversation)
	v.delBtn = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), v.deleteConversation)
	v.search = widget.NewEntry()
	v.search.SetPlaceHolder("Search titles and text")
	v.search.OnChanged = func(string) { v.filterList() }
	v.allConvs = widget.NewCheck("All models", nil)
	v.allConvs.Checked = v.u.Prefs.AllModels() // as the window last closed
	v.allConvs.OnChanged = func(on bool) {
		v.u.Prefs.SetAllModels(on)
		v.filterList()
	}
	v.u.Chat.list.All = v.allConvs.Checked // read when the list is first read (Start)
	// Text only: at 800 pixels the side bar is 190 wide, two icon buttons
	// side by side would not fit.
	v.renBtn = widget.NewButton("Rename…", v.renameConversation)
	v.expBtn = widget.NewButton("Export…", v.exportConversation)
	return borderInOrder(
		container.NewVBox(widget.NewLabelWithStyle("Model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), pickRow, pickFacts, v.newBtn,
			widget.NewLabelWithStyle("Conversations", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.search, v.allConvs),
		container.NewVBox(container.NewGridWithColumns(2, v.renBtn, v.expBtn), v.delBtn), nil, nil,
		container.New(&remeasureOnWidth{list: v.convList}, v.convList))
}

// filterList has the view-model list what the search field and All
// models ask for (it reads the store: not on the UI goroutine).
func (v *chatView) filterList() {
	f := ListFilter{Query: v.search.Text, All: v.allConvs.Checked}
	go func() {
		if err := v.u.Chat.SetListFilter(v.u.ctx, f); err != nil {
			v.u.do(func() { v.u.ShowError(err) })
		}
	}()
}

// openListed opens a conversation of the list, switching to its model
// when it is another's (or saying why it cannot).
func (v *chatView) openListed(c ConversationSummary) {
	var m *ModelInfo
	blocked := ""
	if e, ok := v.u.Library.Entry(c.ModelPath); ok && c.ModelPath != "" {
		m, blocked = e.Info, e.ChatBlocked()
	}
	go func() {
		if err := v.u.Chat.OpenListed(v.u.ctx, c, m, blocked); err != nil {
			v.u.do(func() {
				v.u.ShowError(err)
				v.refresh() // the list selects the open conversation again
			})
		}
	}()
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
		v.newSystemBar(), // right above the transcript (ui_system_bar.go)
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
	v.choices, _ = ModelChoices(v.u.Library.Entries())
	for _, c := range v.choices {
		v.models = append(v.models, c.Entry)
		names = append(names, c.Entry.Label())
	}
	v.syncing = true
	v.model.SetOptions(names)
	v.selectModel(v.st.Model)
	v.syncing = false
}

// selectModel shows m in the model selector (syncing must be set).
func (v *chatView) selectModel(m *ModelInfo) {
	defer v.showModelFacts(m) // its facts under the selector (ui_model_picker.go)
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
	v.refreshList(st)
	v.title.SetText(chatTitle(st))
	v.engineLine.SetText(EngineLine(st))
	showIf(v.engineLine, v.engineLine.Text != "")
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
	// A bar at 0 is all in its pale track colour and reads as full: with
	// nothing loaded there is no bar, only the meter's text.
	showIf(v.meter, st.Loaded)
	v.refreshActivity(st)
	v.refreshSystemBar(st)
	v.errLabel.SetText(st.Err)
	showIf(v.errLabel, st.Err != "")
	v.header.Refresh()
	relayout(v.main) // lay out again (a line shown is not drawn over the messages, a hidden one leaves no band); not Refresh: that redrew every widget below, the transcript included, at every token
	v.refreshButtons(st)
	v.refreshMenu()
	v.drawTranscript(st)
}

// showIf shows o when on, else hides it.
func showIf(o fyne.CanvasObject, on bool) {
	if on {
		o.Show()
	} else {
		o.Hide()
	}
}

// refreshList shows the conversation list, the open one selected.
func (v *chatView) refreshList(st ChatState) {
	v.syncing = true
	defer func() { v.syncing = false }()
	v.selectModel(st.Model)
	v.convs = st.Conversations
	v.convList.Refresh()
	for i, c := range v.convs {
		if c.ID == st.ConvID {
			v.convList.Select(i)
			return
		}
	}
	v.convList.UnselectAll()
}

// chatTitle is the header's title line.
func chatTitle(st ChatState) string {
	switch {
	case st.Model == nil:
		return "Choose a model on the left, or select one in the Models tab and press Chat."
	case !st.Loaded:
		return ModelName(st.Model.Path) + " — type a message to start a conversation, or open one from the list"
	}
	t := st.Title
	if t == "" {
		t = "Conversation"
	}
	return fmt.Sprintf("%s — %s", t, ModelName(st.Model.Path))
}

// refreshActivity shows what runs and its progress, while busy or while a
// reopened history is read into the cache.
func (v *chatView) refreshActivity(st ChatState) {
	if !st.Busy && !st.Warming { // a warm shows its progress too
		v.activityRow.Hide()
		v.activity.SetText("")
		v.progress.Hide()
		v.progressIn.Stop()
		v.progressIn.Hide()
		return
	}
	v.activityRow.Show()
	v.activity.SetText(st.Activity)
	if st.Progress.Total > 0 {
		v.progressIn.Stop()
		v.progressIn.Hide()
		v.progress.Show()
		v.progress.Max = float64(st.Progress.Total)
		v.progress.SetValue(float64(st.Progress.Done))
		return
	}
	v.progress.Hide()
	v.progressIn.Show()
	if !v.progressIn.Running() {
		v.progressIn.Start()
	}
}

// refreshButtons enables the buttons that have something to act on.
func (v *chatView) refreshButtons(st ChatState) {
	idle := !st.Busy && st.Model != nil
	setEnabled(v.sendBtn, idle)
	setEnabled(v.newBtn, idle)
	setEnabled(v.settings, idle)
	setEnabled(v.undoBtn, st.CanUndo())
	if st.CanRedo() {
		v.redoBtn.Show()
	} else {
		v.redoBtn.Hide()
	}
	setEnabled(v.regenBtn, st.CanRegenerate())
	setEnabled(v.moreBtn, st.CanUndoTokens() || st.CanUndo() || st.CanReset())
	setEnabled(v.stopBtn, st.Busy)
	setEnabled(v.delBtn, !st.Busy && st.ConvID != 0)
	setEnabled(v.renBtn, !st.Busy && st.ConvID != 0)
	setEnabled(v.expBtn, st.ConvID != 0)
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

// saidInRedLine reports whether err is one the chat's red line says well
// enough alone: a turn that does not fit, a model that did not load (the
// message is back in the box), a change another window made first.
func saidInRedLine(err error) bool {
	var load *LoadError
	var stale *StaleTurnError
	return errors.Is(err, inference.ErrPromptTooLong) || errors.As(err, &load) || errors.As(err, &stale)
}
