package app

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// newTranscript is the messages: one rich text in a scroll.
func (v *chatView) newTranscript() fyne.CanvasObject {
	v.transcript = widget.NewRichText()
	v.transcript.Wrapping = fyne.TextWrapWord
	v.scroll = container.NewVScroll(v.transcript)

	return v.scroll
}

func roleTitle(role string) string {
	switch role {
	case "user":
		return "You"
	case "assistant":
		return "Assistant"
	case "system":
		return "System"
	}
	return role
}

// messageSegments are one message as rich-text paragraphs: the role, the
// text, and the stats line of a reply. body is the text's segment.
func messageSegments(role, text, stats string) (segs []widget.RichTextSegment, body *widget.TextSegment) {
	body = &widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: text}
	segs = []widget.RichTextSegment{
		&widget.TextSegment{Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Bold: true}, ColorName: theme.ColorNamePrimary}, Text: roleTitle(role)},
		body,
	}
	if stats != "" {
		segs = append(segs, &widget.TextSegment{Style: widget.RichTextStyle{TextStyle: fyne.TextStyle{Italic: true},
			ColorName: theme.ColorNamePlaceHolder, SizeName: theme.SizeNameCaptionText}, Text: stats})
	}
	return segs, body
}

// drawTranscript redraws the transcript (one rich text, which wraps and
// sizes itself as a document) and the live reply while streaming.
func (v *chatView) drawTranscript(st ChatState) {
	liveOn := st.Busy && (st.PendingUser != "" || st.Streaming != "")
	want := len(st.Messages)
	if liveOn {
		want++
	}
	if want != v.shown || !liveOn {
		var segs []widget.RichTextSegment
		if len(st.Messages) == 0 && !liveOn {
			hint := "No messages yet."
			if st.Loaded {
				hint = emptyChatHint(v.u.Prefs.EnterNewline())
			}
			segs = append(segs, &widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: hint})
		}
		for i, m := range st.Messages {
			if m.Role == "system" && m.Text == "" {
				continue
			}
			ms, _ := messageSegments(m.Role, m.Text, MessageNote(m))
			segs = append(segs, ms...)
			segs = append(segs, v.messageActions(i, m, st)...)
			segs = append(segs, &widget.SeparatorSegment{})
		}
		if liveOn {
			if st.PendingUser != "" {
				ms, _ := messageSegments("user", st.PendingUser, "")
				segs = append(segs, ms...)
				segs = append(segs, &widget.SeparatorSegment{})
			}
			ms, body := messageSegments("assistant", "", "")
			v.live = body
			segs = append(segs, ms...)
		}
		v.shown = want
		v.transcript.Segments = segs
	}
	if liveOn {
		v.live.Text = st.Streaming + " ▍"
	}
	v.transcript.Refresh()
	v.scroll.ScrollToBottom()
}

// branchSegments are "‹ k/n ›" under message i when it has alternatives:
// the arrows switch to the previous or next one.
func (v *chatView) branchSegments(i int, st ChatState) []widget.RichTextSegment {
	b := st.BranchOf(i)
	if b.N <= 1 {
		return nil
	}
	arrow := func(text string, step int, on bool) widget.RichTextSegment {
		if !on || st.Busy {
			return &widget.TextSegment{Style: widget.RichTextStyle{Inline: true, ColorName: theme.ColorNamePlaceHolder}, Text: text}
		}
		return &widget.HyperlinkSegment{Text: text, OnTapped: func() { v.do(v.u.Chat.SwitchBranch(i, step)) }}
	}
	return []widget.RichTextSegment{
		arrow("‹", -1, b.K > 1),
		&widget.TextSegment{Style: widget.RichTextStyle{Inline: true}, Text: fmt.Sprintf(" %d/%d ", b.K, b.N)},
		arrow("›", +1, b.K < b.N),
		&widget.TextSegment{Style: widget.RichTextStyle{Inline: true}, Text: "   "},
	}
}

// messageActions is the line under message i: its branch control when it
// has alternatives, then Copy (its text) and Copy as Markdown (role and
// text, as the Markdown export writes a message). The rich text cannot be
// selected, so these are how a reply's text leaves the window.
func (v *chatView) messageActions(i int, m Message, st ChatState) []widget.RichTextSegment {
	segs := v.branchSegments(i, st)
	segs = append(segs,
		&widget.HyperlinkSegment{Text: "Copy", OnTapped: func() { v.copyText(m.Text) }},
		&widget.TextSegment{Style: widget.RichTextStyle{Inline: true}, Text: "  "},
		&widget.HyperlinkSegment{Text: "Copy as Markdown", OnTapped: func() { v.copyText(MessageMarkdown(m)) }},
		// Ends the line: without it the separator and the next message's
		// header were laid out on this row, over it.
		&widget.TextSegment{Style: widget.RichTextStyleParagraph, Text: ""},
	)
	return segs
}

// copyText puts text on the clipboard.
func (v *chatView) copyText(text string) { v.u.App.Clipboard().SetContent(text) }

// MessageMarkdown is one message as `etchat history --export-conversation
// ID --format md` writes it: the role in bold, then the text.
func MessageMarkdown(m Message) string {
	role := m.Role
	if role != "" {
		role = strings.ToUpper(role[:1]) + role[1:]
	}
	return fmt.Sprintf("**%s**\n\n%s\n", role, strings.TrimRight(m.Text, "\n"))
}

// emptyChatHint is the empty transcript's line, for the Enter preference.
func emptyChatHint(enterNewline bool) string {
	if enterNewline {
		return "Type a message below and press Send (" + modKey() + "+Enter)."
	}
	return "Type a message below and press Enter (or Send)."
}
