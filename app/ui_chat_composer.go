package app

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// composer is the message entry: Enter sends and Shift+Enter starts a
// new line (swapped when enterNewline is set: then Ctrl/Cmd+Enter sends);
// Esc stops a reply.
type composer struct {
	widget.Entry
	onSend, onStop func()
	onRedo         func() // Ctrl/Cmd+Shift+Z: the chat's Redo
	onTab          func(back bool)
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
	case ev.Name == fyne.KeyTab && c.onTab != nil:
		c.onTab(c.shift) // a driver that hands Tab to the widget still moves the focus
		return
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

// AcceptsTab is false: Tab moves the focus, as the shortcut list says,
// instead of typing a tab into the message (a multi-line Entry takes it).
func (c *composer) AcceptsTab() bool { return false }

func (c *composer) TypedShortcut(s fyne.Shortcut) {
	if s.ShortcutName() == ShortcutSend.ShortcutName() && c.onSend != nil {
		c.onSend()
		return
	}
	if s.ShortcutName() == ShortcutRedo.ShortcutName() && c.onRedo != nil {
		c.onRedo() // the Entry has no use for it (its own redo is Ctrl/Cmd+Y)
		return
	}
	c.Entry.TypedShortcut(s)
}

// newComposerBox is the message box, the token note and the action row.
func (v *chatView) newComposerBox() fyne.CanvasObject {
	v.input = newComposer()
	v.input.SetPlaceHolder(composerHint(v.u.Prefs.EnterNewline()))
	v.input.SetMinRowsVisible(3)
	v.input.onSend = v.send
	v.input.onStop = v.u.Chat.Stop
	v.input.onTab = func(back bool) {
		if back {
			v.u.Win.Canvas().FocusPrevious()
		} else {
			v.u.Win.Canvas().FocusNext()
		}
	}
	v.input.enterNewline = v.u.Prefs.EnterNewline
	v.input.OnChanged = func(text string) {
		if !v.syncing {
			v.u.Chat.SetDraft(text)
		}
	}
	v.draftNote = widget.NewLabel("")
	v.draftNote.SizeName = theme.SizeNameCaptionText
	v.draftNote.Alignment = fyne.TextAlignTrailing
	v.sendBtn = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.send)
	v.sendBtn.Importance = widget.HighImportance
	v.stopBtn = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), v.u.Chat.Stop)
	v.undoBtn = widget.NewButtonWithIcon("Undo Turn", theme.ContentUndoIcon(), v.undoTurn)
	v.redoBtn = widget.NewButtonWithIcon("Redo", theme.ContentRedoIcon(), v.redo)
	v.redoBtn.Hide()
	v.input.onRedo = v.redo
	v.undoN = widget.NewEntry()
	v.undoN.SetText("1")
	v.regenBtn = widget.NewButtonWithIcon("Regenerate", theme.ViewRefreshIcon(), v.regenerate)
	// The rarer actions sit in a menu, so the row fits an 800-pixel window.
	v.moreBtn = widget.NewButtonWithIcon("More", theme.MoreHorizontalIcon(), v.showMore)
	buttons := container.NewHBox(container.NewThemeOverride(v.sendBtn, sendFocusTheme{}), v.stopBtn, v.undoBtn, v.redoBtn, v.regenBtn, v.moreBtn)
	// The count sits in a small line under the box, whole at any width.
	return container.NewBorder(nil, container.NewVBox(v.draftNote, container.NewBorder(nil, nil, nil, buttons)), nil, nil, v.input)
}

// composerHint is the message box's placeholder for the Enter preference.
func composerHint(enterNewline bool) string {
	if enterNewline {
		return "Message (" + modKey() + "+Enter sends, Enter starts a new line, Esc stops)"
	}
	return "Message (Enter sends, Shift+Enter starts a new line, Esc stops)"
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
