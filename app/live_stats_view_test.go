package app

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
)

// The streaming reply's stats line is the cursor until the view-model has
// live numbers, then those numbers, redrawn in the same widget; when a
// Continue takes the last message back to stream on from it (one message
// fewer, a reply in progress), the transcript is built again, so that
// the cut reply is drawn once, as the live one.
func TestLiveStatsOnTheStreamingReply(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	u.Win.Resize(fyne.NewSize(800, 600))
	v := u.chat
	history := []Message{{Role: "user", Text: "Hi"}, {Role: "assistant", Text: "Hello"}}
	draw := func(st ChatState) {
		v.drawTranscript(st)
		settle(u)
	}
	draw(ChatState{Loaded: true, Busy: true, Messages: history, PendingUser: "More", Streaming: "The"})
	reply := v.liveView
	if reply == nil || reply.stats != "▍" {
		t.Fatalf("before live numbers the stats line is %+v, want the cursor", reply)
	}
	line := LiveStatsLine(3, 41.5)
	draw(ChatState{Loaded: true, Busy: true, Messages: history, PendingUser: "More", Streaming: "The sea", LiveStats: line})
	if v.liveView != reply || reply.stats != line || reply.text != "The sea" {
		t.Errorf("live reply %p (was %p): stats %q text %q, want %q", v.liveView, reply, reply.stats, reply.text, line)
	}
	done := append(history, Message{Role: "user", Text: "More"}, Message{Role: "assistant", Text: "The sea is"})
	draw(ChatState{Loaded: true, Messages: done})
	if v.liveView != nil || len(v.views) != 4 {
		t.Fatalf("after the reply: live %p, %d views", v.liveView, len(v.views))
	}
	// Continue: the last reply streams on in its own place (three
	// messages and a live one: as many as were drawn).
	draw(ChatState{Loaded: true, Busy: true, Messages: done[:3], Streaming: "The sea is wide"})
	if v.liveView == nil || len(v.views) != 3 || v.liveView.text != "The sea is wide" {
		t.Fatalf("continuing: live %v, %d views", v.liveView, len(v.views))
	}
	n := 0
	for _, o := range v.transcript.box.Objects {
		if m, ok := o.(*messageView); ok && strings.HasPrefix(m.text, "The sea") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the continued reply is drawn %d times, want once", n)
	}
}
