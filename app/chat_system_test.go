package app

import (
	"context"
	"path/filepath"
	"testing"

	"etchat/inference"
	"etchat/inference/kvcache"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
)

// Issue 40 item 2: the system prompt edited above the transcript. The
// cache is emptied, the messages stay, and the next message reads the
// whole history again under the new prompt: its reply is the one a
// conversation that had the new prompt from the start gives. The old
// prompt with its conversation stays as a branch at the system message; on
// a conversation with no turn yet the prompt is just replaced.
func TestSystemPromptEditRereadsTheHistory(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	ref := llamaReference(t)
	mt := ref.Multiturn
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(ctx, path)
	model := inspect(t, path)
	c, errs := newTestChat(t, b, model)
	s := greedy(8)
	s.SystemPrompt = "Be brief."
	run(t, c, errs, c.NewConversation(s))
	before := run(t, c, errs, c.Send(mt.Turn1.Messages[0].Content))
	if before.System() != "Be brief." || before.SystemLine() != "“Be brief.”" {
		t.Fatalf("system %q, line %q", before.System(), before.SystemLine())
	}

	st := run(t, c, errs, c.SetSystemPrompt("Answer in French.\nAlways."))
	if st.System() != "Answer in French.\nAlways." || st.SystemLine() != "“Answer in French.…”" || st.Settings.SystemPrompt != st.System() {
		t.Errorf("after the edit: system %q, line %q, settings %q", st.System(), st.SystemLine(), st.Settings.SystemPrompt)
	}
	if len(st.Messages) != 3 || st.Messages[1].Text != before.Messages[1].Text || st.Messages[2].Text != before.Messages[2].Text ||
		st.Position != 0 || st.Stored == 0 || st.Held() != st.Stored {
		t.Fatalf("after the edit: %d messages, position %d, stored %d", len(st.Messages), st.Position, st.Stored)
	}

	st = run(t, c, errs, c.Send(mt.Turn2.Messages[2].Content))
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	m, err := inference.Load(ctx, filepath.Join(dir, "model.pte"), inference.LoadOptions{Engine: "cpu", Numerics: "exact",
		Policy: kvcache.Policy{StorageDType: "fp32", InitialCapacity: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	history := []inference.Message{{Role: "system", Text: "Answer in French.\nAlways."}, {Role: "user", Text: mt.Turn1.Messages[0].Content},
		{Role: "assistant", Text: before.Messages[2].Text, Generated: before.Messages[2].Generated}}
	conv, err := m.ResumeConversation(ctx, history, m.Generation(8, sampler.Sampling{}))
	if err != nil {
		t.Fatal(err)
	}
	want, err := conv.Send(ctx, mt.Turn2.Messages[2].Content, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Messages[4]; got.Text != want.Message.Text || st.Position != conv.Len() {
		t.Errorf("turn 2 under the new prompt %q (cache %d), from the start %q (%d)", got.Text, st.Position, want.Message.Text, conv.Len())
	}

	// The old prompt is a branch at the system message.
	if br := st.BranchOf(0); br.N != 2 || br.K != 2 {
		t.Fatalf("system message branch %+v, want 2 of 2", br)
	}
	st = run(t, c, errs, c.SwitchBranch(0, -1))
	if st.System() != "Be brief." || len(st.Messages) != 3 || st.Messages[2].Text != before.Messages[2].Text {
		t.Errorf("switched back: system %q, %d messages", st.System(), len(st.Messages))
	}

	// No turn yet: replaced, no branch.
	run(t, c, errs, c.NewConversation(s))
	st = run(t, c, errs, c.SetSystemPrompt(""))
	if st.System() != "" || st.BranchOf(0).N > 1 || len(st.Messages) != 0 {
		t.Errorf("empty conversation: system %q, branch %+v, %d messages", st.System(), st.BranchOf(0), len(st.Messages))
	}
}
