package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

func tokens(n, seed int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((seed*131 + i*7919) % 151000)
	}
	return ids
}

// BenchmarkAppendMessage appends one message per op, each in its own
// committed (fsynced) transaction, as a chat does. Run with
// -benchtime=10000x for "append 10k messages".
func BenchmarkAppendMessage(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, filepath.Join(b.TempDir(), "etchat.db"))
	c := mustConv(b, db, Conversation{})
	parent := int64(0)
	pos := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := db.AddMessage(ctx, Message{ConversationID: c.ID, ParentID: parent, Role: []string{"user", "assistant"}[i%2],
			Text: "a sentence or two of text for this turn", TokenIDs: tokens(40, i), PosStart: pos, PosEnd: pos + 40})
		if err != nil {
			b.Fatal(err)
		}
		parent, pos = m.ID, pos+40
	}
}

// BenchmarkStreamUpdate saves a streaming reply once per op (the reply
// grows by one token each time).
func BenchmarkStreamUpdate(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, filepath.Join(b.TempDir(), "etchat.db"))
	c := mustConv(b, db, Conversation{})
	m := mustAdd(b, db, Message{ConversationID: c.ID, Role: "assistant", Partial: true})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := i%512 + 1
		m.TokenIDs, m.PosEnd, m.Text = tokens(n, 1), n, fmt.Sprint(n)
		if err := db.UpdateMessage(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadConversation1000 loads the current path of a 1,000-message
// conversation (40 tokens a message) and its whole tree.
func BenchmarkLoadConversation1000(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, filepath.Join(b.TempDir(), "etchat.db"))
	c := mustConv(b, db, Conversation{})
	err := db.write(ctx, "seed", func(tx *sql.Tx) error {
		parent := int64(0)
		for i := 0; i < 1000; i++ {
			id, err := insertMessage(ctx, tx, Message{ConversationID: c.ID, ParentID: parent, Role: "user", Text: "some text of a turn",
				TokenIDs: tokens(40, i), PosStart: 40 * i, PosEnd: 40*i + 40}, nil, 1)
			if err != nil {
				return err
			}
			parent = id
		}
		_, err := tx.Exec("UPDATE conversations SET current_leaf_id = ? WHERE id = ?", parent, c.ID)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("path", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, p, err := db.CurrentPath(ctx, c.ID)
			if err != nil || len(p) != 1000 {
				b.Fatal(len(p), err)
			}
		}
	})
	b.Run("tree", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ms, err := db.Messages(ctx, c.ID)
			if err != nil || len(ms) != 1000 {
				b.Fatal(len(ms), err)
			}
		}
	})
}

// BenchmarkListRunsByModel lists the 10,000 runs of one model out of 20,000.
func BenchmarkListRunsByModel(b *testing.B) {
	ctx := context.Background()
	db := openTest(b, filepath.Join(b.TempDir(), "etchat.db"))
	st := Stats{InferenceStartMs: 1, PromptEvalEndMs: 50, FirstTokenMs: 60, InferenceEndMs: 900, NumPromptTokens: 512, NumGeneratedTokens: 128}
	err := db.write(ctx, "seed", func(tx *sql.Tx) error {
		for i := 0; i < 20000; i++ {
			sha := "target"
			if i%2 == 1 {
				sha = fmt.Sprintf("other%d", i%7)
			}
			r := Run{Kind: "bench", ModelSHA256: sha, ModelName: "M", Stats: st, Bench: BenchTest{NPrompt: 512, Repetitions: 5}}
			r.Started = db.now()
			if _, err := insertRun(ctx, tx, r, `{"threads":2}`, `{"cpu":"x"}`, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rs, err := db.ListRuns(ctx, RunFilter{ModelSHA: "target"})
		if err != nil || len(rs) != 10000 {
			b.Fatal(len(rs), err)
		}
	}
}
