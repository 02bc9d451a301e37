package app

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// newTranscript is the messages, one widget each (ui_message.go), in a
// column that measures each at the scroll's width, in a scroll.
func (v *chatView) newTranscript() fyne.CanvasObject {
	v.transcript = newTranscriptBox(v.messageMenuAt)
	v.scroll = container.NewVScroll(v.transcript)
	// A change of width changes the messages' heights: the scroll then
	// reads the column's new height (it measured it at the old width),
	// and a transcript that showed its end (all of it, or scrolled to the
	// bottom) still does: narrowing the window keeps the last reply in view.
	v.transcript.col.onChange = func() {
		if v.scroll.Content == nil {
			return
		}
		v.scroll.Refresh()
		if v.transcript.atEnd {
			v.scroll.ScrollToBottom()
		}
	}
	v.scroll.OnScrolled = func(at fyne.Position) {
		v.transcript.atEnd = at.Y+v.scroll.Size().Height >= v.transcript.Size().Height-1
	}
	return v.scroll
}

// transcriptBox is the column of messages with a right-click menu: the
// menu of the message under the pointer.
type transcriptBox struct {
	widget.BaseWidget
	col         *columnLayout
	box         *fyne.Container
	onSecondary func(at fyne.Position, abs fyne.Position)
	atEnd       bool // the view shows the transcript's end (scrolled there, or it all fits)
}

func newTranscriptBox(onSecondary func(at, abs fyne.Position)) *transcriptBox {
	t := &transcriptBox{col: &columnLayout{}, onSecondary: onSecondary, atEnd: true}
	t.box = &fyne.Container{Layout: t.col}
	t.ExtendBaseWidget(t)
	return t
}

func (t *transcriptBox) CreateRenderer() fyne.WidgetRenderer { return &boxRenderer{box: t.box} }

// TappedSecondary opens the menu of the message at the pointer. (A click
// on a Copy link goes to the link, which ignores the right button.)
func (t *transcriptBox) TappedSecondary(ev *fyne.PointEvent) {
	if t.onSecondary != nil {
		t.onSecondary(ev.Position, ev.AbsolutePosition)
	}
}

// messageAt is the index of the message whose widget is at y in the
// transcript (-1 above the first, and on the turn in progress, which has
// no menu yet).
func (v *chatView) messageAt(y float32) int {
	if l := v.liveTop; l != nil && l.Position().Y <= y {
		return -1
	}
	at := -1
	for i, m := range v.views {
		if m != nil && m.Position().Y <= y {
			at = i
		}
	}
	return at
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

// drawTranscript redraws the transcript from st: every message when one
// came or went, else only the reply in progress (its text parsed and
// drawn again; blocks that did not change keep their widgets). Redraws
// come merged through the UI's do (coalesce): one per batch of tokens.
func (v *chatView) drawTranscript(st ChatState) {
	liveOn := st.Busy && (st.PendingUser != "" || st.Streaming != "")
	want := len(st.Messages) // a Continue draws its reply live in place of the last message (one fewer, plus the live one): liveView is nil then
	if liveOn {
		want++
	}
	if want != v.shown || !liveOn || v.liveView == nil {
		v.transcript.box.Objects = v.transcriptObjects(st, liveOn)
		v.shown = want
		v.transcript.box.Refresh()
	}
	if liveOn {
		v.liveView.SetText(st.Streaming)
		v.liveView.SetStats(liveStatsLine(st))
		relayout(v.transcript.box) // the messages above keep their heights
	}
	v.scroll.Refresh()
	v.scroll.ScrollToBottom()
	v.transcript.atEnd = true
}

// transcriptObjects are the messages' widgets, each with its actions
// line, a separator between them; the live pair last while a reply
// streams.
func (v *chatView) transcriptObjects(st ChatState, liveOn bool) []fyne.CanvasObject {
	var objs []fyne.CanvasObject
	if len(st.Messages) == 0 && !liveOn {
		hint := "No messages yet."
		if st.Loaded {
			hint = emptyChatHint(v.u.Prefs.EnterNewline())
		}
		rt := widget.NewRichText(&widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: hint})
		rt.Wrapping = fyne.TextWrapWord
		objs = append(objs, rt)
	}
	v.views = make([]*messageView, len(st.Messages))
	for i, m := range st.Messages {
		if m.Role == "system" && m.Text == "" {
			continue
		}
		v.views[i] = newMessageView(m.Role, m.Text, MessageNote(m), v.messageActions(i, m, st), v.copyText)
		objs = append(objs, v.views[i], widget.NewSeparator())
	}
	v.liveView, v.liveTop = nil, nil
	if liveOn {
		if st.PendingUser != "" {
			user := newMessageView("user", st.PendingUser, "", nil, nil)
			v.liveTop = user
			objs = append(objs, user, widget.NewSeparator())
		}
		// The cursor is the live reply's stats line until it is stored.
		v.liveView = newMessageView("assistant", "", "▍", nil, v.copyText)
		if v.liveTop == nil {
			v.liveTop = v.liveView
		}
		objs = append(objs, v.liveView)
	}
	return objs
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
		&widget.TextSegment{Style: widget.RichTextStyle{Inline: true}, Text: "   "},
	}
}

// messageActions is the line under message i: its branch control when it
// has alternatives, then Copy (its text), Copy as Markdown (role and text,
// as the Markdown export writes a message), Select Text… and More… (the
// message's menu, as a right-click opens it). Links are in the Tab order,
// so the keyboard reaches every action of every message.
func (v *chatView) messageActions(i int, m Message, st ChatState) []widget.RichTextSegment {
	segs := v.branchSegments(i, st)
	gap := func() widget.RichTextSegment {
		return &widget.TextSegment{Style: widget.RichTextStyle{Inline: true}, Text: "  "}
	}
	segs = append(segs,
		&widget.HyperlinkSegment{Text: "Copy", OnTapped: func() { v.copyText(m.Text) }},
		gap(),
		&widget.HyperlinkSegment{Text: "Copy as Markdown", OnTapped: func() { v.copyText(MessageMarkdown(m)) }},
		gap(),
		&widget.HyperlinkSegment{Text: "Select Text…", OnTapped: func() { v.selectText(m) }},
		gap(),
		&widget.HyperlinkSegment{Text: "More…", OnTapped: func() { v.showMessageMenu(i, fyne.Position{}, false) }},
		// Ends the line: without it the separator and the next message's
		// header were laid out on this row, over it.
		&widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: ""},
	)
	return segs
}

// MessageMenu is message i's menu (right-click, or More… under it): Copy,
// Copy as Markdown, Select Text…, then Regenerate from Here (a reply) or
// Edit and Branch from Here… (yours), and Delete This Branch… (a message
// with alternatives). Each does what the button or menu item of the same
// name does; those that would act on nothing are off.
func (v *chatView) MessageMenu(i int) *fyne.Menu {
	st := v.st
	if i < 0 || i >= len(st.Messages) {
		return nil
	}
	m := st.Messages[i]
	items := []*fyne.MenuItem{
		fyne.NewMenuItem("Copy", func() { v.copyText(m.Text) }),
		fyne.NewMenuItem("Copy as Markdown", func() { v.copyText(MessageMarkdown(m)) }),
		fyne.NewMenuItem("Select Text…", func() { v.selectText(m) }),
		fyne.NewMenuItemSeparator(),
	}
	switch m.Role {
	case "assistant":
		it := fyne.NewMenuItem("Regenerate from Here", func() { v.do(v.u.Chat.RegenerateFrom(i)) })
		it.Disabled = !st.CanRegenerateAt(i)
		items = append(items, it)
	case "user":
		it := fyne.NewMenuItem("Edit and Branch from Here…", func() { v.editFrom(i) })
		it.Disabled = !st.CanEditAt(i)
		items = append(items, it)
	}
	del := fyne.NewMenuItem("Delete This Branch…", func() { v.deleteBranch(i) })
	del.Disabled = !st.CanDeleteBranchAt(i)
	return fyne.NewMenu("", append(items, del)...)
}

// messageMenuAt opens the menu of the message at pos (in the transcript),
// at abs in the window; nothing outside a message.
func (v *chatView) messageMenuAt(pos, abs fyne.Position) {
	if i := v.messageAt(pos.Y); i >= 0 {
		v.showMessageMenu(i, abs, true)
	}
}

// showMessageMenu opens message i's menu at abs, or (from the keyboard)
// at the message's header.
func (v *chatView) showMessageMenu(i int, abs fyne.Position, atPointer bool) {
	m := v.MessageMenu(i)
	if m == nil {
		return
	}
	if !atPointer && i < len(v.views) && v.views[i] != nil {
		abs = fyne.CurrentApp().Driver().AbsolutePositionForObject(v.views[i])
	}
	widget.ShowPopUpMenuAtPosition(m, v.u.Win.Canvas(), abs)
}

// editFrom asks for message i's new text and answers it: Edit Last
// Message's dialog, for any message of yours.
func (v *chatView) editFrom(i int) {
	if !v.st.CanEditAt(i) {
		return
	}
	v.editDialog("Edit and Branch from Here", v.st.Messages[i].Text, func(text string) { v.do(v.u.Chat.EditFrom(i, text)) })
}

// deleteBranch asks first, then deletes message i's branch.
func (v *chatView) deleteBranch(i int) {
	dialog.ShowConfirm("Delete this branch?", "The message and everything after it are removed from the database; its other branch is shown in its place.", func(ok bool) {
		if ok {
			v.do(v.u.Chat.DeleteBranch(i))
		}
	}, v.u.Win)
}

// selectText shows message m's text in a read-only, selectable box:
// drag, double-click or Shift+arrows select, Ctrl/Cmd+A selects all,
// Ctrl/Cmd+C copies. The transcript's rich text cannot be selected in
// Fyne, and a selectable label takes no keyboard selection; the entry
// does both.
func (v *chatView) selectText(m Message) *readOnlyEntry {
	e := newReadOnlyEntry(m.Text, v.u.Escape)
	d := dialog.NewCustom("Select Text — "+roleTitle(m.Role), "Close", container.NewGridWrap(sheetSize(v.u.Win.Canvas().Size()), e), v.u.Win)
	d.Show()
	v.u.Win.Canvas().Focus(e)
	return e
}

// readOnlyEntry is a multi-line entry that selects and copies but does not
// change its text.
type readOnlyEntry struct {
	widget.Entry
	text  string
	onEsc func()
}

func newReadOnlyEntry(text string, onEsc func()) *readOnlyEntry {
	e := &readOnlyEntry{text: text, onEsc: onEsc}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.ExtendBaseWidget(e)
	e.SetText(text)
	// Whatever gets past the key filters below (an input method, a drop)
	// is undone.
	e.OnChanged = func(s string) {
		if s != e.text {
			e.SetText(e.text)
		}
	}
	return e
}

// AcceptsTab is false: Tab moves on to the Close button.
func (e *readOnlyEntry) AcceptsTab() bool { return false }

// TypedRune ignores typing.
func (e *readOnlyEntry) TypedRune(rune) {}

// TypedKey passes on moving and selecting keys only; Esc closes.
func (e *readOnlyEntry) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		if e.onEsc != nil {
			e.onEsc()
		}
	case fyne.KeyUp, fyne.KeyDown, fyne.KeyLeft, fyne.KeyRight, fyne.KeyHome, fyne.KeyEnd, fyne.KeyPageUp, fyne.KeyPageDown:
		e.Entry.TypedKey(ev)
	}
}

// TypedShortcut passes on Copy and Select All (and Shift+arrow
// selection); cut, paste, undo and redo would change the text.
func (e *readOnlyEntry) TypedShortcut(s fyne.Shortcut) {
	switch s.(type) {
	case *fyne.ShortcutCut, *fyne.ShortcutPaste, *fyne.ShortcutUndo, *fyne.ShortcutRedo:
		return
	}
	e.Entry.TypedShortcut(s)
}

// TappedSecondary offers Copy and Select All (the entry's own menu has
// Cut and Paste).
func (e *readOnlyEntry) TappedSecondary(ev *fyne.PointEvent) {
	m := fyne.NewMenu("",
		fyne.NewMenuItem("Copy", func() { e.TypedShortcut(&fyne.ShortcutCopy{Clipboard: fyne.CurrentApp().Clipboard()}) }),
		fyne.NewMenuItem("Select All", func() { e.TypedShortcut(&fyne.ShortcutSelectAll{}) }))
	widget.ShowPopUpMenuAtPosition(m, fyne.CurrentApp().Driver().CanvasForObject(e), ev.AbsolutePosition)
}

// copyText puts text on the clipboard.
func (v *chatView) copyText(text string) { v.u.App.Clipboard().SetContent(text) }

// MessageMarkdown is one message as `etchat history --export-conversation
// ID --format md` writes it: the role in bold, then the text.
func MessageMarkdown(m Message) string {
	role := m.Role
	if role != "" {
		role = strings.ToUpper(role[:1]) + role[1:]
	}
	return fmt.Sprintf("**%s**\n\n%s\n", role, strings.TrimRight(m.Text, "\n"))
}

// emptyChatHint is the empty transcript's line, for the Enter preference.
func emptyChatHint(enterNewline bool) string {
	if enterNewline {
		return "Type a message below and press Send (" + modKey() + "+Enter)."
	}
	return "Type a message below and press Enter (or Send)."
}

// liveStatsLine is the reply in progress's stats line: its live numbers once
// they exist (ChatState.LiveStats), the cursor before.
func liveStatsLine(st ChatState) string {
	if st.LiveStats != "" {
		return st.LiveStats
	}
	return "▍"
}
