package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
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
}

// composer is the message entry: Enter sends and Shift+Enter starts a
// new line (swapped when enterNewline is set: then Ctrl/Cmd+Enter sends);
// Esc stops a reply.
type composer struct {
	widget.Entry
	onSend, onStop func()
	enterNewline   func() bool
	shift          bool
}

func newComposer() *composer {
	c := &composer{}
	c.MultiLine = true
	c.Wrapping = fyne.TextWrapWord
	c.ExtendBaseWidget(c)
	return c
}

func (c *composer) KeyDown(ev *fyne.KeyEvent) {
	if ev.Name == desktop.KeyShiftLeft || ev.Name == desktop.KeyShiftRight {
		c.shift = true
	}
	c.Entry.KeyDown(ev)
}

func (c *composer) KeyUp(ev *fyne.KeyEvent) {
	if ev.Name == desktop.KeyShiftLeft || ev.Name == desktop.KeyShiftRight {
		c.shift = false
	}
	c.Entry.KeyUp(ev)
}

func (c *composer) TypedKey(ev *fyne.KeyEvent) {
	switch {
	case ev.Name == fyne.KeyEscape && c.onStop != nil:
		c.onStop()
		return
	case (ev.Name == fyne.KeyReturn || ev.Name == fyne.KeyEnter) && !c.shift && c.onSend != nil &&
		(c.enterNewline == nil || !c.enterNewline()):
		c.onSend()
		return
	}
	c.Entry.TypedKey(ev)
}

func (c *composer) TypedShortcut(s fyne.Shortcut) {
	if s.ShortcutName() == ShortcutSend.ShortcutName() && c.onSend != nil {
		c.onSend()
		return
	}
	c.Entry.TypedShortcut(s)
}

func newChatView(u *UI) *chatView {
	v := &chatView{u: u}
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
		v.do(u.Chat.OpenConversation(v.convs[i].ID))
	}
	v.newBtn = widget.NewButtonWithIcon("New", theme.ContentAddIcon(), v.newConversation)
	v.delBtn = widget.NewButtonWithIcon("Delete", theme.DeleteIcon(), v.deleteConversation)
	side := borderInOrder(
		container.NewVBox(widget.NewLabelWithStyle("Model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), v.model, v.newBtn,
			widget.NewLabelWithStyle("Conversations", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})),
		v.delBtn, nil, nil, v.convList)

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
			v.do(u.Chat.SetGreedy(on))
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
	v.activityRow = container.NewBorder(nil, nil, v.activity, nil, container.NewStack(v.progress, v.progressIn))
	v.header = container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(v.greedy, v.settings), v.title),
		v.engineLine,
		container.NewBorder(nil, nil, widget.NewLabel("Context"), v.meterLabel, v.meter),
		v.activityRow,
		v.errLabel,
	)

	v.transcript = widget.NewRichText()
	v.transcript.Wrapping = fyne.TextWrapWord
	v.scroll = container.NewVScroll(v.transcript)

	v.input = newComposer()
	v.input.SetPlaceHolder(composerHint(u.Prefs.EnterNewline()))
	v.input.SetMinRowsVisible(3)
	v.input.onSend = v.send
	v.input.onStop = u.Chat.Stop
	v.input.enterNewline = u.Prefs.EnterNewline
	v.input.OnChanged = func(text string) {
		if !v.syncing {
			u.Chat.SetDraft(text)
		}
	}
	v.draftNote = widget.NewLabel("")
	v.draftNote.SizeName = theme.SizeNameCaptionText
	v.draftNote.Alignment = fyne.TextAlignTrailing
	v.sendBtn = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.send)
	v.sendBtn.Importance = widget.HighImportance
	v.stopBtn = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), u.Chat.Stop)
	v.undoBtn = widget.NewButtonWithIcon("Undo Turn", theme.ContentUndoIcon(), v.undoTurn)
	v.undoN = widget.NewEntry()
	v.undoN.SetText("1")
	v.regenBtn = widget.NewButtonWithIcon("Regenerate", theme.ViewRefreshIcon(), v.regenerate)
	// The rarer actions sit in a menu, so the row fits an 800-pixel window.
	v.moreBtn = widget.NewButtonWithIcon("More", theme.MoreHorizontalIcon(), v.showMore)
	buttons := container.NewHBox(v.sendBtn, v.stopBtn, v.undoBtn, v.regenBtn, v.moreBtn)
	// The count sits in a small line under the box, whole at any width.
	composerBox := container.NewBorder(nil, container.NewVBox(v.draftNote, container.NewBorder(nil, nil, nil, buttons)), nil, nil, v.input)

	v.main = borderInOrder(v.header, composerBox, nil, nil, v.scroll)
	split := container.NewHSplit(side, v.main)
	split.Offset = 0.24
	v.root = split
	u.Chat.OnChange = u.coalesce(v.refresh)
	u.Chat.OnError = func(err error) { u.do(func() { u.ShowError(err) }) }
	u.Library.Subscribe(u.coalesce(v.refreshModels))
	v.refreshModels()
	v.refresh()
	return v
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
	v.convs = st.Conversations
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

	if st.Busy {
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
	v.drawTranscript(st)
}

func roleTitle(role string) string {
	switch role {
	case "user":
		return "You"
	case "assistant":
		return "Assistant"
	case "system":
		return "System"
	}
	return role
}

// messageSegments are one message as rich-text paragraphs: the role, the
// text, and the stats line of a reply. body is the text's segment.
func messageSegments(role, text, stats string) (segs []widget.RichTextSegment, body *widget.TextSegment) {
	body = &widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: text}
	segs = []widget.RichTextSegment{
		&widget.TextSegment{Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Bold: true}, ColorName: theme.ColorNamePrimary}, Text: roleTitle(role)},
		body,
	}
	if stats != "" {
		segs = append(segs, &widget.TextSegment{Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Italic: true},
			ColorName: theme.ColorNamePlaceHolder, SizeName: theme.SizeNameCaptionText}, Text: stats})
	}
	return segs, body
}

// drawTranscript redraws the transcript (one rich text, which wraps and
// sizes itself as a document) and the live reply while streaming.
func (v *chatView) drawTranscript(st ChatState) {
	liveOn := st.Busy && (st.PendingUser != "" || st.Streaming != "")
	want := len(st.Messages)
	if liveOn {
		want++
	}
	if want != v.shown || !liveOn {
		var segs []widget.RichTextSegment
		if len(st.Messages) == 0 && !liveOn {
			hint := "No messages yet."
			if st.Loaded {
				hint = "Type a message below and press Send (" + modKey() + "+Enter)."
			}
			segs = append(segs, &widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: hint})
		}
		for i, m := range st.Messages {
			if m.Role == "system" && m.Text == "" {
				continue
			}
			ms, _ := messageSegments(m.Role, m.Text, MessageNote(m))
			segs = append(segs, ms...)
			segs = append(segs, v.branchSegments(i, st)...)
			segs = append(segs, &widget.SeparatorSegment{})
		}
		if liveOn {
			if st.PendingUser != "" {
				ms, _ := messageSegments("user", st.PendingUser, "")
				segs = append(segs, ms...)
				segs = append(segs, &widget.SeparatorSegment{})
			}
			ms, body := messageSegments("assistant", "", "")
			v.live = body
			segs = append(segs, ms...)
		}
		v.shown = want
		v.transcript.Segments = segs
	}
	if liveOn {
		v.live.Text = st.Streaming + " ▍"
	}
	v.transcript.Refresh()
	v.scroll.ScrollToBottom()
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

// branchSegments are "‹ k/n ›" under message i when it has alternatives:
// the arrows switch to the previous or next one.
func (v *chatView) branchSegments(i int, st ChatState) []widget.RichTextSegment {
	b := st.BranchOf(i)
	if b.N <= 1 {
		return nil
	}
	arrow := func(text string, step int, on bool) widget.RichTextSegment {
		if !on || st.Busy {
			return &widget.TextSegment{Style: widget.RichTextStyle{Inline: true, ColorName: theme.ColorNamePlaceHolder}, Text: text}
		}
		return &widget.HyperlinkSegment{Text: text, OnTapped: func() { v.do(v.u.Chat.SwitchBranch(i, step)) }}
	}
	return []widget.RichTextSegment{
		arrow("‹", -1, b.K > 1),
		&widget.TextSegment{Style: widget.RichTextStyle{Inline: true}, Text: fmt.Sprintf(" %d/%d ", b.K, b.N)},
		arrow("›", +1, b.K < b.N),
	}
}

// composerHint is the message box's placeholder for the Enter preference.
func composerHint(enterNewline bool) string {
	if enterNewline {
		return "Message (" + modKey() + "+Enter sends, Enter starts a new line, Esc stops)"
	}
	return "Message (Enter sends, Shift+Enter starts a new line, Esc stops)"
}

// showMore opens the menu of the rarer actions.
func (v *chatView) showMore() {
	st := v.u.Chat.State()
	undoTok := fyne.NewMenuItem("Undo Tokens…", v.undoTokensDialog)
	undoTok.Disabled = !st.CanUndoTokens()
	edit := fyne.NewMenuItem("Edit Last Message…", v.editLast)
	edit.Disabled = !st.CanUndo()
	reset := fyne.NewMenuItem("Reset Conversation…", v.reset)
	reset.Disabled = !st.CanReset()
	m := fyne.NewMenu("", undoTok, edit, reset)
	c := v.u.Win.Canvas()
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(v.moreBtn)
	widget.ShowPopUpMenuAtPosition(m, c, pos.Add(fyne.NewPos(0, v.moreBtn.Size().Height)))
}

func (v *chatView) send() {
	text := v.input.Text
	if strings.TrimSpace(text) == "" {
		return
	}
	v.u.Chat.SetDraft(text)
	if err := v.u.Chat.Send(text); err != nil {
		v.u.ShowError(err)
		return
	}
	v.syncing = true
	v.input.SetText("")
	v.syncing = false
	v.u.Win.Canvas().Focus(v.input) // after pressing Send, Esc stops and the next message can be typed
}

func (v *chatView) newConversation() {
	s := v.st.Settings
	if s.Engine == "" {
		s = DefaultSettings(v.u.Prefs.Engine())
	}
	v.do(v.u.Chat.NewConversation(s))
}

func (v *chatView) undoTurn()   { v.do(v.u.Chat.UndoTurn()) }
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
	dialog.ShowForm("Undo Tokens", "Undo", "Cancel", []*widget.FormItem{widget.NewFormItem("Tokens", e)}, func(ok bool) {
		if ok {
			v.undoN.SetText(e.Text)
			v.undoTokens()
		}
	}, v.u.Win)
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
	e := v.u.newEscEntry(true)
	e.SetText(st.LastUserText())
	e.Wrapping = fyne.TextWrapWord
	e.SetMinRowsVisible(5)
	d := dialog.NewCustomConfirm("Edit Last Message", "Send", "Cancel", container.NewGridWrap(fyne.NewSize(520, 140), e), func(ok bool) {
		if ok {
			v.do(v.u.Chat.EditLast(e.Text))
		}
	}, v.u.Win)
	d.Show()
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
	sheet := newSettingsSheet(NewSettingsForm(s, st.Model), v.u.newEscEntry)
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
	d = dialog.NewCustomWithoutButtons("Conversation Settings", container.NewGridWrap(fyne.NewSize(660, 600), container.NewVScroll(sheet.root)), v.u.Win)
	d.SetButtons([]fyne.CanvasObject{widget.NewButton("Cancel", func() { d.Hide() }), apply})
	d.Show()
	v.settingsDlg = d
	return sheet
}
