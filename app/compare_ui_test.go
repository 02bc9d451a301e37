package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
)

// TestCompareView800x600 (issue 40 item 6): the Compare window offers the
// library's chat models, runs llama3-tiny and llama3-tiny-q4 on one
// prompt, and shows the replies in two columns side by side, each with
// its speed, the part from the first differing token marked, and the
// order they ran in; at 800×600 in both themes every control and both
// columns are inside the window and none overlaps another.
func TestCompareView800x600(t *testing.T) {
	u, root := newTestUI(t)
	q4 := modelCopy(t, fixtures.Llama3Q4, true)
	if res := u.Library.Add(context.Background(), q4); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	settle(u)
	v := newCompareView(u, NewCompare(hermeticOpener()), u.App.NewWindow("Compare Two Models"))
	t.Cleanup(v.vm.Stop)
	la, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	lb, _ := u.Library.Entry(q4)
	for _, l := range v.a.Options {
		if strings.Contains(l, fixtures.InGraph) {
			t.Errorf("the in-graph model without a tokenizer is offered: %q", l)
		}
	}
	v.a.SetSelected(la.Label())
	v.b.SetSelected(lb.Label())
	v.prompt.SetText("Tell me about lighthouses")
	v.max.SetText("8")
	test.Tap(v.start)
	v.vm.Wait()
	settle(u)
	st := v.vm.State()
	if st.Sides[0].Err != "" || st.Sides[1].Err != "" || !st.Sides[0].Done || !st.Sides[1].Done {
		t.Fatalf("comparison: %+v", st)
	}
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		v.win.Resize(fyne.NewSize(800, 600))
		settle(u)
		win := rect{0, 0, v.win.Canvas().Size().Width, v.win.Canvas().Size().Height}
		var cols [2]rect
		for i := range 2 {
			if v.heads[i].Text != st.Sides[i].Model || !strings.Contains(v.speeds[i].Text, "tok/s decode") {
				t.Errorf("%s: column %d heads %q, speed %q", th, i, v.heads[i].Text, v.speeds[i].Text)
			}
			same, differs := st.Split(i)
			segs := v.texts[i].Segments
			if len(segs) != 2 || segs[0].(*widget.TextSegment).Text != same || segs[1].(*widget.TextSegment).Text != differs ||
				segs[1].(*widget.TextSegment).Style != markStyle {
				t.Errorf("%s: column %d draws %+v, want %q then %q marked", th, i, segs, same, differs)
			}
			cols[i] = rectOf(v.texts[i])
			if !cols[i].inside(win) || cols[i].x1-cols[i].x0 < 300 {
				t.Errorf("%s: column %d at %v in the window %v", th, i, cols[i], win)
			}
		}
		if cols[0].overlaps(cols[1]) || cols[0].x1 > cols[1].x0+0.5 || cols[0].y0 != cols[1].y0 {
			t.Errorf("%s: the columns are not side by side: %v %v", th, cols[0], cols[1])
		}
		ctrls := controls(v.win.Content())
		if len(ctrls) < 6 {
			t.Fatalf("%s: %d controls", th, len(ctrls))
		}
		for _, c := range ctrls {
			if r := rectOf(c); !r.inside(win) {
				t.Errorf("%s: %T at %v is out of the window", th, c, r)
			}
		}
		noOverlaps(t, th+" compare", ctrls)
		if !strings.Contains(v.note.Text, "part at token") || !v.stop.Disabled() || v.start.Disabled() {
			t.Errorf("%s: note %q, stop off %v, start off %v", th, v.note.Text, v.stop.Disabled(), v.start.Disabled())
		}
		if r := rectOf(v.note); !r.inside(win) {
			t.Errorf("%s: the note at %v is out of the window", th, r)
		}
	}
}
