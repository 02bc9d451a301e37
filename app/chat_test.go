package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"etchat/inference/engine"
	"etchat/internal/fixtures"
	"etchat/store"
)

// newTestChat makes a chat view-model over the backend with the llama3
// fixture chosen, collecting reported errors.
func newTestChat(t *testing.T, b Backend, model *ModelInfo) (*Chat, *[]error) {
	t.Helper()
	c := NewChat(b.Opener, b.Chats, "cpu")
	var mu sync.Mutex
	errs := &[]error{}
	c.OnError = func(err error) { mu.Lock(); *errs = append(*errs, err); mu.Unlock() }
	t.Cleanup(c.Close)
	if err := c.SetModel(context.Background(), model); err != nil {
		t.Fatal(err)
	}
	return c, errs
}

func run(t *testing.T, c *Chat, errs *[]error, err error) ChatState {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	c.Wait()
	st := c.State()
	if len(*errs) > 0 {
		t.Fatalf("action failed: %v", (*errs)[0])
	}
	if st.Busy {
		t.Fatal("still busy after Wait")
	}
	return st
}

func TestChatMatchesReferenceAndUndoRegenerateEditReset(t *testing.T) {
	b, _ := testBackend(t)
	ref := llamaReference(t)
	path := modelCopy(t, fixtures.Llama3, true)
	// the library saves the model, as the window does before a chat
	if res := NewLibrary(b.Inspector, b.Library).Add(context.Background(), path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	c, errs := newTestChat(t, b, inspect(t, path))

	st := run(t, c, errs, c.NewConversation(greedy(16)))
	if !st.Loaded || st.Position != 0 || st.Capacity != 128 || st.Engine.Name != "cpu" || st.ConvID == 0 {
		t.Fatalf("after New: loaded %v position %d capacity %d engine %q conv %d", st.Loaded, st.Position, st.Capacity, st.Engine, st.ConvID)
	}
	if st.Meter() != "0 / 128 tokens · undo re-prefills the history" && !strings.HasPrefix(st.Meter(), "0 / 128 tokens") {
		t.Errorf("meter %q", st.Meter())
	}

	// Send: the reply is the reference's greedy continuation.
	cs := ref.Cases[0]
	var streamed strings.Builder
	var smu sync.Mutex
	c.OnChange = func() {
		s := c.State()
		smu.Lock()
		if s.Streaming != "" {
			streamed.Reset()
			streamed.WriteString(s.Streaming)
		}
		smu.Unlock()
	}
	st = run(t, c, errs, c.Send(cs.Prompt))
	c.OnChange = nil
	if len(st.Messages) != 2 || st.Messages[0].Role != "user" || st.Messages[1].Role != "assistant" {
		t.Fatalf("messages %+v", st.Messages)
	}
	reply := st.Messages[1]
	if reply.Text != cs.GreedyText {
		t.Errorf("reply %q, want the reference %q", reply.Text, cs.GreedyText)
	}
	if !slices.Equal(st.Messages[0].IDs, cs.InputIDs) || !slices.Equal(reply.IDs, cs.GreedyIDs) {
		t.Errorf("tokens: user %v reply %v", st.Messages[0].IDs, reply.IDs)
	}
	if st.Position != len(cs.InputIDs)+len(cs.GreedyIDs) {
		t.Errorf("position %d, want %d", st.Position, len(cs.InputIDs)+len(cs.GreedyIDs))
	}
	if reply.Stats == nil || reply.Stats.NumGeneratedTokens != 16 || reply.Stats.NumPromptTokens != int64(len(cs.InputIDs)) || reply.Stats.DecodeRate <= 0 {
		t.Errorf("stats %+v", reply.Stats)
	}
	if line := StatsLine(reply.Stats, reply.StopReason); !strings.Contains(line, "decode") || !strings.Contains(line, "16 generated") {
		t.Errorf("stats line %q", line)
	}
	if !st.UndoInstant {
		t.Error("a flat cache should undo instantly")
	}
	if streamed.Len() == 0 || !strings.HasPrefix(cs.GreedyText, streamed.String()) {
		t.Errorf("no streaming seen (last %q)", streamed.String())
	}
	if st.Title != Title(cs.Prompt) {
		t.Errorf("title %q", st.Title)
	}

	// Regenerate: greedy gives the same reply again.
	st = run(t, c, errs, c.Regenerate())
	if len(st.Messages) != 2 || st.Messages[1].Text != cs.GreedyText || st.Position != 33 {
		t.Errorf("regenerate: %d messages, %q at %d", len(st.Messages), st.Messages[len(st.Messages)-1].Text, st.Position)
	}

	// Undo 3 tokens: the reply loses its last 3 tokens.
	st = run(t, c, errs, c.UndoTokens(3))
	if st.Position != 30 || len(st.Messages) != 2 || !slices.Equal(st.Messages[1].IDs, cs.GreedyIDs[:13]) {
		t.Errorf("undo 3: position %d, messages %d", st.Position, len(st.Messages))
	}
	if err := c.UndoTokens(31); err == nil || !strings.Contains(err.Error(), "holds 30") {
		t.Errorf("undo past the start: %v", err)
	}
	if err := c.UndoTokens(0); err == nil {
		t.Error("undo 0 tokens accepted")
	}

	// Edit: the turn becomes the multiturn reference's first turn.
	t1 := ref.Multiturn.Turn1
	st = run(t, c, errs, c.EditLast(t1.Messages[0].Content))
	if len(st.Messages) != 2 || st.Messages[0].Text != t1.Messages[0].Content {
		t.Fatalf("edit: %+v", st.Messages)
	}
	// max new tokens is the conversation's (16): the first 8 are the reference's
	if got := st.Messages[1].IDs; len(got) < 8 || !slices.Equal(got[:8], t1.GeneratedIDs) {
		t.Errorf("edited reply tokens %v, want prefix %v", got, t1.GeneratedIDs)
	}

	// Undo the turn: back to empty, instantly.
	st = run(t, c, errs, c.UndoTurn())
	if len(st.Messages) != 0 || st.Position != 0 {
		t.Errorf("undo turn: %d messages at %d", len(st.Messages), st.Position)
	}
	if err := c.UndoTurn(); err == nil {
		t.Error("undo on an empty conversation accepted")
	}
	if err := c.Regenerate(); err == nil {
		t.Error("regenerate without a reply accepted")
	}

	// Send and reset.
	st = run(t, c, errs, c.Send(cs.Prompt))
	if st.Position != 33 {
		t.Errorf("position %d", st.Position)
	}
	st = run(t, c, errs, c.Reset())
	if len(st.Messages) != 0 || st.Position != 0 {
		t.Errorf("reset: %d messages at %d", len(st.Messages), st.Position)
	}
	if err := c.Send("   "); err == nil {
		t.Error("empty message accepted")
	}
}

// A conversation reopened from the store continues exactly: the second
// turn's greedy reply is the reference's, which needs the first turn's
// tokens back in the cache.
// llamaSHA is the fixture's hash (its README).
const llamaSHA = "2cb9166a288728029b048e4b9cc0287a0beb0943ef5c8edf6c7d03301c31d7f1"

func TestChatReopenRebuildsCacheFromStore(t *testing.T) {
	b, db := testBackend(t)
	ref := llamaReference(t).Multiturn
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	model := inspect(t, path)

	c, errs := newTestChat(t, b, model)
	run(t, c, errs, c.NewConversation(greedy(8)))
	st := run(t, c, errs, c.Send(ref.Turn1.Messages[0].Content))
	if got := st.Messages[1].Text; got != ref.Turn1.GeneratedText {
		t.Fatalf("turn 1 %q, want %q", got, ref.Turn1.GeneratedText)
	}
	id := st.ConvID
	runs, err := db.ListRuns(context.Background(), store.RunFilter{Limit: 10})
	if err != nil || len(runs) != 1 || runs[0].Kind != "chat" || runs[0].Stats.NumGeneratedTokens != 8 || runs[0].Engine != "cpu" ||
		runs[0].Stats.NumPromptTokens != int64(len(ref.Turn1.InputIDs)) || runs[0].ModelName != fixtures.Llama3 || runs[0].ModelSHA256 != llamaSHA {
		t.Errorf("stored runs %+v, %v", runs, err)
	}
	c.Close()

	c2, errs2 := newTestChat(t, b, model)
	st = c2.State()
	if len(st.Conversations) != 1 || st.Conversations[0].ID != id || st.Conversations[0].Title != Title(ref.Turn1.Messages[0].Content) {
		t.Fatalf("conversations %+v", st.Conversations)
	}
	st = run(t, c2, errs2, c2.OpenConversation(id))
	if len(st.Messages) != 2 || st.Messages[1].Text != ref.Turn1.GeneratedText || st.Position != len(ref.Turn1.InputIDs)+8 {
		t.Fatalf("reopened: %d messages, position %d", len(st.Messages), st.Position)
	}
	if st.Messages[1].Stats == nil || st.Messages[1].Stats.NumGeneratedTokens != 8 {
		t.Errorf("stats not restored: %+v", st.Messages[1].Stats)
	}
	if st.Settings.MaxNewTokens != 8 || st.Settings.StorageDType != "fp32" {
		t.Errorf("settings not restored: %+v", st.Settings)
	}
	st = run(t, c2, errs2, c2.Send(ref.Turn2.Messages[2].Content))
	if got := st.Messages[3].Text; got != keptTurn2(t) {
		t.Errorf("turn 2 after reopening %q, want %q", got, keptTurn2(t))
	}

	// Undo is stored as a branch switch: reopening shows the shorter path.
	run(t, c2, errs2, c2.UndoTurn())
	c2.Close()
	c3, errs3 := newTestChat(t, b, model)
	st = run(t, c3, errs3, c3.OpenConversation(id))
	if len(st.Messages) != 2 {
		t.Errorf("after undo and reopen: %d messages, want 2", len(st.Messages))
	}
}

func TestChatApplySettingsKeepsHistory(t *testing.T) {
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(greedy(4)))
	st := run(t, c, errs, c.Send("Hello"))
	pos := st.Position

	s := greedy(4)
	s.Capacity = 64
	st = run(t, c, errs, c.ApplySettings(s))
	if st.Capacity != 64 || st.Position != pos || len(st.Messages) != 2 {
		t.Errorf("after apply: capacity %d position %d (want %d) messages %d", st.Capacity, st.Position, pos, len(st.Messages))
	}

	// A config the model rejects: the error says so, the session stays.
	bad := greedy(4)
	bad.Windows = "x"
	if err := c.ApplySettings(bad); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), `windows "x"`) || !strings.Contains((*errs)[0].Error(), "settings sheet") {
		t.Errorf("errors %v", *errs)
	}
	if st := c.State(); !st.Loaded || st.Capacity != 64 || st.Err == "" {
		t.Errorf("after a rejected config: loaded %v capacity %d err %q", st.Loaded, st.Capacity, st.Err)
	}
}

func TestChatRefusesWhatCannotRun(t *testing.T) {
	b, _ := testBackend(t)
	// no tokenizer next to the model
	noTok := inspect(t, modelCopy(t, fixtures.Llama3, false))
	c, _ := newTestChat(t, b, noTok)
	err := c.NewConversation(greedy(4))
	if err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("no tokenizer: %v", err)
	}
	// no model at all
	c2 := NewChat(b.Opener, b.Chats, "cpu")
	if err := c2.NewConversation(greedy(4)); err == nil || !strings.Contains(err.Error(), "Models tab") {
		t.Errorf("no model: %v", err)
	}
	if err := c2.Send("hi"); err == nil || !strings.Contains(err.Error(), "New conversation") {
		t.Errorf("send without a conversation: %v", err)
	}
	// the native engine is not available here: a typed error, and the
	// chat's hint says what to do
	m := inspect(t, modelCopy(t, fixtures.Llama3, true))
	s := Settings{Engine: "metal", MaxNewTokens: 1, InitialCapacity: -1}
	_, err = b.Opener.Open(context.Background(), m, s, nil, nil)
	if !errors.Is(err, engine.ErrNotAvailable) || !strings.Contains(loadError(m, s, err).Error(), "choose the cpu engine") {
		t.Errorf("metal: %v", err)
	}
}

func TestChatStopKeepsPartialReply(t *testing.T) {
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(greedy(90)))
	stopped := make(chan struct{})
	var once sync.Once
	c.OnChange = func() {
		if c.State().Streaming != "" {
			once.Do(func() { c.Stop(); close(stopped) })
		}
	}
	if err := c.Send("Tell me a long story"); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	<-stopped
	if len(*errs) != 0 {
		t.Fatalf("stop reported an error: %v", (*errs)[0])
	}
	st := c.State()
	if st.Busy || len(st.Messages) != 2 {
		t.Fatalf("after stop: busy %v, %d messages", st.Busy, len(st.Messages))
	}
	if n := st.Messages[1].Stats.NumGeneratedTokens; n >= 90 || n < 1 {
		t.Errorf("stopped reply has %d tokens", n)
	}
	if err := c.Send("next"); err != nil { // the conversation goes on
		t.Fatal(err)
	}
	c.Wait()
}

// On a sliding-window model the meter says when undo has to re-prefill,
// and undo still works.
func TestChatRingCacheUndoReprefills(t *testing.T) {
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Gemma3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(greedy(12)))
	st := run(t, c, errs, c.Send("Hello there, how are you today?"))
	// undoing the only turn empties the cache: always instant
	if len(st.Messages) != 2 || !st.UndoInstant {
		t.Fatalf("messages %d, instant %v", len(st.Messages), st.UndoInstant)
	}
	st = run(t, c, errs, c.Send("Tell me more about it, please?"))
	// the second turn is longer than the window of 8 (+ chunk 8 - 1 rows):
	// the ring layers no longer hold where it began
	if st.UndoInstant || !strings.Contains(st.Meter(), "undo re-prefills the history") {
		t.Errorf("meter %q", st.Meter())
	}
	st = run(t, c, errs, c.UndoTurn())
	held := 0
	for _, m := range st.Messages {
		held += len(m.IDs)
	}
	if len(st.Messages) != 2 || st.Position != held || st.Position == 0 {
		t.Errorf("after undo: %d messages at %d, tokens held %d", len(st.Messages), st.Position, held)
	}
	// and the conversation continues
	st = run(t, c, errs, c.Send("Again?"))
	if len(st.Messages) != 4 {
		t.Errorf("after undo and send: %d messages", len(st.Messages))
	}
}

// A prompt longer than the prefill chunk reports its progress chunk by
// chunk.
func TestChatReportsPrefillProgress(t *testing.T) {
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	var mu sync.Mutex
	var seen []Progress
	c.OnChange = func() {
		st := c.State()
		mu.Lock()
		if st.Busy && st.Progress.Total > 0 {
			seen = append(seen, st.Progress)
		}
		mu.Unlock()
	}
	run(t, c, errs, c.NewConversation(greedy(2)))
	mu.Lock()
	loading := len(seen) > 0 && seen[0].Stage == "loading"
	seen = nil
	mu.Unlock()
	if !loading {
		t.Error("no loading progress")
	}
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 8) // ~80 tokens: 3 chunks of 32
	run(t, c, errs, c.Send(long))
	mu.Lock()
	defer mu.Unlock()
	var prefill []Progress
	for _, p := range seen {
		if p.Stage == "prefill" {
			prefill = append(prefill, p)
		}
	}
	if len(prefill) < 3 || prefill[len(prefill)-1].Done != prefill[len(prefill)-1].Total || prefill[0].Total < 3 {
		t.Errorf("prefill progress %+v", prefill)
	}
}

// Send with no conversation open starts one with the chosen settings.
func TestChatSendStartsConversation(t *testing.T) {
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.ApplySettings(greedy(3)))
	st := run(t, c, errs, c.Send("Hello"))
	if !st.Loaded || st.ConvID == 0 || len(st.Messages) != 2 || len(st.Messages[1].IDs) != 3 || len(st.Conversations) != 1 {
		t.Errorf("loaded %v conv %d messages %d conversations %d", st.Loaded, st.ConvID, len(st.Messages), len(st.Conversations))
	}
}

// panicOpener stands for an engine with a bug.
type panicOpener struct{}

func (panicOpener) Open(context.Context, *ModelInfo, Settings, []Message, func(Progress)) (Session, error) {
	panic("index out of range [7] with length 3")
}

// A panic below the chat becomes an error message, not a crash.
func TestChatSurvivesEnginePanic(t *testing.T) {
	m := inspect(t, modelCopy(t, fixtures.Llama3, true))
	c := NewChat(panicOpener{}, nil, "cpu")
	var got error
	c.OnError = func(err error) { got = err }
	if err := c.SetModel(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if err := c.NewConversation(greedy(2)); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if got == nil || !strings.Contains(got.Error(), "internal error while loading model") || !strings.Contains(got.Error(), "start a new one") {
		t.Errorf("error %v", got)
	}
	if st := c.State(); st.Busy || st.Loaded {
		t.Errorf("busy %v loaded %v", st.Busy, st.Loaded)
	}
}
