package app

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
)

// The Conversations menu (issue 40 item 5): pin, import, export all,
// back up and restore the database. Each action runs off the UI
// goroutine and reports in a dialog: what it did, or why not and what to
// do.

// conversationsMenu is the menu.
func (u *UI) conversationsMenu() *fyne.Menu {
	return fyne.NewMenu("Conversations",
		fyne.NewMenuItem("Pin or Unpin Open Conversation", u.togglePin),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Import…", u.importDialog),
		fyne.NewMenuItem("Export All…", u.exportAllDialog),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Back Up Database…", u.backupDialog),
		fyne.NewMenuItem("Restore Database…", u.restoreDialog),
	)
}

// note shows an outcome in a dialog (on the UI goroutine).
func (u *UI) note(title, text string) {
	u.do(func() { dialog.ShowInformation(title, text, u.Win) })
}

// togglePin pins the open conversation, or unpins it.
func (u *UI) togglePin() {
	st := u.Chat.State()
	if st.ConvID == 0 {
		u.ShowError(fmt.Errorf("no conversation is open: open one in the Chat tab's list to pin it"))
		return
	}
	pinned := u.Chat.Pinned()
	go func() {
		if err := u.Chat.SetPinned(u.ctx, st.ConvID, !pinned); err != nil {
			u.do(func() { u.ShowError(err) })
		}
	}()
}

// importFrom imports the export r (named name) and says what it added,
// or why nothing was.
func (u *UI) importFrom(r io.Reader, name string) {
	note, err := u.Chat.ImportConversations(u.ctx, r, name)
	if err != nil {
		u.note("Import", advised(err, "the file").Error())
		return
	}
	u.note("Import", note)
}

func (u *UI) importDialog() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			u.ShowError(err)
			return
		}
		if r == nil {
			return // cancelled
		}
		go func() {
			defer r.Close()
			u.importFrom(r, r.URI().Path())
		}()
	}, u.Win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{".json"}))
	d.Show()
}

// exportAllTo writes every conversation to w (a .json name: JSON, else
// Markdown) and says where, or why not.
func (u *UI) exportAllTo(w io.WriteCloser, path string) {
	format := ExportFormat(path)
	err := u.Chat.ExportAll(u.ctx, w, format)
	if cerr := w.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("could not write %s: %w", path, cerr)
	}
	if err != nil {
		u.note("Export All", "The conversations were not exported: "+err.Error())
		return
	}
	u.note("Export All", "Every conversation exported as "+strings.ToUpper(format)+" to "+path)
}

func (u *UI) exportAllDialog() {
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil || w == nil {
			u.ShowError(err)
			return
		}
		go u.exportAllTo(w, w.URI().Path())
	}, u.Win)
	d.SetFileName("etchat-conversations.json")
	d.SetFilter(storage.NewExtensionFileFilter([]string{".json", ".md"}))
	d.Show()
}

// backupTo backs the database up to path and says where, or why not.
func (u *UI) backupTo(path string) {
	if err := u.Chat.BackupDatabase(u.ctx, path); err != nil {
		u.note("Back Up Database", err.Error())
		return
	}
	u.note("Back Up Database", "The whole database (models, conversations, runs) was copied to "+path+
		". Conversations → Restore Database… brings it back.")
}

func (u *UI) backupDialog() {
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil || w == nil {
			u.ShowError(err)
			return
		}
		path := w.URI().Path()
		w.Close() // the backup is written beside it and renamed over it
		go u.backupTo(path)
	}, u.Win)
	d.SetFileName("etchat-backup.db")
	d.Show()
}

// restoreBlocked is why this window cannot restore now ("" when it can).
func (u *UI) restoreBlocked() string {
	switch {
	case u.Backend.DB == nil:
		return "the database is not open"
	case u.serve != nil && u.serve.Snapshot().Running:
		return "the server is running and writes into the database: stop it in File → Serve, then restore"
	case !u.hold.alone():
		return "another etchat window has this database open (" + u.Backend.DBPath + "); close it first: a restore " +
			"replaces everything it shows"
	}
	return ""
}

// restoreFrom restores the backup at path, then reads the library and
// the lists again, and says how it went.
func (u *UI) restoreFrom(path string) {
	if err := u.Chat.RestoreDatabase(u.ctx, path, u.restoreBlocked()); err != nil {
		u.note("Restore Database", advised(err, "the file").Error())
		return
	}
	_ = u.Library.Load(u.ctx) // a failure shows in the library
	if u.BenchVM != nil {
		_ = u.BenchVM.Refresh(u.ctx)
	}
	u.note("Restore Database", "The database now holds what "+filepath.Base(path)+" held.")
}

func (u *UI) restoreDialog() {
	if why := u.restoreBlocked(); why != "" {
		u.ShowError(&RestoreBlockedError{Reason: why})
		return
	}
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil || r == nil {
			u.ShowError(err)
			return
		}
		path := r.URI().Path()
		r.Close()
		dialog.ShowConfirm("Restore Database",
			"Replace everything in the database (models, conversations, runs) with "+filepath.Base(path)+"? "+
				"What is not in the backup is lost: back up first if unsure.",
			func(ok bool) {
				if ok {
					go u.restoreFrom(path)
				}
			}, u.Win)
	}, u.Win)
	d.Show()
}
