// The tour's views of issue 40: the model picker, the system prompt bar
// open, the branch tree and a preset being edited.

package app

import "fyne.io/fyne/v2"

// tourIssue40 takes the pictures of issue 40's views at 1280×800 (the
// chat open, with two branches of its last reply), then the tour's last:
// the chat in the light theme.
func (u *UI) tourIssue40(shot func(string) error) error {
	fyne.DoAndWait(func() { u.SelectTab(TabChat); u.chat.showModelPicker() })
	if err := shot("model-picker"); err != nil {
		return err
	}
	fyne.DoAndWait(func() {
		u.chat.picker.Hide()
		u.chat.openSystemBar(true)
		u.chat.system.entry.SetText("Answer briefly, in plain words.")
	})
	if err := shot("system-prompt"); err != nil {
		return err
	}
	fyne.DoAndWait(func() { u.chat.openSystemBar(false); u.chat.showBranchTree() })
	if err := shot("branch-tree"); err != nil {
		return err
	}
	fyne.DoAndWait(func() {
		u.chat.tree.Hide()
		u.SelectTab(TabModels)
		if st := u.Chat.State(); st.Model != nil {
			u.Library.Select(st.Model.Path)
		}
	})
	var sheet *settingsSheet
	fyne.DoAndWait(func() { sheet = u.lib.showPresetEditor() })
	if sheet != nil {
		fyne.DoAndWait(func() { sheet.entries["SystemPrompt"].SetText("You are a lighthouse keeper.") })
	}
	if err := shot("preset"); err != nil {
		return err
	}
	fyne.DoAndWait(func() {
		if u.lib.preset.dlg != nil {
			u.lib.preset.dlg.Hide()
		}
		u.ApplyTheme("light")
		u.SelectTab(TabChat)
	})
	return shot("chat-light")
}
