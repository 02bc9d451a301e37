package app

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"etchat/internal/fixtures"
)

// gatedOpener opens real sessions (the CPU engine) whose warm stops after
// each chunk until the test lets it go on: a test double at the Opener
// boundary, so a test can act while a warm is half-way.
type gatedOpener struct {
	Opener
	reached chan int      // the tokens held after each chunk
	release chan struct{} // one receive per chunk
}

func (o *gatedOpener) Open(ctx context.Context, info *ModelInfo, s Settings, history []Message, progress func(Progress)) (Session, error) {
	sess, err := o.Opener.Open(ctx, info, s, history, progress)
	if err != nil {
		return nil, err
	}
	return &gatedSession{Session: sess, o: o}, nil
}

type gatedSession struct {
	Session
	o *gatedOpener
}

func (g *gatedSession) Warm(ctx context.Context, progress func(held, total int)) error {
	return g.Session.(warmer).Warm(ctx, func(held, total int) {
		progress(held, total)
		g.o.reached <- held
		<-g.o.release
	})
}

func (g *gatedSession) ToWarm() (held, total int) { return g.Session.(warmer).ToWarm() }

// storedTurn stores a one-turn conversation of the llama3 fixture (the
// reference's first turn, 8 greedy tokens) and returns the backend, the
// model and the conversation's id.
func storedTurn(t *testing.T) (Backend, *ModelInfo, int64, reference) {
	t.Helper()
	b, _ := testBackend(t)
	ref := llamaReference(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	model := inspect(t, path)
	c, errs := newTestChat(t, b, model)
	run(t, c, errs, c.NewConversation(greedy(8)))
	st := run(t, c, errs, c.Send(ref.Multiturn.Turn1.Messages[0].Content))
	c.Close()
	return b, model, st.ConvID, ref
}

// lastStats is the prompt tokens the last reply's turn read.
func lastPrompt(t *testing.T, st ChatState) int {
	t.Helper()
	m := st.Messages[len(st.Messages)-1]
	if m.Stats == nil {
		t.Fatal("the last reply has no stats")
	}
	return int(m.Stats.NumPromptTokens)
}

// Item 14: a reopened conversation is read into the cache in the
// background, shown in the meter and the status line, and the first send
// then reads only the new turn and answers as the reference does.
func TestReopenedConversationWarmsInTheBackground(t *testing.T) {
	b, model, id, ref := storedTurn(t)
	c, errs := newTestChat(t, b, model)
	var mu sync.Mutex
	var meters, activities []string
	var positions []int
	c.OnChange = func() {
		st := c.State()
		if st.Warming {
			mu.Lock()
			meters, activities, positions = append(meters, st.Meter()), append(activities, st.Activity), append(positions, st.Position)
			mu.Unlock()
		}
	}
	st := run(t, c, errs, c.OpenConversation(id)) // Wait waits for the warm too
	c.OnChange = nil
	history := len(ref.Multiturn.Turn1.InputIDs) + 8
	if st.Warming || st.Position != history || len(st.Messages) != 2 {
		t.Fatalf("after the warm: warming %v, position %d of %d, %d messages", st.Warming, st.Position, history, len(st.Messages))
	}
	mu.Lock()
	if len(positions) < 2 || positions[len(positions)-1] != history || !strings.Contains(meters[0], "reading the history") ||
		!strings.Contains(activities[len(activities)-1], "of "+strconv.Itoa(history)+" tokens") {
		t.Errorf("while warming: positions %v, meters %q, activities %q", positions, meters, activities)
	}
	mu.Unlock()
	stored := idsOf(st.Messages)
	st = run(t, c, errs, c.Send(ref.Multiturn.Turn2.Messages[2].Content))
	if got := st.Messages[3].Text; got != keptTurn2(t) {
		t.Errorf("turn 2 after the warm %q, want %q", got, keptTurn2(t))
	}
	if got, want := lastPrompt(t, st), newTokens(st, stored, len(stored)); got != want {
		t.Errorf("the first send read %d prompt tokens, want only the new turn's %d", got, want)
	}
}

// A send while the warm is half-way stops it cleanly: the send reads the
// rest and answers as the reference does; an undo stops it too, and it
// goes on after; so does closing.
func TestWarmStoppedBySendUndoAndClose(t *testing.T) {
	b, model, id, ref := storedTurn(t)
	gate := &gatedOpener{Opener: b.Opener, reached: make(chan int), release: make(chan struct{})}
	b.Opener = gate
	c, errs := newTestChat(t, b, model)
	if err := c.OpenConversation(id); err != nil {
		t.Fatal(err)
	}
	first := <-gate.reached // one chunk read, the warm waits
	if st := c.State(); !st.Warming || st.Busy || st.Position != first {
		t.Fatalf("half-way: warming %v busy %v position %d (read %d)", st.Warming, st.Busy, st.Position, first)
	}
	stored := idsOf(c.State().Messages)
	if err := c.Send(ref.Multiturn.Turn2.Messages[2].Content); err != nil {
		t.Fatal(err) // not ErrBusy: a warm is not an action
	}
	gate.release <- struct{}{} // the chunk ends; the warm sees it was stopped
	st := run(t, c, errs, nil)
	if got := st.Messages[3].Text; got != keptTurn2(t) {
		t.Errorf("turn 2 sent during the warm %q, want %q", got, keptTurn2(t))
	}
	if got, want := lastPrompt(t, st), newTokens(st, stored, first); got != want {
		t.Errorf("the send read %d prompt tokens, want %d (the rest of the history and the new turn)", got, want)
	}
	c.Close()

	// Reopened again (two turns now): an undo half-way stops the warm,
	// which then reads what is left of the first turn.
	c, errs = newTestChat(t, b, model)
	if err := c.OpenConversation(id); err != nil {
		t.Fatal(err)
	}
	<-gate.reached
	if err := c.UndoTurn(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	released := make(chan struct{})
	go func() { // lets every chunk go on until stop
		defer close(released)
		for {
			select {
			case gate.release <- struct{}{}:
			case <-gate.reached:
			case <-stop:
				return
			}
		}
	}()
	st = run(t, c, errs, nil)
	close(stop)
	<-released
	if shown := tokensShown(st.Messages); st.Warming || len(st.Messages) != 2 || st.Position != shown {
		t.Errorf("after undo during the warm: warming %v, %d messages, position %d (want the %d shown)", st.Warming, len(st.Messages), st.Position, shown)
	}
	st = run(t, c, errs, c.Send(ref.Multiturn.Turn2.Messages[2].Content))
	if got := st.Messages[3].Text; got != keptTurn2(t) {
		t.Errorf("turn 2 after undo %q, want %q", got, keptTurn2(t))
	}
	c.Close()

	// Closing while warming: the warm stops after its chunk, the session
	// closes, nothing is reported.
	c, errs = newTestChat(t, b, model)
	if err := c.OpenConversation(id); err != nil {
		t.Fatal(err)
	}
	<-gate.reached
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	for c.State().Warming { // Close has stopped the warm before its chunk ends
		time.Sleep(time.Millisecond)
	}
	gate.release <- struct{}{}
	<-closed
	if st := c.State(); st.Warming || st.Loaded || len(*errs) > 0 {
		t.Errorf("after closing while warming: warming %v, loaded %v, errors %v", st.Warming, st.Loaded, *errs)
	}
}

// Settings ▸ Apply reloads and warms: the meter shows the history, and the
// next send reads only the new turn.
func TestApplySettingsWarms(t *testing.T) {
	b, model, id, ref := storedTurn(t)
	c, errs := newTestChat(t, b, model)
	st := run(t, c, errs, c.OpenConversation(id))
	held, stored := st.Position, idsOf(st.Messages)
	s := st.Settings
	s.Capacity = 128
	st = run(t, c, errs, c.ApplySettings(s))
	if st.Capacity != 128 || st.Position != held || st.Warming {
		t.Fatalf("after apply: capacity %d, position %d (want %d), warming %v", st.Capacity, st.Position, held, st.Warming)
	}
	st = run(t, c, errs, c.Send(ref.Multiturn.Turn2.Messages[2].Content))
	if got, want := lastPrompt(t, st), newTokens(st, stored, held); got != want || st.Messages[3].Text != keptTurn2(t) {
		t.Errorf("after apply the send read %d prompt tokens (want %d) and said %q", got, want, st.Messages[3].Text)
	}
	// A capacity that cannot hold the history is still refused.
	s.Capacity = held - 1
	if err := c.ApplySettings(s); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), "cannot hold this conversation") {
		t.Errorf("errors %v", *errs)
	}
}

func tokensShown(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.IDs)
	}
	return n
}

func idsOf(msgs []Message) []int {
	var ids []int
	for _, m := range msgs {
		ids = append(ids, m.IDs...)
	}
	return ids
}

// newTokens is what the turn just answered had to read with the first
// cached tokens of stored in the cache: its prompt past the part they
// agree with (a reply cut at the budget is re-rendered as text, which may
// tokenize otherwise).
func newTokens(st ChatState, stored []int, cached int) int {
	prompt := idsOf(st.Messages[:len(st.Messages)-1])
	agree := 0
	for agree < min(len(prompt), len(stored), cached) && prompt[agree] == stored[agree] {
		agree++
	}
	return len(prompt) - agree
}
