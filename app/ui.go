package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/app/benchmarks"
	"etchat/internal/benchstore"
	"etchat/resources"
)

// UI is the main window: three tabs bound to the view-models. It needs a
// fyne.App (the GLFW one in run.go, or fyne's test app in tests).
type UI struct {
	App     fyne.App
	Win     fyne.Window
	Backend Backend
	Prefs   *Prefs
	Library *Library
	Chat    *Chat
	// BenchVM is the Benchmarks tab's view-model (nil without a database).
	BenchVM *benchmarks.ViewModel

	tabs     *container.AppTabs
	lib      *libraryView
	chat     *chatView
	benchObj fyne.CanvasObject
	// banner shows a lasting problem (the database not open).
	banner *widget.Label
	// serve is the Serve switch (app/serve.go); nil until first used.
	serve *ServeSwitch
	// indicator is the server's line at the foot of the window
	// (ui_server_indicator.go).
	indicator *serverIndicator

	ctx    context.Context
	cancel context.CancelFunc
	// do runs a UI update from any goroutine: fyne.Do in the app; tests
	// queue the updates and run them on the test goroutine.
	do         func(func())
	errDlg     *dialog.CustomDialog      // the last error dialog, which Enter closes
	unlockDB   func()                    // gives back the database's window lock
	hold       *dbHold                   // this window's share of the database (a restore needs it alone)
	lockSeen   int64                     // the lock file's time when this window took it (a later one: another window knocked)
	watchEvery time.Duration             // how often the database files are looked at (0: 2 s)
	themeItems map[string]*fyne.MenuItem // View's theme items, by theme name
}

// Tab names.
const (
	TabModels     = "Models"
	TabChat       = "Chat"
	TabBenchmarks = "Benchmarks"
)

// NewUI builds the window. It reads nothing yet; call Start to load the
// library.
func NewUI(a fyne.App, b Backend) *UI {
	ctx, cancel := context.WithCancel(context.Background())
	u := &UI{App: a, Backend: b, Prefs: NewPrefs(a.Preferences()), ctx: ctx, cancel: cancel, do: fyne.Do}
	u.Library = NewLibrary(b.Inspector, b.Library)
	u.Library.SetFit(nativeFit(b.Opener, u.Library.changed)) // issue 35: the fit before loading
	u.Chat = NewChat(b.Opener, b.Chats, u.Prefs.Engine())
	u.ApplyTheme(u.Prefs.Theme())

	u.Win = a.NewWindow("etchat")
	u.lib = newLibraryView(u)
	u.chat = newChatView(u)
	u.benchObj = u.newBenchmarksTab()
	u.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon(TabModels, theme.StorageIcon(), u.lib.root),
		container.NewTabItemWithIcon(TabChat, theme.MailComposeIcon(), u.chat.root),
		container.NewTabItemWithIcon(TabBenchmarks, theme.InfoIcon(), u.benchObj),
	)
	u.banner = widget.NewLabel("")
	u.banner.Wrapping = fyne.TextWrapWord
	u.banner.Importance = widget.DangerImportance
	u.banner.Hide()
	if b.StoreErr != nil {
		u.banner.SetText("Nothing is being saved: " + b.StoreErr.Error())
		u.banner.Show()
	}
	u.unlockDB = func() {}
	if b.DB != nil && b.DBPath != "" {
		u.hold = holdDB(b.DBPath)
		release, held := lockDB(b.DBPath)
		u.unlockDB = release
		u.lockSeen = lockStamp(b.DBPath)
		if !held {
			u.banner.SetText(SharedDBNote(b.DBPath))
			u.banner.Importance = widget.WarningImportance
			u.banner.Show()
		}
	}
	u.indicator = newServerIndicator(u)
	u.Win.SetContent(container.NewBorder(u.banner, u.indicator.root, nil, nil, u.tabs))
	u.Win.SetMainMenu(u.menu())
	u.chat.refreshMenu()
	// The window reopens on the tab it closed on.
	if last := u.Prefs.LastTab(); last != "" {
		u.SelectTab(last)
	}
	u.tabs.OnSelected = func(t *container.TabItem) { u.Prefs.SetLastTab(t.Text) }
	u.Win.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) { u.AddURIs(uris) })
	u.Win.Canvas().SetOnTypedKey(func(ev *fyne.KeyEvent) {
		switch ev.Name {
		case fyne.KeyEscape:
			u.Escape()
		case fyne.KeyReturn, fyne.KeyEnter:
			u.confirmError()
		}
	})
	u.Win.Resize(fyne.NewSize(1180, 760))
	u.Win.SetCloseIntercept(func() {
		u.Close()
		u.Win.Close()
	})
	return u
}

// Start loads the library in the background, adds models (paths from the
// command line) and reports a store failure. done, if not nil, is closed
// when it has finished.
func (u *UI) Start(models []string, done chan<- struct{}) {
	go func() {
		if done != nil {
			defer close(done)
		}
		err := u.Library.Load(u.ctx)
		var res AddResult
		if len(models) > 0 {
			res = u.Library.Add(u.ctx, models...)
		}
		if u.BenchVM != nil {
			_ = u.BenchVM.Refresh(u.ctx) // the error shows in the history
		}
		u.reopenLast()
		if u.Chat.ListFilter().All {
			_ = u.Chat.ReloadConversations(u.ctx) // every model's, also with none chosen; errors show when the list is used
		}
		if u.Backend.DB != nil && u.Backend.DBPath != "" {
			u.checkKnock() // one that opened before the watch began
			every := u.watchEvery
			if every == 0 {
				every = 2 * time.Second
			}
			go watchDB(u.ctx, u.Backend.DBPath, every, u.dbChanged)
		}
		u.do(func() {
			if err != nil {
				u.ShowError(err)
			}
			if msg := res.Message(); msg != "" {
				u.ShowError(errors.New(msg))
			}
			if u.Backend.StoreErr != nil {
				u.ShowError(u.Backend.StoreErr)
			}
		})
	}()
}

// dbChanged re-reads what another process may have written (files: the
// database files changed): the conversation list, the benchmark history
// and the open transcript (after the reply, when one is streaming: again
// reports that, and the next call retries only the transcript).
func (u *UI) dbChanged(files bool) (again bool) {
	if files {
		u.checkKnock()
	}
	if files {
		_ = u.Chat.ReloadConversations(u.ctx) // the list's errors show when it is used
		if u.BenchVM != nil {
			_ = u.BenchVM.Refresh(u.ctx) // the error shows in the history
		}
	}
	again, err := u.Chat.ReloadOpen(u.ctx)
	if err != nil {
		u.do(func() { u.ShowError(err) })
	}
	return again
}

// checkKnock shows the shared-database banner when another window opened
// the database after this one (it knocked on the lock file, lockDB).
func (u *UI) checkKnock() {
	if u.Backend.DB == nil || lockStamp(u.Backend.DBPath) == u.lockSeen {
		return
	}
	u.do(func() {
		u.banner.SetText(SharedDBNote(u.Backend.DBPath))
		u.banner.Importance = widget.WarningImportance
		u.banner.Show()
	})
}

// reopenLast opens the conversation that was open when the window last
// closed (its model chosen, its list shown), if its model is still in the
// library and can chat.
func (u *UI) reopenLast() {
	path, id := u.Prefs.LastConversation()
	if path == "" {
		return
	}
	e, ok := u.Library.Entry(path)
	if !ok || !e.Chattable() {
		return
	}
	if err := u.Chat.SetModel(u.ctx, e.Info); err != nil {
		return
	}
	for _, c := range u.Chat.State().Conversations {
		if c.ID == id {
			_ = u.Chat.OpenConversation(id) // a failure shows in the chat
			return
		}
	}
}

// quitItem is File ▸ Quit (Ctrl/Cmd+Q). Marked IsQuit so the driver adds
// no Quit of its own, which would end the app without stopping and saving
// a reply in flight.
func quitItem(quit func()) *fyne.MenuItem {
	it := item("Quit", ShortcutQuit, quit)
	it.IsQuit = true
	return it
}

// Quit stops a reply in flight (it is saved as far as it got), releases
// the model and ends the app.
func (u *UI) Quit() {
	u.Close()
	u.App.Quit()
}

// Close stops running work and releases the model.
func (u *UI) Close() {
	u.cancel()
	if u.serve != nil {
		_ = u.serve.Stop()
	}
	u.unlockDB()
	u.hold.release()
	u.Chat.Close()
}

// escEntry is an Entry that hands Esc to onEsc (closing its dialog): a
// focused Entry otherwise swallows the key, and the window never sees it.
type escEntry struct {
	widget.Entry
	onEsc func()
}

// newEscEntry is an entry for a dialog: Esc closes the top dialog.
func (u *UI) newEscEntry(multiLine bool) *escEntry {
	e := &escEntry{onEsc: u.Escape}
	e.MultiLine = multiLine
	e.ExtendBaseWidget(e)
	return e
}

func (e *escEntry) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape && e.onEsc != nil {
		e.onEsc()
		return
	}
	e.Entry.TypedKey(ev)
}

// Escape closes the top dialog or menu, else stops a reply.
func (u *UI) Escape() {
	if top := u.Win.Canvas().Overlays().Top(); top != nil {
		top.Hide()
		u.Win.Canvas().Overlays().Remove(top)
		return
	}
	u.Chat.Stop()
}

// newBenchmarksTab is the app/benchmarks view (run form, results,
// history, chart, comparison) over the database, or why there is none.
func (u *UI) newBenchmarksTab() fyne.CanvasObject {
	if u.Backend.DB == nil {
		l := widget.NewLabel("Benchmarks are stored in the database, which is not open: " +
			"choose another database file in Preferences or pass --db, then restart.")
		l.Wrapping = fyne.TextWrapWord
		return l
	}
	open := u.Backend.OpenEngine
	if open == nil {
		open = NewOpener(u.Prefs).(*engineOpener).OpenEngine
	}
	u.BenchVM = benchmarks.New(benchmarks.Deps{Runs: benchstore.NewRuns(u.Backend.DB), OpenEngine: open, AppVersion: Version})
	u.BenchVM.SetLibrary(BenchModels(u.Library.Entries()))
	u.Library.Subscribe(func() { u.BenchVM.SetLibrary(BenchModels(u.Library.Entries())) })
	return benchmarks.NewViewWith(u.ctx, u.BenchVM, u.Win, func(f func()) { u.do(f) })
}

// BenchModels are the library's runnable models as the benchmark form
// offers them.
func BenchModels(entries []LibraryEntry) []benchmarks.LibraryModel {
	var out []benchmarks.LibraryModel
	for _, e := range entries {
		if e.Runnable() {
			out = append(out, benchmarks.LibraryModel{Label: e.Label(), Path: e.Path, Tokenizer: e.Info.Companion.Tokenizer, MaxCtx: e.Info.MaxCtxLen})
		}
	}
	return out
}

// borderInOrder is container.NewBorder with its parts in reading order
// (top, left, center, right, bottom), which is the order Tab moves the
// focus in; NewBorder puts the center first.
func borderInOrder(top, bottom, left, right, center fyne.CanvasObject) *fyne.Container {
	var objs []fyne.CanvasObject
	for _, o := range []fyne.CanvasObject{top, left, center, right, bottom} {
		if o != nil {
			objs = append(objs, o)
		}
	}
	return container.New(layout.NewBorderLayout(top, bottom, left, right), objs...)
}

// coalesce returns a change handler that schedules redraw on the UI
// goroutine at most once until it has run: a burst of changes (one per
// streamed token) costs one redraw, which reads the latest state.
func (u *UI) coalesce(redraw func()) func() {
	var pending atomic.Bool
	return func() {
		if pending.CompareAndSwap(false, true) {
			u.do(func() {
				pending.Store(false)
				redraw()
			})
		}
	}
}

// SelectTab switches to the named tab.
func (u *UI) SelectTab(name string) {
	for _, t := range u.tabs.Items {
		if t.Text == name {
			u.tabs.Select(t)
		}
	}
}

// CurrentTab is the selected tab's name.
func (u *UI) CurrentTab() string { return u.tabs.Selected().Text }

// ShowError shows err in a dialog. The view-models' errors say what to do
// next.
func (u *UI) ShowError(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	lbl := widget.NewLabel(err.Error())
	lbl.Wrapping = fyne.TextWrapWord
	d := dialog.NewCustom("Something went wrong", "OK", container.NewGridWrap(fyne.NewSize(520, 160), container.NewVScroll(lbl)), u.Win)
	d.Show()
	u.errDlg = d
}

// confirmError closes the error dialog on Enter, as its OK button would,
// when it is the top one (the window gets the key when nothing else has
// the focus).
func (u *UI) confirmError() {
	if u.errDlg == nil {
		return
	}
	if top := u.Win.Canvas().Overlays().Top(); top != nil && top.Visible() {
		u.errDlg.Hide()
	}
	u.errDlg = nil
}

// AddURIs adds dropped or chosen files and folders to the library in the
// background; the returned channel closes when it is done.
func (u *UI) AddURIs(uris []fyne.URI) <-chan struct{} {
	done := make(chan struct{})
	var paths []string
	for _, x := range uris {
		if x.Scheme() != "file" {
			u.ShowError(fmt.Errorf("%s is not a local file; etchat opens .pte files from disk", x.String()))
			continue
		}
		paths = append(paths, x.Path())
	}
	if len(paths) == 0 {
		close(done)
		return done
	}
	u.SelectTab(TabModels)
	go func() {
		defer close(done)
		res := u.Library.Add(u.ctx, paths...)
		u.do(func() {
			if msg := res.Message(); msg != "" {
				u.ShowError(errors.New(msg))
			}
		})
	}()
	return done
}

// ApplyTheme sets the light, dark or system theme, and checks it in the
// View menu (also when Preferences chose it).
func (u *UI) ApplyTheme(name string) {
	u.App.Settings().SetTheme(themeFor(name))
	if u.BenchVM != nil && u.BenchVM.OnChange != nil {
		u.BenchVM.OnChange() // the charts are images: drawn again in the theme's colours
	}
	changed := false
	for n, it := range u.themeItems {
		if on := n == name; it.Checked != on {
			it.Checked, changed = on, true
		}
	}
	if changed && u.Win != nil && u.Win.MainMenu() != nil {
		u.Win.MainMenu().Refresh()
	}
}

func shortcut(key fyne.KeyName, mods fyne.KeyModifier) fyne.Shortcut {
	return &desktop.CustomShortcut{KeyName: key, Modifier: mods}
}

// Shortcuts the menu and the help box list.
var (
	ShortcutSend      = shortcut(fyne.KeyReturn, fyne.KeyModifierShortcutDefault)
	ShortcutAddFile   = shortcut(fyne.KeyO, fyne.KeyModifierShortcutDefault)
	ShortcutAddFolder = shortcut(fyne.KeyO, fyne.KeyModifierShortcutDefault|fyne.KeyModifierShift)
	ShortcutRescan    = shortcut(fyne.KeyR, fyne.KeyModifierShortcutDefault|fyne.KeyModifierShift)
	ShortcutNewConv   = shortcut(fyne.KeyN, fyne.KeyModifierShortcutDefault)
	ShortcutUndoTurn  = shortcut(fyne.KeyBackspace, fyne.KeyModifierShortcutDefault|fyne.KeyModifierShift)
	// ShortcutRedo brings back what Undo took (Ctrl/Cmd+Y stays the
	// message box's own text redo).
	ShortcutRedo       = shortcut(fyne.KeyZ, fyne.KeyModifierShortcutDefault|fyne.KeyModifierShift)
	ShortcutRegenerate = shortcut(fyne.KeyR, fyne.KeyModifierShortcutDefault)
	ShortcutEditLast   = shortcut(fyne.KeyE, fyne.KeyModifierShortcutDefault)
	ShortcutKeyHelp    = shortcut(fyne.KeySlash, fyne.KeyModifierShortcutDefault)
	ShortcutSettings   = shortcut(fyne.KeyPeriod, fyne.KeyModifierShortcutDefault)
	ShortcutPrefs      = shortcut(fyne.KeyComma, fyne.KeyModifierShortcutDefault)
	ShortcutModels     = shortcut(fyne.Key1, fyne.KeyModifierShortcutDefault)
	ShortcutChat       = shortcut(fyne.Key2, fyne.KeyModifierShortcutDefault)
	ShortcutBench      = shortcut(fyne.Key3, fyne.KeyModifierShortcutDefault)
	ShortcutQuit       = shortcut(fyne.KeyQ, fyne.KeyModifierShortcutDefault)
)

func item(label string, sc fyne.Shortcut, action func()) *fyne.MenuItem {
	it := fyne.NewMenuItem(label, action)
	it.Shortcut = sc
	return it
}

func (u *UI) menu() *fyne.MainMenu {
	file := fyne.NewMenu("File",
		item("Add Models…", ShortcutAddFile, u.lib.addPath),
		item("Add Folder…", ShortcutAddFolder, u.lib.addFolder),
		item("Rescan Library", ShortcutRescan, u.lib.rescan),
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Serve (OpenAI API)…", u.showServe),
		fyne.NewMenuItem("Measure Quality…", u.showQuality),    // ui_quality.go
		fyne.NewMenuItem("Compare Two Models…", u.showCompare), // ui_compare.go
		item("Preferences…", ShortcutPrefs, u.showPrefs),
		fyne.NewMenuItemSeparator(),
		quitItem(u.Quit),
	)
	m := &u.chat.menu
	m.newConv = item("New Conversation", ShortcutNewConv, u.chat.newConversation)
	m.send = item("Send", ShortcutSend, u.chat.send)
	m.stop = fyne.NewMenuItem("Stop (Esc)", u.Chat.Stop)
	m.undoTurn = item("Undo Last Turn", ShortcutUndoTurn, u.chat.undoTurn)
	m.undoTokens = fyne.NewMenuItem("Undo Tokens…", u.chat.undoTokensDialog)
	m.redo = item("Redo", ShortcutRedo, u.chat.redo)
	m.regen = item("Regenerate", ShortcutRegenerate, u.chat.regenerate)
	m.cont = fyne.NewMenuItem("Continue Reply", u.chat.continueReply) // chat_continue.go
	m.edit = item("Edit Last Message…", ShortcutEditLast, u.chat.editLast)
	m.reset = fyne.NewMenuItem("Reset Conversation…", u.chat.reset)
	m.tree = fyne.NewMenuItem("Branch Tree…", u.chat.showBranchTree) // ui_branch_tree.go
	m.settings = item("Conversation Settings…", ShortcutSettings, func() { u.chat.showSettings() })
	chat := fyne.NewMenu("Chat", m.newConv, m.send, m.stop, fyne.NewMenuItemSeparator(),
		m.undoTurn, m.undoTokens, m.redo, m.regen, m.cont, m.edit, m.reset, m.tree, fyne.NewMenuItemSeparator(), m.settings)
	u.themeItems = map[string]*fyne.MenuItem{}
	themeItem := func(label, name string) *fyne.MenuItem {
		it := fyne.NewMenuItem(label, func() {
			if err := u.Prefs.SetTheme(name); err != nil {
				u.ShowError(err)
				return
			}
			u.ApplyTheme(name)
		})
		it.Checked = u.Prefs.Theme() == name // the menu shows the theme in use
		u.themeItems[name] = it
		return it
	}
	view := fyne.NewMenu("View",
		item("Models", ShortcutModels, func() { u.SelectTab(TabModels) }),
		item("Chat", ShortcutChat, func() { u.SelectTab(TabChat) }),
		item("Benchmarks", ShortcutBench, func() { u.SelectTab(TabBenchmarks) }),
		fyne.NewMenuItemSeparator(),
		themeItem("Light Theme", "light"),
		themeItem("Dark Theme", "dark"),
		themeItem("System Theme", "system"),
	)
	help := fyne.NewMenu("Help",
		item("Keyboard Shortcuts", ShortcutKeyHelp, u.showShortcuts),
		fyne.NewMenuItem("About etchat", u.showAbout),
	)
	return fyne.NewMainMenu(file, chat, view, u.conversationsMenu(), help)
}

// modKey names the shortcut modifier: Cmd on macOS, Ctrl elsewhere.
func modKey() string {
	if runtime.GOOS == "darwin" {
		return "Cmd"
	}
	return "Ctrl"
}

// ShortcutHelp is the keyboard help text.
func ShortcutHelp() string {
	mod := modKey()
	rows := [][2]string{
		{"Enter", "send the message (Shift+Enter: new line; swap in Preferences)"},
		{mod + "+Enter", "send the message"},
		{"Esc", "close the dialog, or stop generating"},
		{mod + "+R", "regenerate the last reply"},
		{mod + "+E", "edit the last message"},
		{mod + "+Shift+Backspace", "undo the last turn"},
		{mod + "+Shift+Z", "redo: bring back what undo took"},
		{mod + "+N", "new conversation"},
		{mod + "+.", "conversation settings"},
		{mod + "+O / " + mod + "+Shift+O", "add a model file / folder"},
		{mod + "+Shift+R", "rescan the library"},
		{mod + "+1/2/3", "Models / Chat / Benchmarks"},
		{mod + "+,", "preferences"},
		{mod + "+/", "this list"},
		{mod + "+Q", "quit (a reply in progress is stopped and saved)"},
		{"Tab / Shift+Tab", "move between fields and buttons"},
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s %s\n", r[0], r[1])
	}
	return b.String()
}

func (u *UI) showShortcuts() {
	lbl := widget.NewLabel(ShortcutHelp())
	lbl.TextStyle = fyne.TextStyle{Monospace: true}
	dialog.ShowCustom("Keyboard Shortcuts", "Close", lbl, u.Win)
}

// Version is shown in the about box; main sets it.
var Version = "dev"

func (u *UI) showAbout() {
	db := u.Backend.DBPath
	if db == "" {
		db = "(not open)"
	}
	msg := fmt.Sprintf("etchat %s\nChat with and measure ExecuTorch MLX .pte language models.\n\nDatabase: %s", Version, db)
	lbl := widget.NewLabel(msg)
	lbl.Wrapping = fyne.TextWrapWord
	link, _ := url.Parse("https://github.com/pytorch/executorch")
	content := container.NewVBox(lbl, widget.NewHyperlink("ExecuTorch", link))
	dialog.ShowCustom("About etchat", "Close", container.NewGridWrap(fyne.NewSize(460, 150), content), u.Win)
}

// prefsSheet is the preferences dialog's widgets.
type prefsSheet struct {
	db, lib *escEntry
	engine  *widget.Select
	theme   *widget.Select
	enterNL *widget.Check
	msg     *widget.Label
	content fyne.CanvasObject
}

func (u *UI) newPrefsSheet() *prefsSheet {
	s := &prefsSheet{db: u.newEscEntry(false), lib: u.newEscEntry(false), engine: widget.NewSelect(Engines(), nil),
		theme: widget.NewSelect(Themes, nil), msg: widget.NewLabel(""),
		enterNL: widget.NewCheck("Enter starts a new line ("+modKey()+"+Enter sends)", nil)}
	s.enterNL.SetChecked(u.Prefs.EnterNewline())
	s.db.SetText(u.Prefs.DBPath())
	s.db.SetPlaceHolder(u.Backend.DBPath)
	s.lib.SetText(u.Prefs.RunnerLibrary())
	s.lib.SetPlaceHolder("search the usual places")
	s.engine.SetSelected(u.Prefs.Engine())
	s.theme.SetSelected(u.Prefs.Theme())
	s.msg.Wrapping = fyne.TextWrapWord
	form := widget.NewForm(
		widget.NewFormItem("Database", s.db),
		widget.NewFormItem("Runner library", s.lib),
		widget.NewFormItem("Default engine", s.engine),
		widget.NewFormItem("Theme", s.theme),
		widget.NewFormItem("Message box", s.enterNL),
	)
	note := widget.NewLabel("The database path takes effect when etchat starts again (--db on the command line wins).")
	note.Wrapping = fyne.TextWrapWord
	s.content = container.NewVBox(form, note, s.msg)
	return s
}

func (u *UI) savePrefs(s *prefsSheet) error {
	if err := u.Prefs.Save(s.db.Text, s.lib.Text, s.engine.Selected); err != nil {
		return err
	}
	if err := u.Prefs.SetTheme(s.theme.Selected); err != nil {
		return err
	}
	u.ApplyTheme(s.theme.Selected)
	u.Chat.SetDefaultEngine(s.engine.Selected)
	u.Prefs.SetEnterNewline(s.enterNL.Checked)
	u.chat.input.SetPlaceHolder(composerHint(s.enterNL.Checked))
	return nil
}

func (u *UI) showPrefs() {
	s := u.newPrefsSheet()
	var d *dialog.CustomDialog
	save := widget.NewButtonWithIcon("Save", theme.ConfirmIcon(), func() {
		if err := u.savePrefs(s); err != nil {
			s.msg.SetText(err.Error())
			s.msg.Importance = widget.DangerImportance
			s.msg.Refresh()
			return
		}
		d.Hide()
	})
	save.Importance = widget.HighImportance
	cancel := widget.NewButton("Cancel", func() { d.Hide() })
	d = dialog.NewCustomWithoutButtons("Preferences", container.NewGridWrap(fyne.NewSize(560, 300), s.content), u.Win)
	d.SetButtons([]fyne.CanvasObject{cancel, save})
	d.Show()
}

// Icon is the app icon.
var Icon = fyne.NewStaticResource("icon.png", resources.IconPNG)
