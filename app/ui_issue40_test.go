package app

import (
	"context"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
)

// inWindow fails for each control under o outside the window, and for
// controls that overlap.
func inWindow(t *testing.T, u *UI, where string, o fyne.CanvasObject) {
	t.Helper()
	win := windowRect(u)
	cs := focusables(o)
	if len(cs) == 0 {
		t.Errorf("%s: no controls found", where)
	}
	for _, c := range cs {
		if r := rectOf(c); !r.inside(win) {
			t.Errorf("%s: %T at %v is outside the window %v", where, c, r, win)
		}
	}
	noOverlaps(t, where, cs)
}

// focusables are the visible controls under o, widgets' insides
// included (the tabs, the split), not looking inside a control.
func focusables(o fyne.CanvasObject) []fyne.CanvasObject {
	var out []fyne.CanvasObject
	var visit func(fyne.CanvasObject)
	visit = func(o fyne.CanvasObject) {
		if o == nil || !o.Visible() {
			return
		}
		if _, ok := o.(fyne.Focusable); ok {
			out = append(out, o)
			return
		}
		switch x := o.(type) {
		case *fyne.Container:
			for _, c := range x.Objects {
				visit(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				visit(c)
			}
		}
	}
	visit(o)
	return out
}

// Issue 40's views at 800×600 in both themes: the system prompt bar
// (collapsed and open), the model picker, the branch tree and the preset
// editor — every control inside the window, none on another — against
// markup masters.
func TestIssue40Views800x600(t *testing.T) {
	u, root := newTestUI(t)
	llama := filepath.Join(root, fixtures.Llama3, "model.pte")
	e, _ := u.Library.Entry(llama)
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	s := greedy(4)
	s.SystemPrompt = "Answer briefly, in plain words."
	for _, step := range []func() error{func() error { return u.Chat.NewConversation(s) },
		func() error { return u.Chat.Send("Hello") }, func() error { return u.Chat.EditLast("Hi") }} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		settle(u)
	}
	v := u.chat
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		settle(u)
		if !v.system.root.Visible() || v.system.line.Text != "“Answer briefly, in plain words.”" {
			t.Fatalf("%s: system bar shown %v, line %q", th, v.system.root.Visible(), v.system.line.Text)
		}
		// The bar and the controls around it (the transcript is another's
		// test: its inline links' padded boxes overlap by design).
		bar := func(where string) {
			cs := append(focusables(v.system.root), v.sendBtn, v.moreBtn, v.settings, v.model, v.pickBtn, v.newBtn)
			for _, c := range cs {
				if r := rectOf(c); !r.inside(windowRect(u)) {
					t.Errorf("%s: %T at %v outside the window", where, c, r)
				}
			}
			noOverlaps(t, where, cs)
		}
		bar(th + " chat")
		v.scroll.ScrollToBottom() // as a redraw leaves it: where it stands after the resize depends on timing
		settle(u)
		assertMarkup(t, "issue40-chat-800x600-"+th+".xml", u.Win.Canvas(), root)

		v.openSystemBar(true)
		settle(u)
		if v.system.entry.Text != s.SystemPrompt {
			t.Errorf("%s: the editor holds %q", th, v.system.entry.Text)
		}
		bar(th + " system bar open")
		assertMarkup(t, "issue40-system-800x600-"+th+".xml", u.Win.Canvas(), root)
		v.openSystemBar(false)

		v.showModelPicker()
		settle(u)
		inWindow(t, u, th+" picker", u.Win.Canvas().Overlays().Top())
		findButton(t, u.Win.Canvas().Overlays().Top(), fixtures.Llama3)
		assertMarkup(t, "issue40-picker-800x600-"+th+".xml", u.Win.Canvas(), root)
		v.picker.Hide()

		v.showBranchTree()
		settle(u)
		top := u.Win.Canvas().Overlays().Top()
		inWindow(t, u, th+" branch tree", top)
		var rows int
		walk(top, func(o fyne.CanvasObject) {
			if l, ok := o.(*widget.Label); ok && l.Truncation == fyne.TextTruncateEllipsis && l.Text != "" {
				rows++
			}
		})
		if rows < 5 { // system, hello, its reply, Hi, its reply
			t.Errorf("%s: the tree shows %d rows", th, rows)
		}
		assertMarkup(t, "issue40-tree-800x600-"+th+".xml", u.Win.Canvas(), root)
		v.tree.Hide()

		u.SelectTab(TabModels)
		u.Library.Select(llama)
		settle(u)
		sheet := u.lib.showPresetEditor()
		settle(u)
		top = u.Win.Canvas().Overlays().Top()
		if sheet == nil || len(sheet.entries)+len(sheet.selects) != len(PresetFields) {
			t.Fatalf("%s: preset editor fields", th)
		}
		for _, name := range []string{"Cancel", "Clear Preset", "Save Preset"} {
			if r := rectOf(findButton(t, top, name)); !r.inside(windowRect(u)) {
				t.Errorf("%s: %s at %v outside the window", th, name, r)
			}
		}
		assertMarkup(t, "issue40-preset-800x600-"+th+".xml", u.Win.Canvas(), root)
		u.lib.preset.dlg.Hide()
		u.SelectTab(TabChat)
		settle(u)
	}
}
