package app

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
)

// menuLabels are a menu's items: label, and "(off)" when disabled.
func menuLabels(m *fyne.Menu) []string {
	var out []string
	for _, it := range m.Items {
		if it.IsSeparator {
			continue
		}
		l := it.Label
		if it.Disabled {
			l += " (off)"
		}
		out = append(out, l)
	}
	return out
}

// topMenu is the menu the top overlay shows.
func topMenu(t *testing.T, c fyne.Canvas) *widget.Menu {
	t.Helper()
	top := c.Overlays().Top()
	if top == nil {
		t.Fatal("no menu open")
	}
	var m *widget.Menu
	walk(top, func(o fyne.CanvasObject) {
		if x, ok := o.(*widget.Menu); ok && m == nil {
			m = x
		}
		if x, ok := o.(*widget.PopUpMenu); ok && m == nil {
			m = x.Menu
		}
	})
	if m == nil {
		t.Fatalf("the top overlay %T is no menu", top)
	}
	return m
}

// chatWithTwoTurns is the window with llama3 open and two turns sent,
// sampling (so a regeneration says something else).
func chatWithTwoTurns(t *testing.T) (*UI, *chatView) {
	t.Helper()
	u, root := newTestUI(t)
	u.SelectTab(TabChat)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	s := greedy(6)
	s.Temperature, s.TopP, s.Seed = 1.5, 1, 7
	if err := u.Chat.NewConversation(s); err != nil {
		t.Fatal(err)
	}
	settle(u)
	for _, text := range []string{"Hello", "Tell me more"} {
		if err := u.Chat.Send(text); err != nil {
			t.Fatal(err)
		}
		settle(u)
	}
	return u, u.chat
}

// roles is where each role's messages are in msgs.
func roles(msgs []Message, role string) []int {
	var out []int
	for i, m := range msgs {
		if m.Role == role {
			out = append(out, i)
		}
	}
	return out
}

// Issue 26 item 11: a right-click on a message opens its menu, with the
// actions that fit it, off when there is nothing to act on; the menu's
// Copy copies that message.
func TestMessageMenuRightClick(t *testing.T) {
	u, v := chatWithTwoTurns(t)
	st := u.Chat.State()
	users, replies := roles(st.Messages, "user"), roles(st.Messages, "assistant")
	if len(users) != 2 || len(replies) != 2 {
		t.Fatalf("messages %+v", st.Messages)
	}
	if got, want := menuLabels(v.MessageMenu(replies[0])), []string{"Copy", "Copy as Markdown", "Select Text…", "Regenerate from Here", "Delete This Branch… (off)"}; !slices.Equal(got, want) {
		t.Errorf("a reply's menu %v, want %v", got, want)
	}
	if got, want := menuLabels(v.MessageMenu(users[0])), []string{"Copy", "Copy as Markdown", "Select Text…", "Edit and Branch from Here…", "Delete This Branch… (off)"}; !slices.Equal(got, want) {
		t.Errorf("a message's menu %v, want %v", got, want)
	}
	busy := st
	busy.Busy = true
	v.st = busy
	if got := menuLabels(v.MessageMenu(replies[0])); !slices.Contains(got, "Regenerate from Here (off)") || !slices.Contains(got, "Copy") {
		t.Errorf("while busy: %v", got)
	}
	v.st = st
	if v.MessageMenu(len(st.Messages)) != nil {
		t.Error("a menu for a message that is not there")
	}

	// Right-click on the first reply's text: its menu, and Copy copies it.
	v.scroll.Refresh()
	y := v.views[replies[0]].Position().Y
	if v.messageAt(y) != replies[0] || v.messageAt(y+30) != replies[0] || v.messageAt(-50) != -1 {
		t.Errorf("messageAt: %d at its header, %d below it, %d above all", v.messageAt(y), v.messageAt(y+30), v.messageAt(-50))
	}
	// A reply streaming below the messages has no menu yet.
	live := st
	live.Busy, live.PendingUser, live.Streaming = true, "More?", "Well"
	v.drawTranscript(live)
	v.scroll.Refresh()
	if at := v.messageAt(v.liveTop.Position().Y + 30); at != -1 {
		t.Errorf("the streaming turn maps to message %d", at)
	}
	v.drawTranscript(st)
	v.scroll.Refresh()
	test.TapSecondaryAt(v.transcript, fyne.NewPos(40, y+30))
	pm := topMenu(t, u.Win.Canvas())
	if md := test.RenderObjectToMarkup(pm); !strings.Contains(md, "Regenerate from Here") || strings.Contains(md, "Edit and Branch") {
		t.Errorf("the right-click menu is not a reply's:\n%s", md)
	}
	pm.ActivateNext()
	pm.TriggerLast() // Copy, the first item
	if got := u.App.Clipboard().Content(); got != st.Messages[replies[0]].Text {
		t.Errorf("Copy from the menu: %q, want %q", got, st.Messages[replies[0]].Text)
	}
}

// Issue 26 item 11: the keyboard reaches every message action: the links
// under each message are in the Tab order, and More… opens the same menu
// as the right button.
func TestMessageActionsByKeyboard(t *testing.T) {
	u, v := chatWithTwoTurns(t)
	c := u.Win.Canvas()
	var more []*widget.Hyperlink
	walk(c.Content(), func(o fyne.CanvasObject) {
		if h, ok := o.(*widget.Hyperlink); ok && h.Text == "More…" {
			more = append(more, h)
		}
	})
	n := 0
	for _, m := range u.Chat.State().Messages {
		if m.Role != "system" || m.Text != "" { // an empty system prompt is not shown
			n++
		}
	}
	if len(more) != n {
		t.Fatalf("%d More… links for %d messages", len(more), n)
	}
	order := focusOrder(c)
	for i, h := range more {
		if _, ok := order[h]; !ok {
			t.Errorf("More… of message %d is not in the Tab order", i)
		}
	}
	c.Focus(more[1])
	more[1].TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace})
	pm := topMenu(t, c)
	if md := test.RenderObjectToMarkup(pm); !strings.Contains(md, "Regenerate from Here") {
		t.Errorf("More… under the first reply:\n%s", md)
	}
	u.Escape()
	if c.Overlays().Top() != nil {
		t.Error("Esc left the menu open")
	}
	_ = v
}

// Issue 26 item 11: Regenerate from Here on an earlier reply and Edit and
// Branch from Here on an earlier message branch there (the later turns
// stay as the other branch), Delete This Branch goes back to it; the
// meter counts what the transcript holds after each.
func TestRegenerateEditDeleteFromHere(t *testing.T) {
	ctx := context.Background()
	u, v := chatWithTwoTurns(t)
	db := u.Backend.DB
	orig := u.Chat.State()
	id := orig.ConvID
	replies, users := roles(orig.Messages, "assistant"), roles(orig.Messages, "user")
	count := func() int {
		all, err := db.Messages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	stored := count()
	texts := func(msgs []Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Role+": "+m.Text)
		}
		return out
	}
	checkMeter := func(what string) ChatState {
		t.Helper()
		st := u.Chat.State()
		if st.Position != sumTokens(st.Messages) {
			t.Errorf("%s: meter %d, transcript %d tokens", what, st.Position, sumTokens(st.Messages))
		}
		return st
	}

	if err := u.Chat.RegenerateFrom(users[0]); err == nil {
		t.Error("regenerating a message of yours accepted")
	}
	if err := u.Chat.RegenerateFrom(replies[0]); err != nil {
		t.Fatal(err)
	}
	settle(u)
	st := checkMeter("regenerated from the first reply")
	if len(st.Messages) != replies[0]+1 || st.Messages[replies[0]].Text == orig.Messages[replies[0]].Text {
		t.Fatalf("after Regenerate from Here: %q (was %q)", texts(st.Messages), texts(orig.Messages))
	}
	if b := st.BranchOf(replies[0]); b.N != 2 || b.K != 2 {
		t.Errorf("the regenerated reply is %d of %d", b.K, b.N)
	}
	if n := count(); n != stored+1 {
		t.Errorf("%d stored messages, want %d (the old turns kept)", n, stored+1)
	}

	// Delete This Branch: the regeneration goes, the old turns come back.
	if got := menuLabels(v.MessageMenu(replies[0])); !slices.Contains(got, "Delete This Branch…") {
		t.Errorf("menu of a reply with a sibling: %v", got)
	}
	if err := u.Chat.DeleteBranch(replies[0]); err != nil {
		t.Fatal(err)
	}
	settle(u)
	st = checkMeter("after deleting the branch")
	if !slices.Equal(texts(st.Messages), texts(orig.Messages)) || st.BranchOf(replies[0]).N != 1 || count() != stored {
		t.Errorf("after Delete This Branch: %q (want %q), %d stored", texts(st.Messages), texts(orig.Messages), count())
	}
	if err := u.Chat.DeleteBranch(replies[0]); err == nil {
		t.Error("deleting the only branch accepted")
	}

	// Edit and Branch from Here on the first message, through its dialog.
	v.editFrom(users[0])
	e, ok := u.Win.Canvas().Focused().(*escEntry)
	if !ok || e.Text != "Hello" {
		t.Fatalf("the edit dialog's field: %T %v", u.Win.Canvas().Focused(), ok)
	}
	e.SetText("Good morning")
	if err := u.Chat.EditFrom(users[0], e.Text); err != nil {
		t.Fatal(err)
	}
	settle(u)
	st = checkMeter("edited the first message")
	if len(st.Messages) != replies[0]+1 || st.Messages[users[0]].Text != "Good morning" || st.BranchOf(users[0]).N != 2 {
		t.Errorf("after Edit and Branch from Here: %q, branch %+v", texts(st.Messages), st.BranchOf(users[0]))
	}
	// The old first turn is the other branch, with both its turns.
	if err := u.Chat.SwitchBranch(users[0], -1); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if st = checkMeter("switched back"); !slices.Equal(texts(st.Messages), texts(orig.Messages)) {
		t.Errorf("the old branch: %q, want %q", texts(st.Messages), texts(orig.Messages))
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// Issue 26 item 11: Select Text shows a message in a box that selects and
// copies but does not change.
func TestSelectTextIsReadOnly(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	m := Message{Role: "assistant", Text: "The sea is wide.\nAnd deep."}
	e := u.chat.selectText(m)
	if u.Win.Canvas().Focused() != e || e.Text != m.Text {
		t.Fatalf("the box: focused %v, text %q", u.Win.Canvas().Focused() == e, e.Text)
	}
	cb := u.App.Clipboard()
	cb.SetContent("pasted")
	test.Type(e, "xyz")
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyBackspace})
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	e.TypedShortcut(&fyne.ShortcutPaste{Clipboard: cb})
	e.TypedShortcut(&fyne.ShortcutCut{Clipboard: cb})
	if e.Text != m.Text {
		t.Errorf("the read-only box changed to %q", e.Text)
	}
	e.SetText("changed elsewhere") // what an input method would do
	if e.Text != m.Text {
		t.Errorf("the box kept %q", e.Text)
	}
	e.TypedShortcut(&fyne.ShortcutSelectAll{})
	e.TypedShortcut(&fyne.ShortcutCopy{Clipboard: cb})
	if e.SelectedText() != m.Text || cb.Content() != m.Text {
		t.Errorf("select all and copy: selected %q, clipboard %q", e.SelectedText(), cb.Content())
	}
	if e.AcceptsTab() {
		t.Error("Tab stays in the box")
	}
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if u.Win.Canvas().Overlays().Top() != nil {
		t.Error("Esc left the box open")
	}
}

// Issue 26 item 11: Delete This Branch deletes nothing when the branch
// left in its place cannot be shown (it filled the whole cache, which a
// session cannot reopen): seen under Xvfb, where the store had deleted the
// shown branch and the window went on showing it.
func TestDeleteBranchKeepsWhatCannotBeShown(t *testing.T) {
	ctx := context.Background()
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(ctx, e.Info); err != nil {
		t.Fatal(err)
	}
	s := greedy(200) // the reply runs into the capacity
	s.Capacity, s.Temperature, s.TopP, s.Seed = 40, 1.5, 1, 3
	if err := u.Chat.NewConversation(s); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if err := u.Chat.Send("Hello"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	full := u.Chat.State()
	if full.Position != full.Capacity {
		t.Fatalf("the reply stopped at %d of %d", full.Position, full.Capacity)
	}
	reply := len(full.Messages) - 1
	if err := u.Chat.Regenerate(); err != nil {
		t.Fatal(err)
	}
	settle(u)
	shown := u.Chat.State()
	if shown.BranchOf(reply).N != 2 {
		t.Fatalf("no second branch: %+v, err %q", shown.BranchOf(reply), shown.Err)
	}
	all, _ := u.Backend.DB.Messages(ctx, shown.ConvID)
	err := u.Chat.DeleteBranch(reply)
	if err == nil {
		settle(u)
	}
	after := u.Chat.State()
	left, _ := u.Backend.DB.Messages(ctx, shown.ConvID)
	if !strings.Contains(after.Err, "not deleted") || len(left) != len(all) || !slices.Equal(msgTexts(after.Messages), msgTexts(shown.Messages)) {
		t.Errorf("a refused delete: %q, %d of %d messages left, shown %q (was %q)", after.Err, len(left), len(all), msgTexts(after.Messages), msgTexts(shown.Messages))
	}
	// The window's watcher finds nothing to re-read: store and session agree.
	if pending, err := u.Chat.ReloadOpen(ctx); pending || err != nil || u.Chat.State().Busy {
		t.Errorf("re-read after the refused delete: %v %v", pending, err)
	}
}
