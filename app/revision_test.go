package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"etchat/internal/fixtures"
	"etchat/internal/runlog"
	"etchat/store"
)

// Issue 36 item 1: two windows (two view-models, each with its own
// connection to one database file, the real CPU engine) send into one
// conversation at the same moment, three times over. Each time exactly one
// turn is stored, once, complete; the other window's send is refused (a
// StaleTurnError in its red line), its text goes back into its box and it
// shows the winner's turn — no duplicate, no one-token "incomplete" reply,
// and, once each has re-read the database as its watch does, each
// window's transcript is the stored current path, its meter what its
// cache holds.
func TestTwoWindowsSendingAtOnceStoreOneTurnOnce(t *testing.T) {
	ctx := context.Background()
	b1, db := testBackend(t)
	db2, err := store.Open(ctx, b1.DBPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	b2 := b1
	b2.Chats = NewStoreAdapter(db2)
	path := modelCopy(t, fixtures.Llama3, true)
	if res := NewLibrary(b1.Inspector, b1.Library).Add(ctx, path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	m := inspect(t, path)
	c1, errs1 := newTestChat(t, b1, m)
	c2, errs2 := newTestChat(t, b2, m)
	run(t, c1, errs1, c1.NewConversation(greedy(8)))
	run(t, c1, errs1, c1.Send("Hello"))
	id := c1.State().ConvID
	run(t, c2, errs2, c2.OpenConversation(id))

	for round := range 3 {
		*errs1, *errs2 = nil, nil
		texts := [2]string{fmt.Sprintf("one %d", round), fmt.Sprintf("two %d", round)}
		before, _ := db.GetConversation(ctx, id)
		start := make(chan struct{})
		done := make(chan error, 2)
		for i, c := range []*Chat{c1, c2} {
			go func() { <-start; done <- c.Send(texts[i]) }()
		}
		close(start)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		c1.Wait()
		c2.Wait()
		// As each window's watch does when the database changed: the
		// refused window may have read the other's reply while it streamed.
		for _, c := range []*Chat{c1, c2} {
			if pending, err := c.ReloadOpen(ctx); pending || err != nil {
				t.Fatalf("round %d: re-reading: pending %v, %v", round, pending, err)
			}
			c.Wait()
		}

		after, stored, err := db.CurrentPath(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.Messages != before.Messages+2 {
			t.Errorf("round %d: %d messages stored, want %d (one turn)", round, after.Messages-before.Messages, 2)
		}
		all, err := db.Messages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, msg := range all {
			key := fmt.Sprintf("%d/%s/%s", msg.ParentID, msg.Role, msg.Text)
			if seen[key] && msg.Role == "user" {
				t.Errorf("round %d: %q stored twice under message %d", round, msg.Text, msg.ParentID)
			}
			seen[key] = true
			if msg.Partial {
				t.Errorf("round %d: message %d (%q) is left incomplete", round, msg.ID, msg.Text)
			}
		}
		won := -1
		for i, errs := range []*[]error{errs1, errs2} {
			c := []*Chat{c1, c2}[i]
			st := c.State()
			var stale *StaleTurnError
			switch {
			case len(*errs) == 0:
				if won >= 0 {
					t.Errorf("round %d: both windows' turns were stored", round)
				}
				won = i
			case len(*errs) == 1 && errors.As((*errs)[0], &stale) && stale.Text == texts[i]:
				if st.Restore != texts[i] || st.Err != stale.Error() {
					t.Errorf("round %d: window %d box %q, red line %q", round, i+1, st.Restore, st.Err)
				}
			default:
				t.Errorf("round %d: window %d reported %v", round, i+1, *errs)
			}
			if got, want := msgTexts(st.Messages), msgTexts(runlog.Messages(stored)); !slices.Equal(got, want) {
				t.Errorf("round %d: window %d shows %q, the store %q", round, i+1, got, want)
			}
			if st.Position != sumTokens(st.Messages) {
				t.Errorf("round %d: window %d meter %d, transcript %d tokens", round, i+1, st.Position, sumTokens(st.Messages))
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither turn was stored", round)
		}
		if last := stored[len(stored)-2]; last.Text != texts[won] {
			t.Errorf("round %d: the stored turn is %q, want the winner's %q", round, last.Text, texts[won])
		}
	}
}
