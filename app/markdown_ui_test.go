package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// transcriptSegs are the segments of every rich text in the transcript,
// in order (each message is a widget of its own).
func transcriptSegs(v *chatView) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	walk(v.transcript, func(o fyne.CanvasObject) {
		if rt, ok := o.(*widget.RichText); ok {
			out = append(out, rt.Segments...)
		}
	})
	return out
}

// longToken is a word no line can hold (a path, a hash): it must break,
// not run out of the window.
var longToken = strings.Repeat("abcdefghij", 14)

// mdReply is a reply with what the issue names: a heading, emphasis, a
// list, a link, a table (one cell long), a code block with a line far
// wider than an 800-pixel window, and a long unbroken word in prose.
var mdReply = "## Results\n\nThe **fast** path is *exact* to `1e-6`; see [the docs](https://example.com/docs).\n\n" +
	"1. measure\n2. compare\n   - twice\n\n" +
	"| engine | prefill tok/s | note |\n|:--|--:|---|\n| cpu | 1200 | the pure-Go engine, which executes the same graph as the native one, token for token |\n| mlx | 5300 | native |\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"" + strings.Repeat("a long line of code ", 12) + "\")\n}\n```\n\n" +
	"A path: " + longToken + " ends here.\n"

// drawReply draws a user message and reply in the chat tab at w×h.
func drawReply(u *UI, reply string, w, h float32) {
	u.SelectTab(TabChat)
	u.Win.Resize(fyne.NewSize(w, h))
	u.chat.drawTranscript(ChatState{Loaded: true, Messages: []Message{
		{Role: "user", Text: "Compare the engines, with **code**."},
		{Role: "assistant", Text: reply},
	}})
	settle(u)
	u.chat.scroll.Refresh()
}

// checkTranscriptGeometry fails for anything drawn in the transcript that
// reaches out of the scroll sideways, for messages (and their blocks)
// drawn over one another or shorter than they need, and for overlapping
// controls (links, the code block's Copy).
func checkTranscriptGeometry(t *testing.T, where string, v *chatView) {
	t.Helper()
	view := rectOf(v.scroll)
	walk(v.transcript, func(o fyne.CanvasObject) {
		if !o.Visible() {
			return
		}
		switch o.(type) {
		case *canvas.Text, *canvas.Rectangle, *widget.Button, *widget.Hyperlink:
			if r := rectOf(o); r.x0 < view.x0-0.5 || r.x1 > view.x1+0.5 {
				desc := fmt.Sprintf("%T", o)
				if tx, ok := o.(*canvas.Text); ok {
					desc = fmt.Sprintf("text %q", tx.Text)
				}
				t.Errorf("%s: %s at %v reaches out of the transcript %v", where, desc, r, view)
			}
		}
	})
	// Every column (the transcript, each message) stacks its objects
	// without overlap, each as tall as its content at its width.
	var columns []*fyne.Container
	walk(v.transcript, func(o fyne.CanvasObject) {
		if c, ok := o.(*fyne.Container); ok {
			if _, col := c.Layout.(*columnLayout); col {
				columns = append(columns, c)
			}
		}
	})
	if len(columns) < 3 {
		t.Fatalf("%s: %d columns drawn", where, len(columns))
	}
	for _, c := range columns {
		var prev fyne.CanvasObject
		for _, o := range c.Objects {
			if !o.Visible() {
				continue
			}
			if need := heightAt(o, o.Size().Width); o.Size().Height < need-0.5 {
				t.Errorf("%s: %T is %.0f tall, needs %.0f", where, o, o.Size().Height, need)
			}
			if prev != nil && rectOf(o).y0 < rectOf(prev).y1-0.5 {
				t.Errorf("%s: %T at %v is drawn over %T at %v", where, o, rectOf(o), prev, rectOf(prev))
			}
			prev = o
		}
	}
	if h := v.transcript.Size().Height; h < v.transcript.MinSize().Height-0.5 {
		t.Errorf("%s: the transcript is %.0f tall in its scroll, its messages need %.0f", where, h, v.transcript.MinSize().Height)
	}
	noOverlaps(t, where+" transcript controls", controls(v.transcript))
}

// The blocks of the reply drawn in the transcript.
func findBlocks(v *chatView) (codes []*codeBlock, tables []*tableBlock) {
	walk(v.transcript, func(o fyne.CanvasObject) {
		switch b := o.(type) {
		case *codeBlock:
			codes = append(codes, b)
		case *tableBlock:
			tables = append(tables, b)
		}
	})
	return codes, tables
}

// Issue 36 item 7: a reply holding a table, a code block and long lines
// at 800×600, in both themes: nothing reaches out sideways, nothing is
// drawn over anything, the table's cells hold their text and the code
// keeps its lines in its box, below its Copy button.
func TestMarkdownReplyGeometry800x600(t *testing.T) {
	u, _ := newTestUI(t)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		drawReply(u, mdReply, 800, 600)
		v := u.chat
		codes, tables := findBlocks(v)
		if len(codes) != 1 || len(tables) != 1 {
			t.Fatalf("%s: %d code blocks, %d tables drawn", th, len(codes), len(tables))
		}
		checkTranscriptGeometry(t, th, v)
		code, table := codes[0], tables[0]
		box, btn := rectOf(code.bg), rectOf(code.copyBtn)
		lines := 0
		walk(code.text, func(o fyne.CanvasObject) {
			if tx, ok := o.(*canvas.Text); ok && tx.Text != "" {
				lines++
				if r := rectOf(tx); !r.inside(box) || r.overlaps(btn) {
					t.Errorf("%s: code line %q at %v; its box %v, Copy at %v", th, tx.Text, r, box, btn)
				}
			}
		})
		if lines < 5 { // 4 lines, the long one wrapped
			t.Errorf("%s: %d code lines drawn, the long line is not wrapped", th, lines)
		}
		for i, row := range table.cells {
			for j, c := range row {
				cr := rectOf(c)
				for _, other := range row[j+1:] {
					if cr.overlaps(rectOf(other)) {
						t.Errorf("%s: row %d: cells %v and %v overlap", th, i, cr, rectOf(other))
					}
				}
				walk(c, func(o fyne.CanvasObject) {
					if tx, ok := o.(*canvas.Text); ok && tx.Text != "" && !rectOf(tx).inside(cr) {
						t.Errorf("%s: cell text %q at %v outside its cell %v", th, tx.Text, rectOf(tx), cr)
					}
				})
			}
		}
		if got := table.cells[0][1].String(); got != "prefill tok/s" {
			t.Errorf("%s: header cell %q", th, got)
		}
		// The long word is drawn whole, over several lines.
		var drawn strings.Builder
		walk(v.views[1], func(o fyne.CanvasObject) {
			if tx, ok := o.(*canvas.Text); ok {
				drawn.WriteString(tx.Text)
			}
		})
		if !strings.Contains(drawn.String(), longToken) {
			t.Errorf("%s: the long word is not drawn whole", th)
		}
	}
}

// The same reply at 1280×800, then narrowed to 800×600: heights follow
// the width (a message measured at the old width was drawn over the next).
func TestMarkdownReplyFollowsTheWidth(t *testing.T) {
	u, _ := newTestUI(t)
	drawReply(u, mdReply+"\n"+mdReply, 1280, 800)
	wide := u.chat.transcript.MinSize().Height
	u.Win.Resize(fyne.NewSize(800, 600))
	settle(u)
	checkTranscriptGeometry(t, "narrowed", u.chat)
	if narrow := u.chat.transcript.MinSize().Height; narrow <= wide {
		t.Errorf("the transcript is %.0f tall at 800 wide, %.0f at 1280", narrow, wide)
	}
}

// Copy on a code block puts exactly its code on the clipboard; the
// message's own Copy still copies the whole reply as written.
func TestCodeBlockCopy(t *testing.T) {
	u, _ := newTestUI(t)
	drawReply(u, mdReply, 800, 600)
	codes, _ := findBlocks(u.chat)
	if len(codes) != 1 {
		t.Fatalf("%d code blocks", len(codes))
	}
	test.Tap(codes[0].copyBtn)
	want := "func main() {\n\tfmt.Println(\"" + strings.Repeat("a long line of code ", 12) + "\")\n}"
	if got := u.App.Clipboard().Content(); got != want {
		t.Errorf("Copy on the code block: %q, want %q", got, want)
	}
	var copyLinks []*widget.HyperlinkSegment
	for _, s := range transcriptSegs(u.chat) {
		if h, ok := s.(*widget.HyperlinkSegment); ok && h.Text == "Copy" {
			copyLinks = append(copyLinks, h)
		}
	}
	if len(copyLinks) != 2 {
		t.Fatalf("%d Copy links", len(copyLinks))
	}
	copyLinks[1].OnTapped()
	if got := u.App.Clipboard().Content(); got != mdReply {
		t.Errorf("the reply's Copy: %q", got)
	}
}

// While a reply streams, only its widget is drawn again (the messages
// above keep theirs, and so do its finished blocks), and a half-written
// code fence or table draws sanely: the fence as a code block of what
// came so far, a table before its delimiter row as its text, then as a
// table whose short row has empty cells.
func TestMarkdownStreaming(t *testing.T) {
	u, _ := newTestUI(t)
	u.SelectTab(TabChat)
	u.Win.Resize(fyne.NewSize(800, 600))
	v := u.chat
	history := []Message{{Role: "user", Text: "Hi"}, {Role: "assistant", Text: "Hello **there**."}}
	live := func(text string) {
		v.drawTranscript(ChatState{Loaded: true, Busy: true, Messages: history, PendingUser: "Show code and a table", Streaming: text})
		settle(u)
	}
	full := "Here:\n\n```python\ndef f():\n    return 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 |\n\nDone."
	live("Here")
	first, reply := v.views[1], v.liveView
	var code *codeBlock
	for n := len("Here"); n <= len(full); n++ {
		live(full[:n])
		if v.views[1] != first || v.liveView != reply {
			t.Fatalf("at %d bytes: a message other than the live reply was drawn again", n)
		}
		checkTranscriptGeometry(t, fmt.Sprintf("at %d bytes", n), v)
		codes, tables := findBlocks(v)
		src := full[:n]
		switch {
		case strings.HasSuffix(src, "def f():\n    ret"):
			if len(codes) != 1 || codes[0].code != "def f():\n    ret" {
				t.Errorf("mid-fence %q: code blocks %d", src, len(codes))
			}
			code = codes[0]
		case strings.HasSuffix(src, "| a | b |\n|--"):
			if len(tables) != 0 || !strings.Contains(reply.box.Objects[len(reply.box.Objects)-1].(*widget.RichText).String(), "| a | b |") {
				t.Errorf("a table before its delimiter row is not drawn as its text")
			}
		case strings.HasSuffix(src, "| 3 |"):
			if len(tables) != 1 || len(tables[0].cells) != 3 || tables[0].cells[2][1].String() != "" {
				t.Errorf("the short row: tables %d", len(tables))
			}
		case strings.HasSuffix(src, "Done"):
			// The code block finished long ago: its widget is kept.
			if len(codes) != 1 || codes[0].code != "def f():\n    return 1" || codes[0] == code {
				t.Errorf("finished code block %d", len(codes))
			}
			if prev := codes[0]; func() bool { live(full[:n+1]); c, _ := findBlocks(v); return c[0] != prev }() {
				t.Error("a finished code block was drawn again at the next token")
			}
		}
	}
}

// replaySession is a fake at the engine boundary: it stands for a
// session between turns (Pending says no transcript), so the view-model's
// stream callback takes deltas from replayTokens instead of an engine.
type replaySession struct{ Session }

func (replaySession) Pending() ([]Message, int, bool) { return nil, 0, false }

// replayTokens cuts a reply into pieces of about 4 bytes (a BPE token's
// average in English text), at UTF-8 boundaries: the fake token source.
func replayTokens(s string, n int) []string {
	var out []string
	for len(out) < n {
		for i := 0; i < len(s) && len(out) < n; {
			j := min(len(s), i+4)
			for j < len(s) && s[j]&0xc0 == 0x80 {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

// BenchmarkStreamReply streams a 2,000-token Markdown reply (mdReply
// over and over) through the view-model's stream callback into the
// window; the UI "thread" is the benchmark's goroutine running the queued
// redraws (the app's fyne.Do). Modes:
//   - paced: tokens come from a goroutine at 400 tok/s (the CPU engine's
//     decode on the fixtures, as the chat's stats line shows it); redraws
//     merge as in the app. lag-ms: from the last token to its drawing.
//   - each: one redraw per token (an engine slower than the UI): the
//     whole view's cost per token.
//   - transcript: drawTranscript alone per token: the transcript's part.
func BenchmarkStreamReply(b *testing.B) {
	const tokens = 2000
	toks := replayTokens(mdReply, tokens)
	full := strings.Join(toks, "")
	for _, mode := range []string{"paced", "each", "transcript"} {
		b.Run(mode, func(b *testing.B) {
			a := test.NewTempApp(b)
			u := NewUI(a, Backend{StoreErr: errors.New("benchmark: no database")})
			q := &uiQueue{}
			u.do = q.post
			defer u.Close()
			u.Win.Resize(fyne.NewSize(1180, 760))
			u.SelectTab(TabChat)
			var uiTime, lag time.Duration
			redraws := 0
			drain := func() int {
				q.mu.Lock()
				fns := q.fns
				q.fns = nil
				q.mu.Unlock()
				for _, f := range fns {
					t0 := time.Now()
					f()
					uiTime += time.Since(t0)
					redraws++
				}
				return len(fns)
			}
			drawn := func() bool {
				u.Chat.mu.Lock()
				defer u.Chat.mu.Unlock()
				return len(u.Chat.st.Streaming) == len(full)
			}
			b.ResetTimer()
			for range b.N {
				u.Chat.mu.Lock()
				u.Chat.st.Busy, u.Chat.st.PendingUser, u.Chat.st.Streaming = true, "Compare the engines.", ""
				u.Chat.mu.Unlock()
				u.Chat.changed()
				drain()
				stream := u.Chat.streamer(context.Background(), replaySession{}, 0, tokens)
				switch mode {
				case "each":
					for _, tk := range toks {
						stream(tk)
						drain()
					}
				case "transcript":
					st := u.Chat.State()
					for _, tk := range toks {
						st.Streaming += tk
						t0 := time.Now()
						u.chat.drawTranscript(st)
						uiTime += time.Since(t0)
						redraws++
					}
				case "paced":
					var wg sync.WaitGroup
					var end time.Time
					wg.Add(1)
					go func() {
						defer wg.Done()
						next := time.Now()
						for _, tk := range toks {
							next = next.Add(time.Second / 400)
							time.Sleep(time.Until(next))
							stream(tk)
						}
						end = time.Now()
					}()
					for {
						if drain() == 0 {
							time.Sleep(time.Millisecond)
						}
						if drawn() {
							wg.Wait()
							drain()
							lag += time.Since(end)
							break
						}
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(uiTime.Nanoseconds())/float64(b.N*tokens), "ui-ns/token")
			b.ReportMetric(float64(redraws)/float64(b.N), "redraws/op")
			b.ReportMetric(float64(uiTime.Milliseconds())/float64(b.N), "ui-ms/op")
			if mode == "paced" {
				b.ReportMetric(float64(lag.Milliseconds())/float64(b.N), "lag-ms")
			}
		})
	}
}

// A reply drawn in one theme takes the other's colours — its text, its
// code box, its table's header — when the theme changes, also when the
// change comes while another tab is shown (the chat tab is then refreshed
// from the top when it is selected again).
func TestMarkdownBlocksFollowTheTheme(t *testing.T) {
	for _, away := range []bool{false, true} {
		u, _ := newTestUI(t)
		u.ApplyTheme("light")
		drawReply(u, mdReply, 800, 600)
		codes, tables := findBlocks(u.chat)
		if len(codes) != 1 || len(tables) != 1 {
			t.Fatalf("%d code blocks, %d tables", len(codes), len(tables))
		}
		light := codes[0].bg.FillColor
		if away {
			u.SelectTab(TabModels)
			settle(u)
		}
		u.ApplyTheme("dark")
		settle(u)
		u.SelectTab(TabChat)
		settle(u)
		dark := newAppTheme("dark")
		if got, want := codes[0].bg.FillColor, dark.Color(theme.ColorNameInputBackground, theme.VariantDark); got != want || got == light {
			t.Errorf("away %v: the code box after the switch: %v, want %v (light was %v)", away, got, want, light)
		}
		if got, want := tables[0].headBg.FillColor, dark.Color(theme.ColorNameHeaderBackground, theme.VariantDark); got != want {
			t.Errorf("away %v: the table's header after the switch: %v, want %v", away, got, want)
		}
		fg := dark.Color(theme.ColorNameForeground, theme.VariantDark)
		for _, o := range []fyne.CanvasObject{u.chat.views[0], u.chat.views[1], codes[0].text, tables[0].cells[1][0]} {
			walk(o, func(o fyne.CanvasObject) {
				if tx, ok := o.(*canvas.Text); ok && (tx.Text == "Compare the engines, with **code**." || tx.Text == "cpu" || strings.HasPrefix(tx.Text, "func main")) && tx.Color != fg {
					t.Errorf("away %v: %q drawn in %v after the switch, want %v", away, tx.Text, tx.Color, fg)
				}
			})
		}
	}
}

// The screenshot tour's Markdown conversation, imported into the real
// store and opened on llama3 with the real engine: it fits the fixture's
// cache and its reply is drawn with its table and code block.
func TestTourMarkdownConversation(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(root + "/llama3-tiny-offgraph/model.pte")
	if e.Info == nil {
		t.Fatal("no llama3 in the library")
	}
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.tourMarkdown(func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	u.Chat.Wait()
	settle(u)
	st := u.Chat.State()
	if st.Err != "" || len(st.Messages) != 2 || st.Messages[1].Text != TourMarkdownReply {
		t.Fatalf("opened: err %q, %d messages", st.Err, len(st.Messages))
	}
	codes, tables := findBlocks(u.chat)
	if len(codes) != 1 || len(tables) != 1 || codes[0].code != "etchat run --engine cpu model.pte" || len(tables[0].cells) != 3 {
		t.Errorf("%d code blocks, %d tables drawn", len(codes), len(tables))
	}
	checkTranscriptGeometry(t, "tour", u.chat)
}

// A transcript that shows its end still does after the window narrows
// (its messages grow taller): the last reply stays in view.
func TestTranscriptKeepsItsEndWhenNarrowed(t *testing.T) {
	u, _ := newTestUI(t)
	drawReply(u, mdReply, 1280, 800)
	u.chat.scroll.ScrollToBottom()
	u.Win.Resize(fyne.NewSize(800, 600))
	settle(u)
	sc := u.chat.scroll
	if end := sc.Offset.Y + sc.Size().Height; end < u.chat.transcript.Size().Height-1 {
		t.Errorf("the view ends at %.0f of %.0f after narrowing", end, u.chat.transcript.Size().Height)
	}
}
