package inference

import (
	"slices"
	"testing"

	"etchat/inference/kvcache"
)

// A new system prompt mid-conversation: the cache is emptied, the messages
// stay (as text, replies with their generated ids), and the next turn
// answers exactly as a conversation that had the new prompt from the start
// with the same history, read in one prefill.
func TestConversationSetSystemRereadsTheHistory(t *testing.T) {
	tok := newByteTok()
	for _, cfg := range []*kvcache.Config{flatConfig(400, 8), ringConfig(400, 4, 6)} {
		e := &zeroEngine{vocab: tok.vocab(), boost: func(h uint64, n int) int { return 'a' + int(h%26) }}
		opts := chatOpts(tok, cfg, 6)
		opts.System = "be brief"
		s := openZero(e, cfg)
		c, _ := NewConversation(s, opts)
		for _, q := range []string{"hello", "more"} {
			if _, err := c.Send(bg, q, nil); err != nil {
				t.Fatal(err)
			}
		}
		before := c.Messages()
		if err := c.SetSystem("be kind"); err != nil {
			t.Fatal(err)
		}
		after := c.Messages()
		if c.Len() != 0 || s.Len() != 0 || c.System() != "be kind" || len(after) != len(before) || after[3].Text != before[3].Text ||
			!slices.Equal(after[4].Generated, before[4].Generated) {
			t.Fatalf("after SetSystem: cache %d/%d, system %q, %d messages", c.Len(), s.Len(), c.System(), len(after))
		}
		r, err := c.Send(bg, "again", nil)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, c, s)
		msgs := c.Messages()
		want := fresh(t, e, opts, keptMsgs(msgs[:len(msgs)-1]))
		if !slices.Equal(r.GeneratedIDs, want.GeneratedIDs) || r.Reused != 0 {
			t.Errorf("after the new prompt: %v (reused %d), fresh %v", r.GeneratedIDs, r.Reused, want.GeneratedIDs)
		}
		// Removed: no system message, the rest kept.
		if err := c.SetSystem(""); err != nil || c.System() != "" || len(c.Messages()) != len(msgs)-1 {
			t.Errorf("removing the prompt: %v, %d messages", err, len(c.Messages()))
		}
	}
}
