package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// Issue 26 item 12: the conversation list is searched by title and by
// message text (in the store), spans every model with All models, and
// opening a conversation of another model switches to it, or says why it
// cannot.
func TestConversationSearchAcrossModels(t *testing.T) {
	ctx := context.Background()
	u, root := newTestUI(t)
	u.SelectTab(TabChat)
	v := u.chat
	llama := filepath.Join(root, fixtures.Llama3, "model.pte")
	gemma := filepath.Join(root, fixtures.Gemma3, "model.pte")
	chat := func(model string, texts ...string) int64 {
		t.Helper()
		e, _ := u.Library.Entry(model)
		if err := u.Chat.SetModel(ctx, e.Info); err != nil {
			t.Fatal(err)
		}
		if err := u.Chat.NewConversation(greedy(3)); err != nil {
			t.Fatal(err)
		}
		settle(u)
		for _, text := range texts {
			if err := u.Chat.Send(text); err != nil {
				t.Fatal(err)
			}
			settle(u)
		}
		return u.Chat.State().ConvID
	}
	gemmaID := chat(gemma, "Mountains", "How high is the peak?")
	lightID := chat(llama, "Hello", "Tell me about lighthouses")
	chat(llama, "Ships")
	settle(u)
	list := func() []ConversationSummary {
		t.Helper()
		settle(u)
		return v.convs
	}
	if got := list(); len(got) != 2 {
		t.Fatalf("llama3's list: %+v", got)
	}

	// Text that is in a message, not in the title: found, with the excerpt.
	v.search.SetText("LIGHTHOUSE")
	waitFor(t, func() bool { return len(u.Chat.State().Conversations) == 1 })
	got := list()
	if got[0].ID != lightID || got[0].Title != "Hello" || !strings.Contains(got[0].Snippet, "lighthouses") {
		t.Errorf("search by text: %+v", got)
	}
	if l := ListLabel(got[0], false); l != "Hello — Tell me about lighthouses"+ListStamp(got[0]) || ListStamp(got[0]) == "" {
		t.Errorf("row %q", l)
	}
	// Another model's conversation is not in this model's list …
	v.search.SetText("peak")
	waitFor(t, func() bool { return len(u.Chat.State().Conversations) == 0 })
	// … but is with All models, named with its model.
	v.allConvs.SetChecked(true)
	waitFor(t, func() bool { return len(u.Chat.State().Conversations) == 1 })
	got = list()
	if got[0].ID != gemmaID || ListLabel(got[0], true) != "Mountains · "+ModelName(gemma)+" — How high is the peak?"+ListStamp(got[0]) {
		t.Errorf("all models: %+v (row %q)", got, ListLabel(got[0], true))
	}
	v.search.SetText("")
	waitFor(t, func() bool { return len(u.Chat.State().Conversations) == 3 })
	if f := u.Chat.ListFilter(); !f.All || f.Query != "" {
		t.Errorf("filter %+v", f)
	}

	// Opening gemma3's conversation from llama3's chat switches the model.
	got = list()
	for i, c := range got {
		if c.ID == gemmaID {
			v.convList.Select(i)
		}
	}
	waitFor(t, func() bool {
		st := u.Chat.State()
		return st.ConvID == gemmaID && st.Loaded && !st.Busy
	})
	settle(u)
	st := u.Chat.State()
	if st.Model.Path != gemma || len(st.Messages) < 4 || v.model.Selected != ModelName(gemma) {
		t.Errorf("after opening gemma3's conversation: model %s (selector %q), %d messages", st.Model.Path, v.model.Selected, len(st.Messages))
	}
	if len(v.convs) != 3 {
		t.Errorf("the list spans all models still: %d rows", len(v.convs))
	}

	// What cannot be opened says why.
	sum := ConversationSummary{ID: gemmaID, Title: "Mountains", ModelName: "gemma3"}
	if err := u.Chat.OpenListed(ctx, sum, nil, ""); err == nil || !strings.Contains(err.Error(), "no longer in the library") {
		t.Errorf("a removed model: %v", err)
	}
	sum.ModelPath = "/elsewhere/model.pte"
	if err := u.Chat.OpenListed(ctx, sum, nil, ""); err == nil || !strings.Contains(err.Error(), "/elsewhere/model.pte") {
		t.Errorf("a model not in the library: %v", err)
	}
	e, _ := u.Library.Entry(llama)
	if err := u.Chat.OpenListed(ctx, sum, e.Info, "it has no tokenizer"); err == nil || !strings.Contains(err.Error(), "it has no tokenizer") {
		t.Errorf("a model that cannot chat: %v", err)
	}
	if u.Chat.State().Model.Path != gemma {
		t.Error("a refused open switched the model")
	}

	// A model removed from the library: its conversations are still listed
	// under All models, and opening one says what to do.
	if err := u.Library.Remove(ctx, llama); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.ReloadConversations(ctx); err != nil {
		t.Fatal(err)
	}
	var orphan *ConversationSummary
	for _, c := range u.Chat.State().Conversations {
		if c.ID == lightID {
			orphan = &c
		}
	}
	if orphan == nil || orphan.ModelPath != "" || orphan.ModelName == "" {
		t.Fatalf("the removed model's conversation: %+v", orphan)
	}
	if err := u.Chat.OpenListed(ctx, *orphan, nil, ""); err == nil || !strings.Contains(err.Error(), orphan.ModelName) {
		t.Errorf("opening it: %v", err)
	}
}
