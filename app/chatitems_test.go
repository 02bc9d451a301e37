package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"

	"etchat/internal/fixtures"
)

// openLlama is a chat over the real backend with the llama3 fixture and a
// conversation open with settings s.
func openLlama(t *testing.T, s Settings) (*Chat, *[]error, Backend) {
	t.Helper()
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(s))
	return c, errs, b
}

// Item 2: a send that does not fit puts the text back, with advice that
// fits the case: the message alone too long, or too long with the history.
func TestChatFailedSendKeepsTextWithFittingAdvice(t *testing.T) {
	c, errs, _ := openLlama(t, greedy(8))
	long := strings.Repeat("A long sentence that will never fit. ", 30) // ~1,000 characters
	if err := c.Send(long); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	st := c.State()
	if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "your message alone is") || !strings.Contains((*errs)[0].Error(), "shorten it") {
		t.Fatalf("errors %v", *errs)
	}
	if st.Restore != long || st.RestoreSeq != 1 || st.Draft != long || len(st.Messages) != 0 || st.Position != 0 {
		t.Errorf("after the failed send: restore %d chars (seq %d), %d messages at %d", len(st.Restore), st.RestoreSeq, len(st.Messages), st.Position)
	}
	// With history: a message that fits alone but not after the history.
	*errs = nil
	for range 3 {
		run(t, c, errs, c.Send("Tell me a story about the sea, with ships and storms and sailors."))
	}
	mid := strings.Repeat("Go on with more words. ", 10)
	if err := c.Send(mid); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "with the history") || !strings.Contains((*errs)[0].Error(), "undo earlier turns") {
		t.Fatalf("errors %v", *errs)
	}
	if st := c.State(); st.Restore != mid || len(st.Messages) != 6 {
		t.Errorf("restore %q, %d messages", st.Restore, len(st.Messages))
	}
	// An edit that does not fit: the edited text is kept too.
	*errs = nil
	if err := c.EditLast(long); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if st := c.State(); len(*errs) != 1 || st.Restore != long || st.RestoreSeq != 3 {
		t.Errorf("failed edit: errors %v, restore %d chars (seq %d)", *errs, len(st.Restore), st.RestoreSeq)
	}
	// The view puts it back into the (emptied) box.
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.Chat.SetModel(context.Background(), e.Info)
	u.Chat.NewConversation(greedy(4))
	settle(u)
	test.Type(u.chat.input, long)
	u.chat.send()
	settle(u)
	if u.chat.input.Text != long {
		t.Errorf("the message box holds %d chars after a failed send, want the %d typed", len(u.chat.input.Text), len(long))
	}
}

// Item 3: the meter follows a reply as it streams, and the bar shows the
// tokens generated, not a full prefill bar.
func TestChatMeterMovesWhileStreaming(t *testing.T) {
	c, errs, _ := openLlama(t, greedy(12))
	var mu sync.Mutex
	var positions []int
	var decode []Progress
	c.OnChange = func() {
		st := c.State()
		mu.Lock()
		defer mu.Unlock()
		if st.Busy && st.Streaming != "" {
			positions = append(positions, st.Position)
			decode = append(decode, st.Progress)
			if !strings.Contains(st.Meter(), "generating") {
				t.Errorf("meter while streaming %q", st.Meter())
			}
		}
	}
	st := run(t, c, errs, c.Send("Hello"))
	c.OnChange = nil
	if len(positions) < 5 || positions[0] <= 0 || positions[len(positions)-1] <= positions[0] || positions[len(positions)-1] > st.Position {
		t.Errorf("positions while streaming %v, final %d", positions, st.Position)
	}
	if p := decode[len(decode)-1]; p.Stage != "decode" || p.Total != 12 || p.Done < 5 {
		t.Errorf("decode progress %+v", p)
	}
	// Before any conversation, and while the first one loads.
	if m := (ChatState{Model: &ModelInfo{}, Busy: true}).Meter(); m != "loading the model…" {
		t.Errorf("meter while loading %q", m)
	}
}

// Item 6: on an empty chat the buttons that act on nothing are off and the
// meter says there is nothing to undo.
func TestChatEmptyStateActsOnNothing(t *testing.T) {
	c, errs, _ := openLlama(t, greedy(4))
	st := c.State()
	if st.CanUndo() || st.CanUndoTokens() || st.CanRegenerate() || st.CanReset() || st.Meter() != "0 / 128 tokens · nothing to undo yet" {
		t.Errorf("empty chat: undo %v tokens %v regen %v reset %v meter %q", st.CanUndo(), st.CanUndoTokens(), st.CanRegenerate(), st.CanReset(), st.Meter())
	}
	st = run(t, c, errs, c.Send("Hi"))
	if !st.CanUndo() || !st.CanUndoTokens() || !st.CanRegenerate() || !st.CanReset() {
		t.Error("after a turn the actions should be on")
	}
}

// Item 8: sampling defaults come from generation_config.json when it has
// sampling fields (a written one), else temperature 0.7 / top-p 0.9;
// greedy is one toggle away and changes nothing else.
func TestChatDefaultsFromGenerationConfig(t *testing.T) {
	path := modelCopy(t, fixtures.Llama3, true)
	m := inspect(t, path)
	if s := ModelDefaults(m, "cpu"); s.Temperature != 0.7 || s.TopP != 0.9 || s.TopK != 0 {
		t.Errorf("fixture without sampling fields: %+v", s)
	}
	gc := filepath.Join(filepath.Dir(path), "generation_config.json")
	os.Remove(gc) // a link to the fixture's
	if err := os.WriteFile(gc, []byte(`{"do_sample": true, "temperature": 0.6, "top_p": 0.95, "top_k": 20}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := ModelDefaults(m, "cpu")
	if s.Temperature != 0.6 || s.TopP != 0.95 || s.TopK != 20 {
		t.Errorf("written config: %+v", s)
	}
	os.WriteFile(gc, []byte(`{"do_sample": false}`), 0o644)
	if s := ModelDefaults(m, "cpu"); s.Temperature != 0 {
		t.Errorf("do_sample false: %+v", s)
	}
	os.WriteFile(gc, []byte(`{"temperature": 0.6, "top_p": 0.95, "top_k": 20}`), 0o644)

	b, _ := testBackend(t)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, m)
	if st := c.State(); st.Settings.Temperature != 0.6 || st.Greedy() {
		t.Errorf("chat settings %+v", st.Settings)
	}
	g := greedy(6)
	g.Temperature, g.TopP, g.TopK = 0.6, 0.95, 20
	run(t, c, errs, c.NewConversation(g))
	run(t, c, errs, c.Send("Hello"))
	if err := c.SetGreedy(true); err != nil {
		t.Fatal(err)
	}
	st := c.State()
	first := st.Messages[1].Text
	if !st.Greedy() || st.Settings.MaxNewTokens != 6 {
		t.Errorf("greedy: %+v", st.Settings)
	}
	for range 2 { // greedy: regenerating gives the same reply
		if st = run(t, c, errs, c.Regenerate()); st.Messages[1].Text != first && st.Messages[1].Text != "" {
			first = st.Messages[1].Text
		}
	}
	again := run(t, c, errs, c.Regenerate()).Messages[1].Text
	if again != first {
		t.Errorf("greedy regenerations differ: %q, %q", first, again)
	}
	if err := c.SetGreedy(false); err != nil || c.State().Settings.Temperature != 0.6 {
		t.Errorf("back to the model's sampling: %v %+v", err, c.State().Settings)
	}
}

// Item 9: a capacity above the model's context is refused with the reason,
// in the settings and in the library's estimate.
func TestCapacityCappedAtTheModelsContext(t *testing.T) {
	m := inspect(t, fixtures.PTE(fixtures.Llama3))
	f := NewSettingsForm(DefaultSettings("cpu"), m)
	f.Capacity = "4000"
	if r := f.Evaluate(); !strings.Contains(r.ErrorFor("Capacity"), "at most 128") {
		t.Errorf("settings: %v", r.Errors)
	}
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, b.Library)
	path := modelCopy(t, fixtures.Llama3, true)
	lib.Add(context.Background(), path)
	lib.Select(path)
	lib.SetEstimate("200", "bf16")
	d, _ := lib.Details()
	if !strings.Contains(d.CacheErr, "is more than the model's context: at most 128") {
		t.Errorf("estimate: %q", d.CacheErr)
	}
}

// Item 10: a reply's stats count the turn's new prompt tokens (not the
// history), and follow Undo Tokens; the meter matches what is shown.
func TestChatReplyStatsFollowUndo(t *testing.T) {
	c, errs, _ := openLlama(t, greedy(10))
	run(t, c, errs, c.Send("Hello there, how are you today?"))
	st := run(t, c, errs, c.Send("Tell me more."))
	r := st.Messages[3].Stats
	if r.NumPromptTokens <= 0 || r.NumPromptTokens > int64(len(st.Messages[2].IDs)+1) {
		t.Errorf("second turn counts %d prompt tokens; its message holds %d", r.NumPromptTokens, len(st.Messages[2].IDs))
	}
	if !strings.Contains(StatsLine(r, ""), "new prompt") {
		t.Errorf("stats line %q", StatsLine(r, ""))
	}
	st = run(t, c, errs, c.UndoTokens(3))
	if got := st.Messages[3].Stats.NumGeneratedTokens; got != 7 {
		t.Errorf("after undo 3: %d generated", got)
	}
	if st.Position != sumTokens(st.Messages) {
		t.Errorf("meter %d, shown %d", st.Position, sumTokens(st.Messages))
	}
}

// Item 11: the estimate of an in-graph model is not configurable; the
// cache summary says when the pools start at the capacity.
func TestInGraphEstimateAndPoolNote(t *testing.T) {
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, b.Library)
	ig := modelCopy(t, fixtures.InGraph, false)
	lib.Add(context.Background(), ig)
	lib.Select(ig)
	if d, _ := lib.Details(); d.Configurable || !strings.Contains(d.Memory, "fixed by the export") {
		t.Errorf("in-graph details: configurable %v, %q", d.Configurable, d.Memory)
	}
	ll := modelCopy(t, fixtures.Llama3, true)
	lib.Add(context.Background(), ll)
	lib.Select(ll)
	d, _ := lib.Details()
	if !d.Configurable || !strings.Contains(d.Summary, "the pools start at the capacity, 128: it is below the initial size 512") {
		t.Errorf("off-graph summary %q", d.Summary)
	}
}

// Item 14: the window reopens on the last conversation.
func TestReopensLastConversation(t *testing.T) {
	a := test.NewTempApp(t)
	b, _ := testBackend(t)
	root := uiModels(t)
	mk := func() *UI {
		u := NewUI(a, b)
		q := &uiQueue{}
		u.do = q.post
		queues.Store(u, q)
		done := make(chan struct{})
		u.Start([]string{root}, done)
		<-done
		settle(u)
		return u
	}
	u := mk()
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.Chat.SetModel(context.Background(), e.Info)
	u.Chat.NewConversation(greedy(4))
	settle(u)
	u.Chat.Send("Hello")
	settle(u)
	id := u.Chat.State().ConvID
	u.Close()

	u2 := mk()
	t.Cleanup(u2.Close)
	st := u2.Chat.State()
	if st.Model == nil || st.Model.Path != e.Path || st.ConvID != id || len(st.Messages) != 2 || len(st.Conversations) != 1 {
		t.Errorf("after relaunch: model %v conv %d (want %d), %d messages", st.Model != nil, st.ConvID, id, len(st.Messages))
	}
}

// Item 16: why Chat is off is said at the top of the details; the row
// starts with the tokenizer status.
func TestLibrarySaysWhyChatIsOff(t *testing.T) {
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, b.Library)
	p := modelCopy(t, fixtures.Llama3, false)
	lib.Add(context.Background(), p)
	lib.Select(p)
	d, _ := lib.Details()
	e, _ := lib.Entry(p)
	if !strings.Contains(d.ChatBlocked, "no tokenizer.json next to the .pte") || !strings.HasPrefix(e.Row(), "tokenizer missing") {
		t.Errorf("blocked %q, row %q", d.ChatBlocked, e.Row())
	}
}

// Item 17: regenerations are branches: "‹ k/n ›" on the reply, and
// switching brings the earlier reply back with the cache holding it.
func TestChatBranches(t *testing.T) {
	s := DefaultSettings("cpu")
	s.StorageDType, s.MaxNewTokens, s.Seed = "fp32", 6, 1
	c, errs, _ := openLlama(t, s)
	first := run(t, c, errs, c.Send("Hello")).Messages[1]
	var second Message
	for range 4 { // sampling: find a regeneration that differs
		if second = run(t, c, errs, c.Regenerate()).Messages[1]; second.Text != first.Text {
			break
		}
	}
	st := c.State()
	if b := st.BranchOf(1); b.N < 2 || b.K != b.N || b.Label() != "‹ "+itoa(b.K)+"/"+itoa(b.N)+" ›" {
		t.Fatalf("branch of the reply %+v", b)
	}
	if st.BranchOf(0).N != 1 {
		t.Errorf("the user message has no alternatives: %+v", st.BranchOf(0))
	}
	n := st.BranchOf(1).N
	for k := n; k > 1; k-- {
		run(t, c, errs, c.SwitchBranch(1, -1))
	}
	st = c.State()
	if st.Messages[1].Text != first.Text || st.BranchOf(1).K != 1 || st.Position != sumTokens(st.Messages) {
		t.Errorf("after switching back: %q (want %q), branch %+v", st.Messages[1].Text, first.Text, st.BranchOf(1))
	}
	if err := c.SwitchBranch(1, -1); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "no other branch") {
		t.Errorf("switching past the first: %v", *errs)
	}
}

// Item 18: the token count under the message box.
func TestChatDraftTokenCount(t *testing.T) {
	c, errs, _ := openLlama(t, greedy(4))
	c.SetDraft("Hello there")
	note := c.State().DraftNote
	st := run(t, c, errs, c.Send("Hello there"))
	// The count is the tokens the sent message holds, and what is left
	// after it is the capacity less the whole prompt.
	own := len(st.Messages[0].IDs)
	if want := fmt.Sprintf("%d tokens · %d left", own, 128-own); note != want {
		t.Errorf("note %q, want %q", note, want)
	}
	c.SetDraft("Hi")
	if n := c.State().DraftNote; !strings.HasSuffix(n, " left") || n == note {
		t.Errorf("after a turn %q (position %d)", n, st.Position)
	}
	c.SetDraft(strings.Repeat("word ", 200))
	if n := c.State().DraftNote; !strings.Contains(n, "too long") {
		t.Errorf("long draft %q", n)
	}
}

// Item 15: a hidden progress line or error line leaves no blank band: the
// messages start right under the header again, and the model list right
// under the toolbar after adding models.
func TestNoBlankBands(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	u.Chat.SetModel(context.Background(), e.Info)
	u.Chat.NewConversation(greedy(4))
	settle(u)
	v := u.chat
	y0 := v.scroll.Position().Y
	bad := greedy(4)
	bad.Windows = "x"
	u.Chat.ApplySettings(bad)
	settle(u)
	if !v.errLabel.Visible() || v.scroll.Position().Y <= y0 {
		t.Fatalf("the error line is not shown above the messages (y %v → %v)", y0, v.scroll.Position().Y)
	}
	u.Chat.Send("Hello")
	settle(u)
	if v.errLabel.Visible() || v.scroll.Position().Y != y0 {
		t.Errorf("after the error cleared the messages start at %v, before at %v", v.scroll.Position().Y, y0)
	}
	if l := u.lib; l.scanBox.Visible() || l.list.Position().Y != 0 {
		t.Errorf("model list at y %v, scan line visible %v", l.list.Position().Y, l.scanBox.Visible())
	}
	// Adding a folder shows the scan line, and takes it away.
	done := u.AddURIs([]fyne.URI{storage.NewFileURI(filepath.Join(root, fixtures.Gemma3))})
	<-done
	settle(u)
	if l := u.lib; l.scanBox.Visible() || l.list.Position().Y != 0 {
		t.Errorf("after adding: model list at y %v", l.list.Position().Y)
	}
}

// Item 7: Enter sends, Shift+Enter starts a new line, the preference swaps
// them; Esc closes the top dialog, else stops a reply.
func TestKeyboardEnterAndEsc(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	u.Chat.SetModel(context.Background(), e.Info)
	u.Chat.NewConversation(greedy(3))
	settle(u)
	in := u.chat.input
	u.Win.Canvas().Focus(in)
	test.Type(in, "first line")
	in.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	in.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	test.Type(in, "second")
	if in.Text != "first line\nsecond" || len(u.Chat.State().Messages) != 0 {
		t.Fatalf("Shift+Enter: %q, %d messages", in.Text, len(u.Chat.State().Messages))
	}
	in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	settle(u)
	if st := u.Chat.State(); len(st.Messages) != 2 || st.Messages[0].Text != "first line\nsecond" || in.Text != "" {
		t.Fatalf("Enter did not send: %d messages, box %q", len(st.Messages), in.Text)
	}
	// Swapped: Enter is a new line, Ctrl/Cmd+Enter sends.
	u.Prefs.SetEnterNewline(true)
	test.Type(in, "a")
	in.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	test.Type(in, "b")
	if in.Text != "a\nb" {
		t.Errorf("swapped Enter: %q", in.Text)
	}
	in.TypedShortcut(ShortcutSend)
	settle(u)
	if n := len(u.Chat.State().Messages); n != 4 {
		t.Errorf("Ctrl+Enter with the swap: %d messages", n)
	}
	// Esc closes the top dialog first.
	u.showShortcuts()
	if u.Win.Canvas().Overlays().Top() == nil {
		t.Fatal("no dialog")
	}
	u.Escape()
	if u.Win.Canvas().Overlays().Top() != nil {
		t.Error("Esc did not close the dialog")
	}
	// Also from a field of the settings sheet, which has the focus (a
	// focused entry gets the key, not the window).
	sheet := u.chat.showSettings()
	field := sheet.entries["Temperature"]
	u.Win.Canvas().Focus(field)
	field.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if u.Win.Canvas().Overlays().Top() != nil {
		t.Error("Esc in the settings sheet did not close it")
	}
}

// Items 11 and 16 in the window: an in-graph model's estimate fields are
// greyed; Add… takes a typed path; the reason Chat is off is on top.
func TestLibraryViewFixedFieldsAndTypedPath(t *testing.T) {
	u, root := newTestUI(t)
	l := u.lib
	u.Library.Select(filepath.Join(root, fixtures.InGraph, "model.pte"))
	settle(u)
	if !l.capacity.Disabled() || !l.dtype.Disabled() || !l.blocked.Visible() || !strings.Contains(l.blocked.Text, "Chat is not available") {
		t.Errorf("in-graph: capacity disabled %v, dtype disabled %v, blocked %q", l.capacity.Disabled(), l.dtype.Disabled(), l.blocked.Text)
	}
	u.Library.Select(filepath.Join(root, fixtures.Llama3, "model.pte"))
	settle(u)
	if l.capacity.Disabled() || l.blocked.Visible() {
		t.Error("off-graph with a tokenizer: fields should be editable and nothing blocked")
	}
	extra := modelCopy(t, fixtures.Qwen3, true)
	l.addPath()
	top := u.Win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no Add dialog")
	}
	entry := u.Win.Canvas().Focused().(*escEntry)
	test.Type(entry, extra)
	entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	waitFor(t, func() bool { _, ok := u.Library.Entry(extra); return ok })
	settle(u)
	if u.Win.Canvas().Overlays().Top() != nil {
		t.Error("the Add dialog stayed open")
	}
}

// The header names the engine, its device, and why auto chose the CPU
// engine (the native runner library is not built here).
func TestChatHeaderNamesEngineAndFallback(t *testing.T) {
	s := greedy(2)
	s.Engine = "auto"
	c, _, _ := openLlama(t, s)
	st := c.State()
	line := EngineLine(st)
	if st.Engine.Name != "cpu" || st.Engine.Device != "cpu" || !st.Engine.Fallback || st.Engine.Reason == "" ||
		!strings.HasPrefix(line, "engine: cpu on cpu — auto: ") {
		t.Errorf("engine %+v, line %q", st.Engine, line)
	}
	if EngineLine(ChatState{Loaded: true, Engine: EngineInfo{Name: "mlx", Device: "metal", Reason: "asked for"}}) != "engine: mlx on metal" {
		t.Error("an explicit engine's line carries no reason")
	}
}
