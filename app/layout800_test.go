package app

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
)

// Issue 26 item 3, checked by geometry at 800×600 in both themes: what
// must be reachable is inside the window, and no two controls overlap.

// rect is an object's place in window coordinates.
type rect struct{ x0, y0, x1, y1 float32 }

func rectOf(o fyne.CanvasObject) rect {
	p := fyne.CurrentApp().Driver().AbsolutePositionForObject(o)
	return rect{p.X, p.Y, p.X + o.Size().Width, p.Y + o.Size().Height}
}

func (a rect) overlaps(b rect) bool {
	const e = 0.5 // touching edges are not an overlap
	return a.x0 < b.x1-e && b.x0 < a.x1-e && a.y0 < b.y1-e && b.y0 < a.y1-e
}

func (a rect) inside(b rect) bool {
	const e = 0.5
	return a.x0 >= b.x0-e && a.y0 >= b.y0-e && a.x1 <= b.x1+e && a.y1 <= b.y1+e
}

func (a rect) String() string {
	return fmt.Sprintf("(%.0f,%.0f)–(%.0f,%.0f)", a.x0, a.y0, a.x1, a.y1)
}

// controls are the visible widgets under o that take the focus (buttons,
// entries, selects, checks), not looking inside them.
func controls(o fyne.CanvasObject) []fyne.CanvasObject {
	var out []fyne.CanvasObject
	var visit func(fyne.CanvasObject)
	visit = func(o fyne.CanvasObject) {
		if !o.Visible() {
			return
		}
		if _, ok := o.(fyne.Focusable); ok { // buttons, entries, selects, checks and what embeds them
			out = append(out, o)
			return
		}
		switch x := o.(type) {
		case *fyne.Container:
			for _, c := range x.Objects {
				visit(c)
			}
		case *container.Scroll:
			visit(x.Content)
		case *widget.Form:
			for _, it := range x.Items {
				visit(it.Widget)
			}
		}
	}
	visit(o)
	return out
}

// noOverlaps fails for each pair of controls that overlap.
func noOverlaps(t *testing.T, where string, objs []fyne.CanvasObject) {
	t.Helper()
	for i, a := range objs {
		for _, b := range objs[i+1:] {
			if ra, rb := rectOf(a), rectOf(b); ra.overlaps(rb) {
				t.Errorf("%s: %T %v overlaps %T %v", where, a, ra, b, rb)
			}
		}
	}
}

func windowRect(u *UI) rect {
	s := u.Win.Canvas().Size()
	return rect{0, 0, s.Width, s.Height}
}

// Benchmarks ▸ Run at 800×600: Start and Cancel are in the window before
// any scrolling, no control overlaps another, and the progress and the
// results can be scrolled to.
func TestBenchmarksRunGeometry800x600(t *testing.T) {
	u, _ := newTestUI(t)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		// The real window draws its menu bar inside the 600 pixels (32
		// under Xvfb); the test driver draws none.
		const menuBar = 32
		u.Win.Resize(fyne.NewSize(800, 600-menuBar))
		u.SelectTab(TabBenchmarks)
		settle(u)
		tabs := u.benchObj.(*container.AppTabs)
		tabs.SelectIndex(0)
		sc := tabs.Items[0].Content.(*container.Scroll)
		sc.ScrollToTop()
		settle(u)
		win := windowRect(u)
		view := rectOf(sc)
		if !view.inside(win) {
			t.Errorf("%s: the run form's scroll %v reaches out of the window %v", th, view, win)
		}
		for _, name := range []string{"Start", "Cancel"} {
			if r := rectOf(findButton(t, sc, name)); !r.inside(view) {
				t.Errorf("%s: %s at %v is not visible in %v without scrolling", th, name, r, view)
			}
		}
		noOverlaps(t, th+" run form", controls(sc.Content))
		sc.ScrollToBottom()
		settle(u)
		box := sc.Content.(*fyne.Container).Objects
		for _, o := range box[len(box)-3:] { // progress, status, results
			if r := rectOf(o); o.Visible() && r.y1 > view.y1+0.5 {
				t.Errorf("%s: %T at %v below the scroll's view %v after scrolling to the bottom", th, o, r, view)
			}
		}
	}
}

// The settings sheet at 800×600: Cancel and Apply are inside the window,
// below the fields' scroll and on no field; no two fields overlap.
func TestSettingsSheetGeometry800x600(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	settle(u)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		settle(u)
		sheet := u.chat.showSettings()
		top := u.Win.Canvas().Overlays().Top()
		var sc *container.Scroll
		walk(top, func(o fyne.CanvasObject) {
			if s, ok := o.(*container.Scroll); ok && s.Content == sheet.root {
				sc = s
			}
		})
		if sc == nil {
			t.Fatal("no scroll around the sheet")
		}
		win, view := windowRect(u), rectOf(sc)
		fields := controls(sheet.root)
		if len(fields) < 8 {
			t.Fatalf("%s: %d fields found in the sheet", th, len(fields))
		}
		noOverlaps(t, th+" settings fields", fields)
		for _, name := range []string{"Cancel", "Apply"} {
			b := findButton(t, top, name)
			r := rectOf(b)
			if !r.inside(win) || r.y0 < view.y1-0.5 {
				t.Errorf("%s: %s at %v; the window is %v, the fields' scroll ends at %.0f", th, name, r, win, view.y1)
			}
			for _, f := range fields {
				if fr := rectOf(f); fr.overlaps(r) && fr.overlaps(view) {
					t.Errorf("%s: %s at %v is on the field %T at %v", th, name, r, f, fr)
				}
			}
		}
		// Scrolled to the end, the last field is above the buttons.
		sc.ScrollToBottom()
		settle(u)
		last := fields[len(fields)-1]
		if r := rectOf(last); r.y1 > view.y1+0.5 {
			t.Errorf("%s: the last field ends at %.0f, below the scroll's view (%.0f)", th, r.y1, view.y1)
		}
		u.chat.hideSettings()
	}
}

// The library's rows at 800×600 are as tall as their wrapped text the
// first time they are drawn (they were clipped until a redraw).
func TestLibraryRowsNotClipped800x600(t *testing.T) {
	for _, th := range []string{"light", "dark"} {
		u, _ := newTestUI(t) // adds the fixtures at start: the rows' first layout
		// A second llama3 in a folder of a long name: both labels then
		// carry their folder, the longest header a row has.
		long := filepath.Join(t.TempDir(), "downloaded-models-from-the-hub-kept-for-later-comparison", fixtures.Llama3)
		os.MkdirAll(filepath.Dir(long), 0o755)
		if err := os.Rename(filepath.Dir(modelCopy(t, fixtures.Llama3, true)), long); err != nil {
			t.Fatal(err)
		}
		if res := u.Library.Add(context.Background(), long); len(res.Problems) > 0 {
			t.Fatal(res.Problems)
		}
		settle(u)
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		u.SelectTab(TabModels)
		settle(u)
		list := u.lib.list
		// The details' title (a name with its folder) once widened the
		// details past the window and squeezed the list to 81 points.
		if l := rectOf(list); l.x1-l.x0 < 200 {
			t.Errorf("%s: the list is %.0f wide", th, l.x1-l.x0)
		}
		n := 0
		walk(list, func(o fyne.CanvasObject) {
			box, ok := o.(*fyne.Container)
			if !ok || len(box.Objects) != 2 || !box.Visible() {
				return
			}
			row, ok := box.Objects[1].(*widget.Label)
			if !ok || row.Wrapping != fyne.TextWrapWord {
				return
			}
			n++
			if need := box.MinSize().Height; box.Size().Height < need-0.5 {
				t.Errorf("%s: row %q is %.0f tall, its text needs %.0f", th, row.Text, box.Size().Height, need)
			}
			if r, l := rectOf(box), rectOf(list); r.x1 > l.x1+0.5 {
				t.Errorf("%s: row %q at %v reaches past the list %v", th, row.Text, r, l)
			}
			// The header (issue 36 item 6): the badge whole and inside the
			// list, the name and folder beside it, wrapped, not cut.
			head := box.Objects[0].(*fyne.Container)
			name, badge := head.Objects[0].(*widget.Label), head.Objects[1].(*widget.Label)
			if b, l := rectOf(badge), rectOf(list); b.x1 > l.x1+0.5 || badge.Size().Width < badge.MinSize().Width-0.5 {
				t.Errorf("%s: badge %q at %v (needs %.0f wide) is cut by the list %v", th, badge.Text, b, badge.MinSize().Width, l)
			}
			if nr, b := rectOf(name), rectOf(badge); nr.overlaps(b) || nr.x1 > b.x0+0.5 || name.Size().Height < name.MinSize().Height-0.5 {
				t.Errorf("%s: name %q at %v (needs %.0f tall) beside the badge at %v", th, name.Text, nr, name.MinSize().Height, b)
			}
		})
		if n < 3 {
			t.Fatalf("%s: %d rows drawn", th, n)
		}
	}
}

// Issue 36 item 6: the per-cache table at 800×600 in both themes, on
// Gemma 4 (its shared caches' cells, "4 (4,6,7,8)", are the widest): every
// cell holds its text (none runs into its neighbour) and the last column
// is inside the table (no scrolling sideways).
func TestLayerTableFits800x600(t *testing.T) {
	u, _ := newTestUI(t)
	g := modelCopy(t, fixtures.Gemma4, true)
	if res := u.Library.Add(context.Background(), g); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	settle(u)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		u.SelectTab(TabModels)
		settle(u)
		u.Library.Select(g)
		settle(u)
		table := rectOf(u.lib.layers)
		shared, last := 0, 0
		walk(u.lib.layers, func(o fyne.CanvasObject) {
			l, ok := o.(*widget.Label)
			if !ok || !l.Visible() || l.Text == "" {
				return
			}
			if need := l.MinSize().Width; l.Size().Width < need-0.5 {
				t.Errorf("%s: cell %q is %.0f wide, its text needs %.0f", th, l.Text, l.Size().Width, need)
			}
			if strings.Contains(l.Text, "(") {
				shared++
			}
			if l.Text == LayerHeader[len(LayerHeader)-1] {
				last++
				if r := rectOf(l); r.x1 > table.x1+0.5 {
					t.Errorf("%s: the last column's header at %v is past the table %v", th, r, table)
				}
			}
		})
		if shared == 0 || last != 1 {
			t.Fatalf("%s: %d shared-cache cells, %d last-column headers drawn", th, shared, last)
		}
	}
}

// Issue 36 item 6: the focused Send button shows its focus, in both
// themes: its background differs from the unfocused one (Fyne's focus
// colour over the primary Send changed nothing).
func TestFocusedSendShows(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	u.Chat.Wait()
	settle(u)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.SelectTab(TabChat)
		settle(u)
		btn := u.chat.sendBtn
		if btn.Disabled() {
			t.Fatalf("%s: Send is disabled", th)
		}
		fill := func() color.Color {
			return test.WidgetRenderer(btn).Objects()[0].(*canvas.Rectangle).FillColor
		}
		u.Win.Canvas().Unfocus()
		settle(u)
		plain := fill()
		u.Win.Canvas().Focus(btn)
		settle(u)
		focused := fill()
		if u.Win.Canvas().Focused() != btn {
			t.Fatalf("%s: Send did not take the focus", th)
		}
		if r := ContrastRatio(plain, focused); r < 1.25 {
			t.Errorf("%s: Send focused %v, unfocused %v: contrast %.2f, want at least 1.25", th, focused, plain, r)
		}
		u.Win.Canvas().Unfocus()
	}
}

// Issue 36 item 6: the conversation list's rows at 800×600 wrap instead
// of cutting: with "All models" a row holds its title and the model's
// name, every word of it drawn, the row as tall as its lines.
func TestConversationRowsWhole800x600(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(2)); err != nil {
		t.Fatal(err)
	}
	u.Chat.Wait()
	if err := u.Chat.Send("What grows on the northern slopes of the mountains?"); err != nil {
		t.Fatal(err)
	}
	u.Chat.Wait()
	u.Win.Resize(fyne.NewSize(800, 600))
	u.SelectTab(TabChat)
	settle(u)
	u.chat.allConvs.SetChecked(true) // the list is read again in the background
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		settle(u)
		drawn := false
		walk(u.chat.convList, func(o fyne.CanvasObject) {
			if l, ok := o.(*widget.Label); ok && l.Visible() && strings.Contains(l.Text, " · ") {
				drawn = true
			}
		})
		if drawn {
			break
		}
	}
	settle(u)
	n := 0
	walk(u.chat.convList, func(o fyne.CanvasObject) {
		l, ok := o.(*widget.Label)
		if !ok || !l.Visible() || !strings.Contains(l.Text, " · ") {
			return
		}
		n++
		var drawn strings.Builder
		walk(l, func(o fyne.CanvasObject) {
			if tx, ok := o.(*canvas.Text); ok {
				drawn.WriteString(tx.Text)
			}
		})
		squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
		if squash(drawn.String()) != squash(l.Text) {
			t.Errorf("row %q drawn as %q", l.Text, drawn.String())
		}
		if l.Size().Height < l.MinSize().Height-0.5 || l.MinSize().Height < 2*theme.TextSize() {
			t.Errorf("row %q is %.0f tall, needs %.0f (one line cannot hold it)", l.Text, l.Size().Height, l.MinSize().Height)
		}
	})
	if n == 0 {
		t.Fatal("no conversation row with its model drawn")
	}
}
