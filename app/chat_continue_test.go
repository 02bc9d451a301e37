package app

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"etchat/internal/fixtures"
)

// Issue 40 item 1: Continue on a reply cut at max tokens appends to the
// same message, streaming in its place; greedy, it is the reply one
// generation with the larger budget gives (PyTorch's reference), the store
// keeps one reply (no branch), and a reopened conversation continues
// exactly too.
func TestContinueAppendsToTheCutReply(t *testing.T) {
	b, _ := testBackend(t)
	ref := llamaReference(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(context.Background(), path)
	model := inspect(t, path)
	c, errs := newTestChat(t, b, model)
	run(t, c, errs, c.NewConversation(greedy(4)))
	st := run(t, c, errs, c.Send(ref.Multiturn.Turn1.Messages[0].Content))
	cut := st.Messages[len(st.Messages)-1]
	if len(cut.Generated) != 4 || cut.StopReason != "length" || !st.CanContinue() {
		t.Fatalf("cut reply %v (%s), can continue %v", cut.Generated, cut.StopReason, st.CanContinue())
	}

	var mu sync.Mutex
	var during []ChatState
	c.OnChange = func() {
		if s := c.State(); s.Busy && s.Streaming != "" {
			mu.Lock()
			during = append(during, s)
			mu.Unlock()
		}
	}
	st = run(t, c, errs, c.Continue())
	c.OnChange = nil
	if len(st.Messages) != 2 {
		t.Fatalf("%d messages after Continue, want the same 2", len(st.Messages))
	}
	got := st.Messages[1]
	if !slices.Equal(got.Generated, ref.Multiturn.Turn1.GeneratedIDs) || got.Text != ref.Multiturn.Turn1.GeneratedText ||
		got.Stats == nil || got.Stats.NumGeneratedTokens != 8 {
		t.Errorf("continued reply %v %q, want %v %q", got.Generated, got.Text, ref.Multiturn.Turn1.GeneratedIDs, ref.Multiturn.Turn1.GeneratedText)
	}
	if want := !st.Busy && st.Position == len(ref.Multiturn.Turn1.InputIDs)+8; !want || !st.CanContinue() {
		t.Errorf("after Continue: position %d, can continue %v (cut at max tokens again)", st.Position, st.CanContinue())
	}
	mu.Lock()
	if len(during) == 0 {
		t.Fatal("nothing streamed")
	}
	for _, s := range during {
		// The reply streams in its own place: the transcript holds the
		// messages before it, the live text starts with the cut reply.
		if len(s.Messages) != 1 || !strings.HasPrefix(s.Streaming, cut.Text) {
			t.Fatalf("while continuing: %d messages, streaming %q", len(s.Messages), s.Streaming)
		}
	}
	mu.Unlock()

	// The store grew the reply in place: no branch, the whole text.
	id := st.ConvID
	br, err := b.Chats.Branches(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range br {
		if x.N > 1 {
			t.Errorf("message %d has %d alternatives after Continue", i, x.N)
		}
	}
	_, _, stored, err := b.Chats.LoadConversation(context.Background(), id)
	if err != nil || len(stored) != 2 || stored[1].Text != got.Text {
		t.Fatalf("stored %d messages (%v)", len(stored), err)
	}

	// Reopened, the conversation continues as one uncut generation of 12.
	c.Close()
	c2, errs2 := newTestChat(t, b, model)
	if st := run(t, c2, errs2, c2.OpenConversation(id)); !st.CanContinue() {
		t.Fatalf("reopened: can continue %v (warming %v, stored %d)", st.CanContinue(), st.Warming, st.Stored)
	}
	st = run(t, c2, errs2, c2.Continue())
	c2.Close()
	c3, errs3 := newTestChat(t, b, model)
	run(t, c3, errs3, c3.NewConversation(greedy(12)))
	want := run(t, c3, errs3, c3.Send(ref.Multiturn.Turn1.Messages[0].Content)).Messages[1]
	if got := st.Messages[1]; !slices.Equal(got.Generated, want.Generated) || got.Text != want.Text {
		t.Errorf("reopened and continued: %v, uncut: %v", got.Generated, want.Generated)
	}
}

// Issue 40 item 1: while a reply streams, its stats line says the tokens
// so far and the decode rate, made again at most every LiveStatsEvery
// (a clock the test moves), and it is gone when the reply is done.
func TestLiveStatsWhileStreaming(t *testing.T) {
	b, _ := testBackend(t)
	ref := llamaReference(t)
	path := modelCopy(t, fixtures.Llama3, true)
	c, errs := newTestChat(t, b, inspect(t, path))
	var clock time.Time
	var mu sync.Mutex
	c.now = func() time.Time { // every reading 100 ms later
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(100 * time.Millisecond)
		return clock
	}
	var lines []string
	changes := 0
	c.OnChange = func() {
		if s := c.State(); s.Busy && s.Streaming != "" {
			mu.Lock()
			changes++
			if n := len(lines); n == 0 || lines[n-1] != s.LiveStats {
				lines = append(lines, s.LiveStats)
			}
			mu.Unlock()
		}
	}
	run(t, c, errs, c.NewConversation(greedy(24)))
	st := run(t, c, errs, c.Send(ref.Multiturn.Turn1.Messages[0].Content))
	mu.Lock()
	defer mu.Unlock()
	if st.LiveStats != "" {
		t.Errorf("live stats %q left after the reply", st.LiveStats)
	}
	if len(lines) < 3 || len(lines) >= changes {
		t.Fatalf("live stats %q over %d changes: want a few, fewer than the tokens", lines, changes)
	}
	first := regexp.MustCompile(`^(\d+) tokens so far$`)
	later := regexp.MustCompile(`^(\d+) tokens so far · (\d+\.\d) tok/s$`)
	if !first.MatchString(lines[0]) {
		t.Errorf("first line %q", lines[0])
	}
	prev := 0
	for _, l := range lines[1:] {
		m := later.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q", l)
		}
		n, _ := strconv.Atoi(m[1])
		rate, _ := strconv.ParseFloat(m[2], 64)
		// One clock reading per streamed piece (a token, or a few whose
		// text completes a character): at least 100 ms a token.
		if n <= prev || n > 24 || rate <= 0 || rate > 10 {
			t.Errorf("line %q after %d tokens", l, prev)
		}
		prev = n
	}
}
