package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/inference/tokenizer"
	"etchat/internal/fixtures"
	"etchat/store"
)

// inGraphWithTokenizer is the in-graph fixture with llama3's tokenizer
// beside it (the export has none of its own).
func inGraphWithTokenizer(t *testing.T) string {
	t.Helper()
	inGraph := modelCopy(t, fixtures.InGraph, false)
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json"} {
		src, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(fixtures.PTE(fixtures.Llama3)), n))
		if err != nil {
			src = filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), n)
		}
		if err := os.Symlink(src, filepath.Join(filepath.Dir(inGraph), n)); err != nil {
			t.Fatal(err)
		}
	}
	return inGraph
}

// Issue 26 item 5: Undo N takes back N of the tokens the meter counts, on
// every fixture, also after a reply that closed its turn (whose turn end
// undo used to take on top: Undo 5 moved the meter by 6).
func TestUndoTokensMovesTheMeterByN(t *testing.T) {
	ctx := context.Background()
	turnEnd := map[string]string{fixtures.Llama3: "<|eot_id|>", fixtures.Gemma3: "<end_of_turn>", fixtures.Qwen3: "<|im_end|>", fixtures.InGraph: "<|eot_id|>"}
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.InGraph} {
		t.Run(name, func(t *testing.T) {
			b, _ := testBackend(t)
			path := ""
			if name == fixtures.InGraph {
				path = inGraphWithTokenizer(t)
			} else {
				path = modelCopy(t, name, true)
			}
			m := inspect(t, path)
			tok, err := tokenizer.Load(filepath.Join(filepath.Dir(path), "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			end, ok := tok.TokenID(turnEnd[name])
			if !ok {
				t.Fatalf("no %s in the tokenizer", turnEnd[name])
			}
			s := greedy(12)
			first, err := b.Opener.Open(ctx, m, s, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := first.Send(ctx, "Hello there.", nil); err != nil {
				t.Fatal(err)
			}
			history := first.Messages()
			first.Close()
			// The reply as the model would have closed it: its text, then
			// the turn end (random weights rarely say it on their own).
			last := &history[len(history)-1]
			if n := len(last.IDs); n == 0 || last.IDs[n-1] != end {
				last.IDs = append(last.IDs, end)
			}
			last.Generated = nil
			sess, err := b.Opener.Open(ctx, m, s, history, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			before := held(sess) // the history, read into the cache in the background (or by the undo)
			if before != sumTokens(history) {
				t.Fatalf("resumed at %d, the history holds %d", before, sumTokens(history))
			}
			for _, n := range []int{1, 5} {
				if err := sess.UndoTokens(ctx, n); err != nil {
					t.Fatal(err)
				}
				if got := sess.Position(); got != before-n || sumTokens(sess.Messages()) != got {
					t.Fatalf("undo %d from %d: meter %d (want %d), transcript %d", n, before, got, before-n, sumTokens(sess.Messages()))
				}
				before -= n
			}
		})
	}
}

// Issue 26 item 1: after Apply the meter counts the history the new cache
// holds (not 0), and a capacity that cannot hold the conversation is
// refused with the old session kept, in the view-model and in the form.
func TestApplySettingsKeepsTheMeterAndRefusesTooSmall(t *testing.T) {
	c, errs, _ := openLlama(t, greedy(8))
	st := run(t, c, errs, c.Send("Hello there, how are you today?"))
	pos, ids := st.Position, st.Messages[1].IDs
	if pos == 0 {
		t.Fatal("nothing in the cache after a send")
	}

	st = run(t, c, errs, c.ApplySettings(greedy(8)))
	if st.Position != pos || st.Capacity != 128 {
		t.Fatalf("after Apply: meter %d / %d, want %d / 128", st.Position, st.Capacity, pos)
	}

	small := greedy(8)
	small.Capacity = pos
	if err := c.ApplySettings(small); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	var tooSmall *CapacityTooSmallError
	if len(*errs) != 1 || !errors.As((*errs)[0], &tooSmall) || tooSmall.Holds != pos {
		t.Fatalf("a capacity of %d for %d tokens: errors %v", pos, pos, *errs)
	}
	*errs = nil
	st = c.State()
	if st.Position != pos || st.Capacity != 128 || len(st.Messages) != 2 || !slices.Equal(st.Messages[1].IDs, ids) {
		t.Fatalf("after a refused Apply: meter %d / %d, %d messages", st.Position, st.Capacity, len(st.Messages))
	}

	// The sheet says so at the field before Apply.
	f := NewSettingsForm(small, st.Model)
	f.Holds = pos
	if r := f.Evaluate(); r.OK() || !strings.Contains(r.ErrorFor("Capacity"), "holds") {
		t.Errorf("form with capacity %d for %d tokens: %v", pos, pos, r.Errors)
	}
	f.Capacity = ""
	if r := f.Evaluate(); !r.OK() {
		t.Errorf("the model's capacity refused: %v", r.Errors)
	}
}

// Issue 26 item 6: Tab in the message box moves the focus on (Shift+Tab
// back) instead of typing a tab.
func TestComposerTabMovesFocus(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	v := u.chat
	c := u.Win.Canvas()
	if v.input.AcceptsTab() {
		t.Error("the message box takes Tab (the window would type it instead of moving the focus)")
	}
	c.Focus(v.input)
	test.Type(v.input, "Hi")
	v.input.TypedKey(&fyne.KeyEvent{Name: fyne.KeyTab})
	if strings.Contains(v.input.Text, "\t") || c.Focused() == v.input {
		t.Errorf("Tab: text %q, focus %T", v.input.Text, c.Focused())
	}
	c.Focus(v.input)
	v.input.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	v.input.TypedKey(&fyne.KeyEvent{Name: fyne.KeyTab})
	v.input.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	if c.Focused() == v.input || v.input.Text != "Hi" {
		t.Errorf("Shift+Tab: text %q, focus %T", v.input.Text, c.Focused())
	}
}

// Issue 26 item 9: a routine "too long" is said once, in the red line (no
// dialog on top), with the same count as the note under the box; the
// activity line is readable beside the bar; the empty chat names the key
// that sends.
func TestChatMessagesSaidOnceAndRight(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(8)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	v := u.chat
	if md := test.RenderObjectToMarkup(v.transcript); !strings.Contains(md, "press Enter") {
		t.Errorf("empty chat with Enter sending:\n%s", md)
	}
	u.Prefs.SetEnterNewline(true)
	v.drawTranscript(u.Chat.State())
	if md := test.RenderObjectToMarkup(v.transcript); !strings.Contains(md, "+Enter") {
		t.Errorf("empty chat with Ctrl/Cmd+Enter sending:\n%s", md)
	}
	u.Prefs.SetEnterNewline(false)

	for range 3 {
		if err := u.Chat.Send("Tell me a story about the sea, with ships and storms and sailors."); err != nil {
			t.Fatal(err)
		}
		settle(u)
	}
	mid := strings.Repeat("Go on with more words. ", 10)
	u.Chat.SetDraft(mid)
	note := u.Chat.State().DraftNote
	if err := u.Chat.Send(mid); err != nil {
		t.Fatal(err)
	}
	settle(u)
	st := u.Chat.State()
	if top := u.Win.Canvas().Overlays().Top(); top != nil {
		t.Errorf("a dialog for a turn that does not fit:\n%s", test.RenderObjectToMarkup(top))
	}
	if !v.errLabel.Visible() || !strings.Contains(v.errLabel.Text, "with the history") || strings.Count(st.Err, "128") != 1 {
		t.Errorf("red line %q (visible %v)", v.errLabel.Text, v.errLabel.Visible())
	}
	var would, of int
	fmt.Sscanf(st.Err[strings.Index(st.Err, "would be"):], "would be %d", &would)
	fmt.Sscanf(note[strings.Index(note, "too long:"):], "too long: %d of", &of)
	if would == 0 || would != of {
		t.Errorf("the note says %q, the error %q", note, st.Err)
	}

	// The activity line gets room beside the bar.
	lbl := widget.NewLabel("Rebuilding the cache from the stored conversation…")
	lbl.Truncation = fyne.TextTruncateEllipsis
	row := activityRow(lbl, widget.NewProgressBar())
	row.Resize(fyne.NewSize(560, row.MinSize().Height))
	if lbl.Size().Width < 200 {
		t.Errorf("the activity line is %.0f wide of 560", lbl.Size().Width)
	}
}

// Issue 26 item 4: the branch control ‹ k/n › has its own line: the next
// message's header starts below it, not on its row.
func TestBranchControlHasItsOwnLine(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	u.Win.Resize(fyne.NewSize(800, 600))
	v := u.chat
	v.drawTranscript(ChatState{Loaded: true, Messages: []Message{
		{Role: "user", Text: "Tell me about the sea."},
		{Role: "assistant", Text: "The sea is wide."},
		{Role: "user", Text: "And the ships?"},
	}, Branches: []Branch{{}, {K: 1, N: 2}}})
	v.scroll.Refresh()
	md := test.RenderObjectToMarkup(v.transcript)
	y := func(text string) int {
		var last fyne.CanvasObject // the last message's
		walk(v.transcript, func(o fyne.CanvasObject) {
			if tx, ok := o.(*canvas.Text); ok && tx.Text == text {
				last = tx
			}
		})
		if last == nil {
			t.Fatalf("no %q in\n%s", text, md)
		}
		return int(rectOf(last).y0)
	}
	if arrows, next := y(" 1/2 "), y("You"); next <= arrows+19 {
		t.Errorf("the next header at y=%d, the branch control at y=%d:\n%s", next, arrows, md)
	}
}

// Issue 26 item 3: every tab fits an 800×600 window (a window that needs
// more is taller than the screen, its bottom out of reach), and the
// Benchmarks run form's Start, progress and results can be scrolled to.
func TestTabsFit800x600(t *testing.T) {
	u, _ := newTestUI(t)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		for _, tab := range []string{TabModels, TabChat, TabBenchmarks} {
			u.SelectTab(tab)
			settle(u)
			if m := u.Win.Content().MinSize(); m.Width > 800 || m.Height > 600 {
				t.Errorf("%s, %s: the window needs %.0f×%.0f", th, tab, m.Width, m.Height)
			}
		}
		u.Win.Resize(fyne.NewSize(800, 600))
		settle(u)
		u.SelectTab(TabBenchmarks)
		tabs := u.benchObj.(*container.AppTabs)
		tabs.SelectIndex(0)
		sc := tabs.Items[0].Content.(*container.Scroll)
		sc.ScrollToBottom()
		settle(u)
		h := u.Win.Canvas().Size().Height
		d := fyne.CurrentApp().Driver()
		box := sc.Content.(*fyne.Container).Objects
		for _, o := range []fyne.CanvasObject{findButton(t, sc, "Start"), findButton(t, sc, "Cancel"), box[len(box)-1]} {
			if p := d.AbsolutePositionForObject(o); p.Y+o.Size().Height > h+0.5 || p.Y < 0 {
				t.Errorf("%s: %T at y %.0f–%.0f of %.0f after scrolling", th, o, p.Y, p.Y+o.Size().Height, h)
			}
		}
	}
}

// Issue 26 item 3: at 800×600 the settings sheet's Cancel and Apply are
// inside the window and below the fields' scroll, not on top of them.
func TestSettingsSheetFits800x600(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	settle(u)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		settle(u)
		sheet := u.chat.showSettings()
		top := u.Win.Canvas().Overlays().Top()
		d := fyne.CurrentApp().Driver()
		apply := findButton(t, top, "Apply")
		var sc *container.Scroll
		walk(top, func(o fyne.CanvasObject) {
			if s, ok := o.(*container.Scroll); ok && s.Content == sheet.root {
				sc = s
			}
		})
		if sc == nil {
			t.Fatal("no scroll around the sheet")
		}
		h := u.Win.Canvas().Size().Height
		bp, sp := d.AbsolutePositionForObject(apply), d.AbsolutePositionForObject(sc)
		if bp.Y+apply.Size().Height > h || bp.Y < sp.Y+sc.Size().Height {
			t.Errorf("%s: Apply at y %.0f–%.0f, the fields' scroll ends at %.0f, the window at %.0f", th, bp.Y, bp.Y+apply.Size().Height, sp.Y+sc.Size().Height, h)
		}
		u.chat.hideSettings()
	}
}

// walk calls f on o and everything under it.
func walk(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	f(o)
	switch x := o.(type) {
	case *fyne.Container:
		for _, c := range x.Objects {
			walk(c, f)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(x).Objects() {
			walk(c, f)
		}
	}
}

// Issue 26 item 13: File ▸ Quit (Ctrl/Cmd+Q) stops a reply in flight and
// saves it before the app ends.
func TestQuitStopsAndSavesTheReply(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(100)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	var quit *fyne.MenuItem
	for _, m := range u.Win.MainMenu().Items {
		for _, it := range m.Items {
			if it.Shortcut != nil && it.Shortcut.ShortcutName() == ShortcutQuit.ShortcutName() {
				quit = it
			}
		}
	}
	if quit == nil || !quit.IsQuit {
		t.Fatal("no Quit item with Ctrl/Cmd+Q")
	}
	id := u.Chat.State().ConvID
	if err := u.Chat.Send("Tell me a long story about the sea."); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return u.Chat.State().Streaming != "" })
	quit.Action()
	if st := u.Chat.State(); st.Busy {
		t.Fatal("still generating after Quit")
	}
	_, _, msgs, err := u.Backend.Chats.LoadConversation(context.Background(), id)
	if err != nil || len(msgs) != 2 || msgs[1].Role != "assistant" || len(msgs[1].IDs) == 0 {
		t.Fatalf("after Quit the store holds %d messages (%v)", len(msgs), err)
	}
}

// Issue 26 item 10: the window reopens on its last tab; Enter confirms the
// Undo Tokens dialog and closes the error dialog; the View menu checks the
// theme in use; the Chat menu's items are off when there is nothing to act
// on.
func TestSmallerRoughEdges(t *testing.T) {
	u, root := newTestUI(t)
	u.SelectTab(TabBenchmarks)
	b2, _ := testBackend(t)
	u2 := NewUI(u.App, b2)
	t.Cleanup(u2.Close)
	if u2.CurrentTab() != TabBenchmarks {
		t.Errorf("reopened on %s, closed on %s", u2.CurrentTab(), TabBenchmarks)
	}

	menu := func(title, label string) *fyne.MenuItem {
		for _, m := range u.Win.MainMenu().Items {
			for _, it := range m.Items {
				if m.Label == title && it.Label == label {
					return it
				}
			}
		}
		t.Fatalf("no %s ▸ %s", title, label)
		return nil
	}
	if !menu("View", "System Theme").Checked || menu("View", "Dark Theme").Checked {
		t.Error("the View menu does not check the system theme")
	}
	menu("View", "Dark Theme").Action()
	if !menu("View", "Dark Theme").Checked || menu("View", "System Theme").Checked {
		t.Error("the View menu does not check the dark theme after choosing it")
	}

	if !menu("Chat", "Undo Last Turn").Disabled || !menu("Chat", "Regenerate").Disabled || !menu("Chat", "Stop (Esc)").Disabled {
		t.Error("Chat menu items on with no model chosen")
	}
	u.SelectTab(TabChat)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if menu("Chat", "Send").Disabled || !menu("Chat", "Undo Tokens…").Disabled {
		t.Error("Chat menu on an empty conversation: Send off or Undo Tokens on")
	}
	if err := u.Chat.Send("Hello"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if menu("Chat", "Undo Last Turn").Disabled || menu("Chat", "Regenerate").Disabled {
		t.Error("Chat menu after a reply: undo or regenerate off")
	}

	// Enter in the Undo Tokens dialog undoes.
	pos := u.Chat.State().Position
	u.chat.undoTokensDialog()
	f, ok := u.Win.Canvas().Focused().(*escEntry)
	if !ok {
		t.Fatalf("the dialog's field has no focus: %T", u.Win.Canvas().Focused())
	}
	f.SetText("2")
	f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	settle(u)
	if got := u.Chat.State().Position; got != pos-2 {
		t.Errorf("Enter in Undo Tokens: meter %d, want %d", got, pos-2)
	}

	// The Compare help fits an 800-pixel window: short lines (the label
	// does not wrap, its tables would break).
	found := false
	walk(u.benchObj.(*container.AppTabs).Items[3].Content, func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok && strings.Contains(l.Text, "Pick two runs") {
			found = true
			for _, line := range strings.Split(l.Text, "\n") {
				if w := fyne.MeasureText(line, theme.TextSize(), l.TextStyle).Width; w > 760 {
					t.Errorf("Compare help line %.0f wide: %q", w, line)
				}
			}
		}
	})
	if !found {
		t.Error("no Compare help")
	}

	// Enter closes the error dialog.
	u.ShowError(errors.New("something"))
	u.Win.Canvas().(interface {
		OnTypedKey() func(*fyne.KeyEvent)
	}).OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if top := u.Win.Canvas().Overlays().Top(); top != nil && top.Visible() {
		t.Error("Enter left the error dialog open")
	}
}

// Issue 26 item 8: the settings fields stay where they are while typing
// makes errors come and go.
func TestSettingsFieldsDoNotMoveWhileTyping(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	sheet := newSettingsSheet(NewSettingsForm(greedy(8), e.Info), u.newEscEntry)
	w := test.NewWindow(container.NewVScroll(sheet.root))
	defer w.Close()
	w.Resize(fyne.NewSize(660, 1400))
	d := fyne.CurrentApp().Driver()
	names := []string{"Capacity", "Windows", "Temperature", "Seed", "SystemPrompt"}
	where := func() []fyne.Position {
		var ps []fyne.Position
		for _, n := range names {
			ps = append(ps, d.AbsolutePositionForObject(sheet.entries[n]))
		}
		return ps
	}
	// Laid out once at its width first: a wrapped label settles then.
	sheet.refresh()
	w.Content().Refresh()
	w.Resize(fyne.NewSize(661, 1400))
	w.Resize(fyne.NewSize(660, 1400))
	before := where()
	for _, typed := range [][2]string{{"Capacity", "x"}, {"Windows", "y"}, {"Temperature", "99"}, {"Capacity", ""}, {"Windows", ""}} {
		en := sheet.entries[typed[0]]
		en.SetText(typed[1])
		w.Content().Refresh()
		if after := where(); !slices.Equal(after, before) {
			t.Fatalf("after typing %q into %s the fields moved: %v → %v", typed[1], typed[0], before, after)
		}
	}
}

// Issue 26 item 11: each message can be copied, as its text or as
// Markdown (the export's format).
func TestCopyMessage(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	v := u.chat
	v.drawTranscript(ChatState{Loaded: true, Messages: []Message{
		{Role: "user", Text: "Tell me about the sea."},
		{Role: "assistant", Text: "The sea is wide.\n"},
	}})
	var links []*widget.HyperlinkSegment
	for _, s := range transcriptSegs(v) {
		if h, ok := s.(*widget.HyperlinkSegment); ok {
			links = append(links, h)
		}
	}
	// Copy, Copy as Markdown, Select Text…, More… under each message.
	if len(links) != 8 || links[4].Text != "Copy" || links[5].Text != "Copy as Markdown" {
		t.Fatalf("links %v", links)
	}
	links[4].OnTapped()
	if got := u.App.Clipboard().Content(); got != "The sea is wide.\n" {
		t.Errorf("Copy: %q", got)
	}
	links[5].OnTapped()
	if got := u.App.Clipboard().Content(); got != "**Assistant**\n\nThe sea is wide.\n" {
		t.Errorf("Copy as Markdown: %q", got)
	}
}

// Issue 26 item 12: a conversation can be renamed, found by title, and
// exported as the CLI exports it (Markdown and JSON).
func TestConversationRenameSearchExport(t *testing.T) {
	ctx := context.Background()
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(ctx, e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if err := u.Chat.Send("Hello"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if err := u.Chat.Send("About ships"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	id := u.Chat.State().ConvID

	if err := u.Chat.RenameConversation(ctx, id, "  "); err == nil {
		t.Error("an empty title accepted")
	}
	if err := u.Chat.RenameConversation(ctx, id, "Sea voyages"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	st := u.Chat.State()
	if st.Title != "Sea voyages" || len(st.Conversations) != 2 || st.Conversations[0].Title != "Sea voyages" {
		t.Errorf("after rename: title %q, list %+v", st.Title, st.Conversations)
	}

	v := u.chat
	v.search.SetText("VOYAGE") // the store searches on another goroutine
	waitFor(t, func() bool { return len(u.Chat.State().Conversations) == 1 })
	settle(u)
	if len(v.convs) != 1 || v.convs[0].ID != id {
		t.Errorf("search: %+v", v.convs)
	}
	v.search.SetText("")
	waitFor(t, func() bool { return len(u.Chat.State().Conversations) == 2 })
	settle(u)
	if len(v.convs) != 2 {
		t.Errorf("cleared search: %+v", v.convs)
	}

	for _, format := range []string{"md", "json"} {
		var got, want strings.Builder
		if err := u.Chat.ExportConversation(ctx, &got, id, format); err != nil {
			t.Fatal(err)
		}
		var err error
		if format == "md" {
			err = u.Backend.DB.ExportMarkdown(ctx, &want, id)
		} else {
			err = u.Backend.DB.ExportJSON(ctx, &want, id)
		}
		if err != nil || got.String() != want.String() || !strings.Contains(got.String(), "Sea voyages") {
			t.Errorf("export %s:\n%s\nwant\n%s (%v)", format, got.String(), want.String(), err)
		}
	}
	if err := u.Chat.ExportConversation(ctx, io.Discard, id, "pdf"); err == nil {
		t.Error("export as pdf accepted")
	}
	if ExportFormat("a.JSON") != "json" || ExportFormat("a.md") != "md" || exportName(`a/b: "c"`) != "a-b- -c-.md" {
		t.Error("export file names")
	}

	// The side bar's buttons fit it at 800×600.
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		settle(u)
		side := v.root.(*container.Split).Leading
		for _, b := range []*widget.Button{v.renBtn, v.expBtn} {
			if b.Disabled() || b.Size().Width < b.MinSize().Width-0.5 || b.MinSize().Width*2 > side.Size().Width {
				t.Errorf("%s: %q is %.0f wide (needs %.0f), the side bar %.0f", th, b.Text, b.Size().Width, b.MinSize().Width, side.Size().Width)
			}
		}
	}
}

// Issue 26 item 7: a second window on the same database says so, and a
// window re-reads its conversation list when another one writes.
func TestSecondWindowOnOneDatabase(t *testing.T) {
	ctx := context.Background()
	a := test.NewTempApp(t)
	b1, db1 := testBackend(t)
	db2, err := store.Open(ctx, b1.DBPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	sa2 := NewStoreAdapter(db2)
	b2 := Backend{Inspector: NewInspector(), Library: sa2, Chats: sa2, Opener: hermeticOpener(), DBPath: b1.DBPath, DB: db2}

	// Widget updates wait for the test goroutine, as in newTestUI (the
	// test driver's fyne.Do would run them on the watcher's goroutine).
	queued := func(u *UI) *UI {
		q := &uiQueue{}
		u.do = q.post
		queues.Store(u, q)
		t.Cleanup(u.Close)
		return u
	}
	u1 := queued(NewUI(a, b1))
	u2 := queued(NewUI(a, b2))
	if u1.banner.Visible() {
		t.Errorf("the first window: %q", u1.banner.Text)
	}
	if !u2.banner.Visible() || !strings.Contains(u2.banner.Text, "Another etchat window") {
		t.Errorf("the second window's banner %q (visible %v)", u2.banner.Text, u2.banner.Visible())
	}
	// Issue 36 item 6: the first window learns of the second (its watch
	// sees the knock on the lock file) and shows the banner too.
	u1.watchEvery = 20 * time.Millisecond
	done1 := make(chan struct{})
	u1.Start(nil, done1)
	<-done1
	waitFor(t, func() bool { settle(u1); return u1.banner.Visible() })
	if !strings.Contains(u1.banner.Text, "Another etchat window") {
		t.Errorf("the first window's banner %q", u1.banner.Text)
	}

	path := modelCopy(t, fixtures.Llama3, true)
	if res := NewLibrary(b1.Inspector, b1.Library).Add(ctx, path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	u2.watchEvery = 20 * time.Millisecond
	done := make(chan struct{})
	u2.Start(nil, done)
	<-done
	if err := u2.Chat.SetModel(ctx, inspect(t, path)); err != nil {
		t.Fatal(err)
	}
	if n := len(u2.Chat.State().Conversations); n != 0 {
		t.Fatalf("%d conversations before", n)
	}
	if _, err := b1.Chats.CreateConversation(ctx, path, "From the other window", greedy(4)); err != nil {
		t.Fatal(err)
	}
	_ = db1
	waitFor(t, func() bool {
		cs := u2.Chat.State().Conversations
		return len(cs) == 1 && cs[0].Title == "From the other window"
	})
	settle(u2)
	if len(u2.chat.convs) != 1 {
		t.Errorf("the list shows %d conversations", len(u2.chat.convs))
	}

	// The lock is given back with the window.
	u1.Close()
	u3 := queued(NewUI(a, b2))
	if u3.banner.Visible() {
		t.Errorf("after the first window closed: %q", u3.banner.Text)
	}
}
