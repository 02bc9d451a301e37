package app

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
	"etchat/store"
)

// twoWindows are two windows on one database file, each through its own
// store handle, as two etchat processes would be; each looks at the
// files every 20 ms.
func twoWindows(t *testing.T) (u1, u2 *UI, path string) {
	t.Helper()
	ctx := context.Background()
	a := test.NewTempApp(t)
	b1, _ := testBackend(t)
	db2, err := store.Open(ctx, b1.DBPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	sa2 := NewStoreAdapter(db2)
	b2 := Backend{Inspector: NewInspector(), Library: sa2, Chats: sa2, Opener: hermeticOpener(), DBPath: b1.DBPath, DB: db2}
	queued := func(u *UI) *UI {
		q := &uiQueue{}
		u.do = q.post
		queues.Store(u, q)
		t.Cleanup(u.Close)
		return u
	}
	u1, u2 = queued(NewUI(a, b1)), queued(NewUI(a, b2))
	path = modelCopy(t, fixtures.Llama3, true)
	if res := u1.Library.Add(ctx, path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	for _, u := range []*UI{u1, u2} {
		u.watchEvery = 20 * time.Millisecond
		done := make(chan struct{})
		u.Start(nil, done)
		<-done
	}
	return u1, u2, path
}

func msgTexts(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role+": "+m.Text)
	}
	return out
}

// Issue 26 item 7: when another process writes the conversation open in
// this window, the transcript (and its cache) follow it; while a reply
// streams here the re-read waits for it; a conversation deleted there is
// closed here; the benchmark history shows the other's runs.
func TestOtherWindowsWritesShowUp(t *testing.T) {
	ctx := context.Background()
	u1, u2, path := twoWindows(t)
	m := inspect(t, path)
	for _, u := range []*UI{u1, u2} {
		if err := u.Chat.SetModel(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := u1.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u1)
	if err := u1.Chat.Send("Hello"); err != nil {
		t.Fatal(err)
	}
	settle(u1)
	id := u1.Chat.State().ConvID
	waitFor(t, func() bool { return len(u2.Chat.State().Conversations) == 1 })
	if err := u2.Chat.OpenConversation(id); err != nil {
		t.Fatal(err)
	}
	settle(u2)
	if got, want := msgTexts(u2.Chat.State().Messages), msgTexts(u1.Chat.State().Messages); !slices.Equal(got, want) {
		t.Fatalf("opened in the second window: %q, want %q", got, want)
	}

	// The window's own writes start nothing: what is stored is what it shows.
	if err := u2.Chat.Send("From here"); err != nil {
		t.Fatal(err)
	}
	settle(u2)
	if pending, err := u2.Chat.ReloadOpen(ctx); pending || err != nil || u2.Chat.State().Busy {
		t.Errorf("re-reading its own write: pending %v, %v, busy %v", pending, err, u2.Chat.State().Busy)
	}
	waitFor(t, func() bool { // the first window follows
		return slices.Equal(msgTexts(u1.Chat.State().Messages), msgTexts(u2.Chat.State().Messages))
	})

	// The first window answers again: the second shows it, its meter too.
	if err := u1.Chat.Send("And then?"); err != nil {
		t.Fatal(err)
	}
	settle(u1)
	want := u1.Chat.State()
	waitFor(t, func() bool {
		st := u2.Chat.State()
		return !st.Busy && slices.Equal(msgTexts(st.Messages), msgTexts(want.Messages))
	})
	settle(u2)
	st := u2.Chat.State()
	if st.Position != want.Position || st.Position != sumTokens(st.Messages) {
		t.Errorf("meter %d here, %d there, transcript %d tokens", st.Position, want.Position, sumTokens(st.Messages))
	}
	if !slices.ContainsFunc(transcriptSegs(u2.chat), func(seg widget.RichTextSegment) bool { return seg.Textual() == "And then?" }) {
		t.Error("the second window's transcript does not show the new turn")
	}

	// A regeneration there is a branch here.
	if err := u1.Chat.Regenerate(); err != nil {
		t.Fatal(err)
	}
	settle(u1)
	last := len(u1.Chat.State().Messages) - 1
	want = u1.Chat.State()
	waitFor(t, func() bool {
		st := u2.Chat.State()
		return !st.Busy && st.BranchOf(last).N == 2 && slices.Equal(msgTexts(st.Messages), msgTexts(want.Messages))
	})

	// While this window is busy the re-read waits, then happens.
	u2.Chat.mu.Lock()
	u2.Chat.st.Busy = true // as while a reply streams
	u2.Chat.mu.Unlock()
	before := msgTexts(u2.Chat.State().Messages)
	if err := u1.Chat.UndoTurn(); err != nil {
		t.Fatal(err)
	}
	settle(u1)
	if pending, err := u2.Chat.ReloadOpen(ctx); !pending || err != nil {
		t.Errorf("while busy: pending %v, %v", pending, err)
	}
	time.Sleep(100 * time.Millisecond) // the watcher looks five times meanwhile
	if !slices.Equal(msgTexts(u2.Chat.State().Messages), before) {
		t.Error("the transcript changed under a streaming reply")
	}
	u2.Chat.mu.Lock()
	u2.Chat.st.Busy = false
	u2.Chat.mu.Unlock()
	want = u1.Chat.State()
	waitFor(t, func() bool {
		st := u2.Chat.State()
		return !st.Busy && slices.Equal(msgTexts(st.Messages), msgTexts(want.Messages))
	})

	// The benchmark history shows a run the other process stored.
	if _, err := u1.Backend.DB.InsertRun(ctx, store.Run{Kind: store.RunAPI, Engine: "cpu", ModelName: "from-the-other-window"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return hasModel(u2, "from-the-other-window") })

	// Deleted there: closed here, and said.
	if err := u1.Chat.DeleteConversation(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return u2.Chat.State().ConvID == 0 })
	settle(u2)
	if st := u2.Chat.State(); st.Loaded || !strings.Contains(st.Err, "deleted in another etchat window") || len(st.Conversations) != 0 {
		t.Errorf("after the other window deleted it: loaded %v, %q, %d listed", st.Loaded, st.Err, len(st.Conversations))
	}
}

// hasModel reports whether u's benchmark history has a row of model.
func hasModel(u *UI, model string) bool {
	rows, _ := u.BenchVM.History()
	for _, r := range rows {
		if r.Model == model {
			return true
		}
	}
	return false
}

// watchDB calls again, without a new write, while the last call could not
// finish (a reply was streaming), and stops once a call finishes. One write
// may change the files over several looks (the log grows, then the file's
// time), so the test waits for a retry without new files rather than
// counting calls.
func TestWatchDBRetriesWhatWaited(t *testing.T) {
	_, path := testDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var calls, retriedWithoutFiles, callsAfterDone atomic.Int32
	var done atomic.Bool // the pending work could finish
	go watchDB(ctx, path, 5*time.Millisecond, func(files bool) bool {
		calls.Add(1)
		if !files {
			retriedWithoutFiles.Add(1)
		}
		if done.Load() {
			callsAfterDone.Add(1)
			return false
		}
		return true
	})
	time.Sleep(50 * time.Millisecond)
	if calls.Load() != 0 {
		t.Fatalf("%d calls without a write", calls.Load())
	}
	if _, err := db.UpsertModel(ctx, store.Model{Path: "/m.pte"}); err != nil {
		t.Fatal(err)
	}
	// Pending: looked at again and again, without new files.
	waitFor(t, func() bool { return retriedWithoutFiles.Load() >= 2 })
	done.Store(true)
	waitFor(t, func() bool { return callsAfterDone.Load() >= 1 })
	time.Sleep(50 * time.Millisecond)
	if n := callsAfterDone.Load(); n != 1 {
		t.Errorf("%d calls after one that finished, without a write; want 1", n)
	}
}
