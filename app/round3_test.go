package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"etchat/internal/fixtures"
)

// A reopened conversation that fills its cache (its next token cannot
// fit, so it is kept as text and not read in) shows what it holds, says
// it is full and what to do; a send fails with the same advice, and an
// undo of the turn frees the room.
func TestFullReopenedConversationMeter(t *testing.T) {
	b, model, id, ref := storedTurn(t)
	history := len(ref.Multiturn.Turn1.InputIDs) + 8
	s := greedy(8)
	s.Capacity = history // exactly full: the next token cannot fit
	if err := b.Chats.SaveSettings(context.Background(), id, s); err != nil {
		t.Fatal(err)
	}
	c, errs := newTestChat(t, b, model)
	st := run(t, c, errs, c.OpenConversation(id))
	if st.Capacity != history {
		t.Fatalf("capacity %d, want the %d the settings ask for", st.Capacity, history)
	}
	if st.Position != 0 || st.Stored != history || st.Held() != history || !st.Full() {
		t.Fatalf("reopened full: position %d, stored %d, held %d, full %v; want %d kept as text", st.Position, st.Stored, st.Held(), st.Full(), history)
	}
	want := fmt.Sprintf("%d / %d tokens · full: undo a turn, or raise the capacity in Settings", history, history)
	if m := st.Meter(); m != want {
		t.Errorf("meter %q, want %q", m, want)
	}
	if f := st.MeterFraction(); f != 1 {
		t.Errorf("meter fraction %.2f, want 1", f)
	}
	if !st.CanUndo() || st.CanUndoTokens() {
		t.Errorf("full, kept as text: undo turn %v (want true), undo tokens %v (want false: the cache holds none)", st.CanUndo(), st.CanUndoTokens())
	}

	text := ref.Multiturn.Turn2.Messages[2].Content
	if err := c.Send(text); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if len(*errs) != 1 {
		t.Fatalf("send on a full conversation: errors %v, want one", *errs)
	}
	msg := (*errs)[0].Error()
	for _, part := range []string{fmt.Sprintf("this conversation is full (%d of %d tokens)", history, history),
		"undo a turn", "raise the capacity in Settings to at least"} {
		if !strings.Contains(msg, part) {
			t.Errorf("send's advice %q lacks %q", msg, part)
		}
	}
	// The capacity it asks for is enough for this turn: more than the
	// history and the message.
	if m := regexp.MustCompile(`at least (\d+)`).FindStringSubmatch(msg); m == nil {
		t.Errorf("no capacity in %q", msg)
	} else if n, _ := strconv.Atoi(m[1]); n <= history+1 {
		t.Errorf("advised capacity %d, the history alone is %d", n, history)
	}
	*errs = nil
	st = c.State()
	if !st.Full() || st.Meter() != want || st.Restore != text {
		t.Errorf("after the failed send: full %v, meter %q, text back %q", st.Full(), st.Meter(), st.Restore)
	}

	// Settings that keep the capacity are refused, as for any capacity
	// that cannot hold the conversation; a larger one reads it in.
	if err := c.ApplySettings(s); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	var small *CapacityTooSmallError
	if len(*errs) != 1 || !errors.As((*errs)[0], &small) || small.Holds != history {
		t.Fatalf("apply at the same capacity: errors %v, want the capacity refused for %d tokens", *errs, history)
	}
	*errs = nil
	bigger := s
	bigger.Capacity = history + 32
	st = run(t, c, errs, c.ApplySettings(bigger))
	if st.Full() || st.Stored != 0 || st.Position != history || st.Capacity != bigger.Capacity {
		t.Errorf("after raising the capacity: full %v, stored %d, position %d of %d, capacity %d", st.Full(), st.Stored, st.Position, history, st.Capacity)
	}
	if m := st.Meter(); !strings.HasPrefix(m, fmt.Sprintf("%d / %d tokens", history, bigger.Capacity)) {
		t.Errorf("meter after raising the capacity %q", m)
	}

	c.Close()

	// The other advice: undoing the turn of the full conversation, kept as
	// text, frees the room.
	if err := b.Chats.SaveSettings(context.Background(), id, s); err != nil {
		t.Fatal(err)
	}
	c, errs = newTestChat(t, b, model)
	if st = run(t, c, errs, c.OpenConversation(id)); !st.Full() {
		t.Fatalf("reopened at capacity %d: meter %q", s.Capacity, st.Meter())
	}
	st = run(t, c, errs, c.UndoTurn())
	if st.Full() || st.Held() != 0 || st.Meter() != fmt.Sprintf("0 / %d tokens · nothing to undo yet", history) {
		t.Errorf("after undoing the only turn: full %v, held %d, meter %q", st.Full(), st.Held(), st.Meter())
	}
}

var draftNoteRE = regexp.MustCompile(`^(\d+) tokens · (\d+) left$`)

// While a warm holds the session the draft note cannot count: it says so
// rather than keep a count from before (or none), and once the warm ends
// it counts the text against the history now in the cache.
func TestDraftNoteCountedAfterTheWarm(t *testing.T) {
	b, model, id, ref := storedTurn(t)
	gate := &gatedOpener{Opener: b.Opener, reached: make(chan int), release: make(chan struct{})}
	b.Opener = gate
	c, errs := newTestChat(t, b, model)
	if err := c.OpenConversation(id); err != nil {
		t.Fatal(err)
	}
	<-gate.reached // one chunk read; the warm holds the session
	text := ref.Multiturn.Turn2.Messages[2].Content
	c.SetDraft(text)
	if st := c.State(); !st.Warming || st.DraftNote != "counted when the chat is free" {
		t.Errorf("typed during the warm: warming %v, note %q", st.Warming, st.DraftNote)
	}
	go func() { // lets every chunk go on
		for range gate.reached {
		}
	}()
	close(gate.release)
	st := run(t, c, errs, nil)
	close(gate.reached)
	history := len(ref.Multiturn.Turn1.InputIDs) + 8
	m := draftNoteRE.FindStringSubmatch(st.DraftNote)
	if st.Warming || st.Position != history || m == nil {
		t.Fatalf("after the warm: warming %v, position %d of %d, note %q", st.Warming, st.Position, history, st.DraftNote)
	}
	added, _ := strconv.Atoi(m[1])
	left, _ := strconv.Atoi(m[2])
	if added <= 0 || left > st.Capacity-history-added {
		t.Errorf("note %q: want the text's tokens and at most %d-%d-tokens left", st.DraftNote, st.Capacity, history)
	}
	// It is the count the text gets when typed with no warm running.
	b.Opener = gate.Opener
	c2, errs2 := newTestChat(t, b, model)
	run(t, c2, errs2, c2.OpenConversation(id))
	c2.SetDraft(text)
	if want := c2.State().DraftNote; st.DraftNote != want {
		t.Errorf("counted after the warm %q, typed with none running %q", st.DraftNote, want)
	}
}

// With no conversation loaded the context bar is not drawn (at 0 it is all
// track colour and reads as full); the meter's text says why. Loaded, the
// bar comes back.
func TestContextBarHiddenWhenEmpty(t *testing.T) {
	u, root := newTestUI(t)
	u.SelectTab(TabChat)
	settle(u)
	v := u.chat
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		settle(u)
		if v.meter.Visible() || !v.meterLabel.Visible() || v.meterText != "no model chosen" {
			t.Errorf("%s, no model: bar shown %v, text %q", th, v.meter.Visible(), v.meterText)
		}
	}
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if v.meter.Visible() || !strings.HasPrefix(v.meterText, "no conversation open") {
		t.Errorf("model chosen, none open: bar shown %v, text %q", v.meter.Visible(), v.meterText)
	}
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if !v.meter.Visible() || !strings.HasPrefix(v.meterText, "0 / ") {
		t.Errorf("a conversation open: bar shown %v, text %q", v.meter.Visible(), v.meterText)
	}
}

// Models tab at 800×600: the Capacity field (and the KV dtype under it)
// ends inside the details pane and left of where its scroll bar is drawn,
// in both themes.
func TestLibraryCapacityClearOfScrollBar800x600(t *testing.T) {
	u, root := newTestUI(t)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		u.SelectTab(TabModels)
		settle(u)
		u.Library.Select(filepath.Join(root, fixtures.Llama3, "model.pte"))
		settle(u)
		if !u.lib.details.Visible() {
			t.Fatalf("%s: no details shown", th)
		}
		pane := rectOf(u.lib.details)
		bar := pane.x1 - theme.ScrollBarSize()
		for name, o := range map[string]fyne.CanvasObject{"Capacity": u.lib.capacity, "KV dtype": u.lib.dtype} {
			r := rectOf(o)
			if !r.inside(pane) || r.x1 > bar+0.5 {
				t.Errorf("%s: %s at %v; the pane is %v, its scroll bar starts at %.0f", th, name, r, pane, bar)
			}
		}
	}
}
