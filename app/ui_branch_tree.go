// The branch tree view (issue 40 item 7).

package app

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// CanShowTree reports whether the branch tree applies: a stored
// conversation is open and nothing runs.
func (s ChatState) CanShowTree() bool { return !s.Busy && s.Loaded && s.ConvID != 0 }

// TreeRow is a node's line in the view: indented by its branch points,
// the path shown marked with a dot.
func TreeRow(n TreeNode) string {
	mark := "   "
	if n.Current {
		mark = "»  "
	}
	return strings.Repeat("      ", n.Level) + mark + n.Label()
}

// showBranchTree lists the conversation's tree; picking a message shows
// its branch.
func (v *chatView) showBranchTree() {
	nodes, err := v.u.Chat.Tree(v.u.ctx)
	if err != nil {
		v.u.ShowError(err)
		return
	}
	var d dialog.Dialog
	list := widget.NewList(func() int { return len(nodes) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("Turn 1 · Assistant ‹1/2› · text")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			l := o.(*widget.Label)
			l.TextStyle = fyne.TextStyle{Bold: nodes[i].Current}
			l.SetText(TreeRow(nodes[i]))
		})
	list.OnSelected = func(i widget.ListItemID) {
		d.Hide()
		if !nodes[i].Leaf {
			v.do(v.u.Chat.SwitchToMessage(nodes[i].ID))
		}
	}
	note := widget.NewLabel("» marks the branch shown. Pick a message to show its branch (it goes on down that branch's latest replies); the cache keeps what the two branches share.")
	note.Wrapping = fyne.TextWrapWord
	size := v.u.Win.Canvas().Size()
	body := container.NewBorder(note, nil, nil, nil, list)
	d = dialog.NewCustom("Branch Tree", "Close", container.NewGridWrap(fyne.NewSize(min(640, size.Width-100), min(420, size.Height-160)), body), v.u.Win)
	v.tree = d
	d.Show()
}
