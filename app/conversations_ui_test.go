package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
)

// overlayText is every text the top overlay draws.
func overlayText(u *UI) string {
	var b strings.Builder
	top := u.Win.Canvas().Overlays().Top()
	if top == nil {
		return ""
	}
	walk(top, func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			b.WriteString(x.Text + "\n")
		case *canvas.Text:
			b.WriteString(x.Text + "\n")
		}
	})
	return b.String()
}

// TestConversationsMenuAndList800x600 (issue 40 item 5): the
// Conversations menu pins the open conversation, which the list then
// shows first, with when it was last used and "pinned", each row drawn
// whole at 800×600 in both themes; an import the store refuses says why
// in a dialog; a restore is refused while another window holds the
// database and done when this window is alone.
func TestConversationsMenuAndList800x600(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, text := range []string{"Which birds nest on the cliffs?", "What grows on the northern slopes?"} {
		if err := u.Chat.NewConversation(greedy(3)); err != nil {
			t.Fatal(err)
		}
		u.Chat.Wait()
		if err := u.Chat.Send(text); err != nil {
			t.Fatal(err)
		}
		u.Chat.Wait()
		ids = append(ids, u.Chat.State().ConvID)
	}
	if err := u.Chat.OpenConversation(ids[0]); err != nil {
		t.Fatal(err)
	}
	settle(u)
	var pin *fyne.MenuItem
	for _, m := range u.Win.MainMenu().Items {
		if m.Label == "Conversations" {
			pin = m.Items[0]
		}
	}
	if pin == nil {
		t.Fatal("no Conversations menu")
	}
	pin.Action()
	waitFor(t, func() bool { return u.Chat.Pinned() })
	settle(u)
	if st := u.Chat.State(); st.Conversations[0].ID != ids[0] || !st.Conversations[0].Pinned {
		t.Fatalf("the pinned conversation is not first: %+v", st.Conversations)
	}
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		u.SelectTab(TabChat)
		settle(u)
		var rows []*widget.Label
		walk(u.chat.convList, func(o fyne.CanvasObject) {
			if l, ok := o.(*widget.Label); ok && l.Visible() && strings.Contains(l.Text, "\n") {
				rows = append(rows, l)
			}
		})
		if len(rows) < 2 {
			t.Fatalf("%s: %d rows drawn", th, len(rows))
		}
		pinned := 0
		for _, l := range rows {
			var drawn strings.Builder
			walk(l, func(o fyne.CanvasObject) {
				if tx, ok := o.(*canvas.Text); ok {
					drawn.WriteString(tx.Text)
				}
			})
			squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
			if squash(drawn.String()) != squash(l.Text) {
				t.Errorf("%s: row %q drawn as %q", th, l.Text, drawn.String())
			}
			if l.Size().Height < l.MinSize().Height-0.5 {
				t.Errorf("%s: row %q is %.0f tall, needs %.0f", th, l.Text, l.Size().Height, l.MinSize().Height)
			}
			if r, w := rectOf(l), windowRect(u); !r.inside(w) {
				t.Errorf("%s: row %q at %v is out of the window", th, l.Text, r)
			}
			if strings.HasSuffix(l.Text, " · pinned") {
				pinned++
				if !strings.HasPrefix(l.Text, "Which birds") {
					t.Errorf("%s: pinned row %q", th, l.Text)
				}
			}
		}
		if pinned != 1 {
			t.Errorf("%s: %d rows say pinned", th, pinned)
		}
	}

	// An import refused: the dialog says why, and nothing was imported.
	u.importFrom(strings.NewReader("{not an export"), "broken.json")
	settle(u)
	if txt := overlayText(u); !strings.Contains(txt, "nothing was imported from broken.json") {
		t.Errorf("the import dialog says %q", txt)
	}
	u.Win.Canvas().Overlays().Top().Hide()

	// Restore: refused while another window holds the database.
	backup := filepath.Join(t.TempDir(), "backup.db")
	u.backupTo(backup)
	settle(u)
	if fi, err := os.Stat(backup); err != nil || fi.Size() == 0 {
		t.Fatalf("no backup written: %v", err)
	}
	other := holdDB(u.Backend.DBPath) // a second window opens the database
	if why := u.restoreBlocked(); !strings.Contains(why, "another etchat window") {
		t.Errorf("with another window: %q", why)
	}
	if err := u.Chat.SetPinned(context.Background(), ids[0], false); err != nil {
		t.Fatal(err)
	}
	u.restoreFrom(backup)
	settle(u)
	if txt := overlayText(u); !strings.Contains(txt, "was not restored: another etchat window") {
		t.Errorf("the restore dialog says %q", txt)
	}
	if u.Chat.State().Conversations[1].Pinned {
		t.Error("a refused restore changed the database")
	}
	other.release() // the other window closes
	if why := u.restoreBlocked(); why != "" {
		t.Errorf("alone: %q", why)
	}
	u.restoreFrom(backup)
	settle(u)
	if st := u.Chat.State(); len(st.Conversations) != 2 || st.Conversations[0].ID != ids[0] || !st.Conversations[0].Pinned {
		t.Errorf("after the restore: %+v", st.Conversations)
	}
}
