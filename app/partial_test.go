package app

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"etchat/inference"
	"etchat/internal/fixtures"
)

// crashStore is the real chat store until crashAfter partial transcripts
// have been saved; after that every write is lost, as when etchat is
// killed mid-reply.
type crashStore struct {
	ChatStore
	crashAfter int // 0: never

	mu      sync.Mutex
	partial [][]Message // the partial transcripts saved
	crashed bool
}

func (s *crashStore) SaveTranscript(ctx context.Context, id int64, at Revision, discard bool, msgs []Message) (Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return at, nil
	}
	rev, err := s.ChatStore.SaveTranscript(ctx, id, at, discard, msgs)
	if err != nil {
		return rev, err
	}
	if len(msgs) > 0 && IsPartial(msgs[len(msgs)-1]) {
		s.partial = append(s.partial, msgs)
		s.crashed = len(s.partial) == s.crashAfter
	}
	return rev, nil
}

func (s *crashStore) RecordRun(ctx context.Context, id int64, m *ModelInfo, engine string, set Settings, r inference.Stats) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return nil
	}
	return s.ChatStore.RecordRun(ctx, id, m, engine, set, r)
}

func sumTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.IDs)
	}
	return n
}

// A reply is saved while it streams; after a crash the conversation
// reopens with the reply so far, marked incomplete, its tokens those the
// cache held, and goes on exactly: regenerating it gives the reference
// reply and the reference's second turn.
func TestChatPartialReplySurvivesCrash(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	ref := llamaReference(t).Multiturn
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(ctx, path)
	model := inspect(t, path)

	cs := &crashStore{ChatStore: b.Chats, crashAfter: 3}
	crashing := b
	crashing.Chats = cs
	c, errs := newTestChat(t, crashing, model)
	c.partialEvery = 0 // every token
	run(t, c, errs, c.NewConversation(greedy(8)))
	st := run(t, c, errs, c.Send(ref.Turn1.Messages[0].Content))
	if st.Messages[1].Text != ref.Turn1.GeneratedText {
		t.Fatalf("turn 1 %q", st.Messages[1].Text)
	}
	id := st.ConvID
	c.Close() // the in-memory reply completed; the database saw only the first three saves

	// Each save held the turn's prompt and the reply so far, as the cache did.
	for i, msgs := range cs.partial {
		if len(msgs) != 2 || !slices.Equal(msgs[0].IDs, ref.Turn1.InputIDs) || !IsPartial(msgs[1]) ||
			len(msgs[1].IDs) < i+1 || !slices.Equal(msgs[1].IDs, ref.Turn1.GeneratedIDs[:len(msgs[1].IDs)]) {
			t.Fatalf("partial save %d: %+v", i, msgs)
		}
	}
	saved := cs.partial[2][1]
	if len(saved.IDs) >= len(ref.Turn1.GeneratedIDs) || !strings.HasPrefix(ref.Turn1.GeneratedText, saved.Text) || saved.Text == "" {
		t.Fatalf("the crash kept %d tokens %q", len(saved.IDs), saved.Text)
	}

	// Reopened: the partial reply, marked, with the cache rebuilt from it.
	c2, errs2 := newTestChat(t, b, model)
	st = run(t, c2, errs2, c2.OpenConversation(id))
	if len(st.Messages) != 2 || !IsPartial(st.Messages[1]) || st.Messages[1].Text != saved.Text ||
		!slices.Equal(st.Messages[1].IDs, saved.IDs) || st.Position != len(ref.Turn1.InputIDs)+len(saved.IDs) {
		t.Fatalf("reopened: %+v, position %d", st.Messages, st.Position)
	}
	if MessageNote(st.Messages[1]) != IncompleteNote() || MessageNote(st.Messages[0]) != "" {
		t.Errorf("notes %q %q", MessageNote(st.Messages[1]), MessageNote(st.Messages[0]))
	}
	// Regenerating replaces it with the whole reply (greedy: the reference).
	st = run(t, c2, errs2, c2.Regenerate())
	if len(st.Messages) != 2 || IsPartial(st.Messages[1]) || st.Messages[1].Text != ref.Turn1.GeneratedText {
		t.Fatalf("regenerated: %+v", st.Messages)
	}
	st = run(t, c2, errs2, c2.Send(ref.Turn2.Messages[2].Content))
	if got := st.Messages[3].Text; got != keptTurn2(t) {
		t.Errorf("turn 2 %q, want %q", got, keptTurn2(t))
	}
	_, _, stored, err := b.Chats.LoadConversation(ctx, id)
	if err != nil || len(stored) != 4 || IsPartial(stored[1]) || stored[1].Text != ref.Turn1.GeneratedText {
		t.Errorf("stored after regenerating: %+v, %v", stored, err)
	}
}

// Going on after a partial reply keeps it (incomplete) and the cache in
// step with the stored tokens.
func TestChatContinuesAfterPartialReply(t *testing.T) {
	ctx := context.Background()
	b, db := testBackend(t)
	ref := llamaReference(t).Multiturn
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(ctx, path)
	model := inspect(t, path)
	cs := &crashStore{ChatStore: b.Chats, crashAfter: 2}
	crashing := b
	crashing.Chats = cs
	c, errs := newTestChat(t, crashing, model)
	c.partialEvery = 0
	run(t, c, errs, c.NewConversation(greedy(8)))
	id := run(t, c, errs, c.Send(ref.Turn1.Messages[0].Content)).ConvID
	c.Close()

	c2, errs2 := newTestChat(t, b, model)
	run(t, c2, errs2, c2.OpenConversation(id))
	st := run(t, c2, errs2, c2.Send("Go on."))
	if len(st.Messages) != 4 || !IsPartial(st.Messages[1]) || IsPartial(st.Messages[3]) || st.Messages[3].Text == "" ||
		sumTokens(st.Messages) != st.Position {
		t.Fatalf("after going on: %d messages, position %d, tokens %d", len(st.Messages), st.Position, sumTokens(st.Messages))
	}
	c2.Close()
	c3, errs3 := newTestChat(t, b, model)
	st3 := run(t, c3, errs3, c3.OpenConversation(id))
	if len(st3.Messages) != 4 || !IsPartial(st3.Messages[1]) || st3.Position != st.Position || st3.Messages[3].Text != st.Messages[3].Text {
		t.Errorf("reopened again: %+v", st3.Messages)
	}
	if all, err := db.Messages(ctx, id); err != nil || len(all) != 4 {
		t.Errorf("%d messages stored (no stray branches), %v", len(all), err)
	}
}

// While streaming the reply is saved at its first token and then at most
// every PartialSaveInterval; the finished reply replaces it in place.
func TestChatSavesStreamingReplyEveryHalfSecond(t *testing.T) {
	ctx := context.Background()
	b, db := testBackend(t)
	ref := llamaReference(t).Multiturn
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(ctx, path)
	cs := &crashStore{ChatStore: b.Chats}
	withSaves := b
	withSaves.Chats = cs
	c, errs := newTestChat(t, withSaves, inspect(t, path))
	// A clock that moves 100 ms per streamed piece: a save every fifth.
	var ticks int
	t0 := time.Unix(1_800_000_000, 0)
	c.now = func() time.Time { ticks++; return t0.Add(time.Duration(ticks) * 100 * time.Millisecond) }
	run(t, c, errs, c.NewConversation(greedy(24)))
	st := run(t, c, errs, c.Send(ref.Turn1.Messages[0].Content))
	if c.partialEvery != 500*time.Millisecond {
		t.Fatalf("interval %v", c.partialEvery)
	}
	if want := (ticks-1)/5 + 1; len(cs.partial) != want || ticks < 10 {
		t.Errorf("%d partial saves over %d streamed pieces, want %d", len(cs.partial), ticks, want)
	}
	final := st.Messages[1].IDs
	prev := 0
	for i, msgs := range cs.partial {
		got := msgs[1].IDs
		if len(got) <= prev || len(got) > len(final) || !slices.Equal(got, final[:len(got)]) {
			t.Errorf("save %d: %d tokens after %d, not a prefix of the reply", i, len(got), prev)
		}
		prev = len(got)
	}
	_, _, stored, err := b.Chats.LoadConversation(ctx, st.ConvID)
	if err != nil || len(stored) != 2 || IsPartial(stored[1]) || stored[1].Text != st.Messages[1].Text ||
		!slices.Equal(stored[1].IDs, final) || stored[1].Stats == nil {
		t.Errorf("stored: %+v, %v", stored, err)
	}
	if all, err := db.Messages(ctx, st.ConvID); err != nil || len(all) != 2 {
		t.Errorf("%d messages stored, want 2 (the partial reply updated in place), %v", len(all), err)
	}
}
