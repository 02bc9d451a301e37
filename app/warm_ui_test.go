package app

import (
	"strings"
	"testing"
)

// While a reopened history is read into the cache the status line shows
// it with a bar that follows the chunks, the meter says so, and the undo
// actions stay available (a warm is not an action); the line goes when it
// ends.
func TestChatViewShowsTheWarm(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	v := u.chat
	st := ChatState{Model: &ModelInfo{Path: "/m/model.pte"}, Loaded: true, Warming: true, Position: 128, Capacity: 2048,
		Activity: warmActivity(128, 412), Progress: Progress{Stage: "warming", Done: 128, Total: 412},
		Messages: []Message{{Role: "user", Text: "Hello"}, {Role: "assistant", Text: "Hi"}}}
	v.refreshActivity(st)
	if !v.activityRow.Visible() || !v.progress.Visible() || v.progress.Value != 128 || v.progress.Max != 412 ||
		!strings.Contains(v.activity.Text, "128 of 412 tokens") {
		t.Errorf("while warming: row %v, bar %v %.0f/%.0f, line %q", v.activityRow.Visible(), v.progress.Visible(), v.progress.Value, v.progress.Max, v.activity.Text)
	}
	if m := st.Meter(); m != "128 / 2048 tokens · reading the history (412)" {
		t.Errorf("meter %q", m)
	}
	if !st.CanUndo() || !st.CanUndoTokens() || st.Held() != 412 {
		t.Errorf("while warming: undo %v, undo tokens %v, held %d", st.CanUndo(), st.CanUndoTokens(), st.Held())
	}
	st.Warming, st.Activity, st.Progress = false, "", Progress{}
	v.refreshActivity(st)
	if v.activityRow.Visible() {
		t.Error("the status line stays after the warm")
	}
}
