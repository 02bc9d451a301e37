package app

import (
	"testing"

	"fyne.io/fyne/v2"
)

// Issue 26 item 10: the View menu checks the theme in use, also when
// Preferences chose it (the menu kept its old check then).
func TestThemeMenuFollowsPreferences(t *testing.T) {
	u, _ := newTestUI(t)
	checked := func() []string {
		var on []string
		for _, m := range u.Win.MainMenu().Items {
			for _, it := range m.Items {
				if m.Label == "View" && it.Checked {
					on = append(on, it.Label)
				}
			}
		}
		return on
	}
	if got := checked(); len(got) != 1 || got[0] != "System Theme" {
		t.Fatalf("checked at start: %v", got)
	}
	s := u.newPrefsSheet()
	s.theme.SetSelected("light")
	if err := u.savePrefs(s); err != nil {
		t.Fatal(err)
	}
	if got := checked(); len(got) != 1 || got[0] != "Light Theme" {
		t.Errorf("after Preferences chose light: %v", got)
	}
	var dark *fyne.MenuItem
	for _, it := range u.Win.MainMenu().Items[2].Items {
		if it.Label == "Dark Theme" {
			dark = it
		}
	}
	dark.Action()
	if got := checked(); len(got) != 1 || got[0] != "Dark Theme" || u.Prefs.Theme() != "dark" {
		t.Errorf("after View ▸ Dark Theme: %v, preference %q", got, u.Prefs.Theme())
	}
}
