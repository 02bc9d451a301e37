package app

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/inference"
	"etchat/inference/stats"
	"etchat/internal/fixtures"
	"etchat/store"
)

// uiModels is a fixed folder (so the markup masters do not depend on the
// temp dir's name) holding the fixtures as a user would: llama3 and gemma3
// with their tokenizers, the in-graph llama3 without.
func uiModels(t *testing.T) string {
	t.Helper()
	// A path of fixed length: wrapped paths split at the same places on
	// every run, so the masters hold.
	root := filepath.Join(os.TempDir(), fmt.Sprintf("etchat-ui-%010d-%s", os.Getpid(), t.Name()[:min(len(t.Name()), 12)]), "models")
	os.RemoveAll(filepath.Dir(root))
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(root)) })
	for _, n := range []string{fixtures.Llama3, fixtures.Gemma3} {
		p := modelCopy(t, n, true)
		os.MkdirAll(root, 0o755)
		if err := os.Rename(filepath.Dir(p), filepath.Join(root, n)); err != nil {
			t.Fatal(err)
		}
	}
	p := modelCopy(t, fixtures.InGraph, false)
	if err := os.Rename(filepath.Dir(p), filepath.Join(root, fixtures.InGraph)); err != nil {
		t.Fatal(err)
	}
	return root
}

// newTestUI builds the window over the real backend with the fixture
// models in its library.
func newTestUI(t *testing.T) (*UI, string) {
	t.Helper()
	a := test.NewTempApp(t)
	b, _ := testBackend(t)
	u := NewUI(a, b)
	q := &uiQueue{}
	u.do = q.post
	queues.Store(u, q)
	t.Cleanup(u.Close)
	u.Win.Resize(fyne.NewSize(1100, 720))
	root := uiModels(t)
	done := make(chan struct{})
	u.Start([]string{root}, done)
	<-done
	settle(u)
	return u, root
}

// uiQueue stands in for the driver's UI goroutine: updates posted from
// the view-models' goroutines wait here until the test goroutine runs
// them (settle), so widgets are only touched from one goroutine.
type uiQueue struct {
	mu  sync.Mutex
	fns []func()
}

func (q *uiQueue) post(f func()) {
	q.mu.Lock()
	q.fns = append(q.fns, f)
	q.mu.Unlock()
}

var queues sync.Map // *UI → *uiQueue

// settle waits for the chat's running action and runs the queued updates.
func settle(u *UI) {
	u.Chat.Wait()
	q, _ := queues.Load(u)
	for {
		q.(*uiQueue).mu.Lock()
		fns := q.(*uiQueue).fns
		q.(*uiQueue).fns = nil
		q.(*uiQueue).mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, f := range fns {
			f()
		}
	}
}

var (
	reRate  = regexp.MustCompile(`[0-9.]+ tok/s`)
	reTTFT  = regexp.MustCompile(`TTFT [0-9]+ ms`)
	reDate  = regexp.MustCompile(`[A-Z][a-z]{2} [0-9]{1,2} [0-9]{2}:[0-9]{2}`)
	reSize  = regexp.MustCompile(`size="[0-9]+x[0-9]+"`)
	updMast = os.Getenv("ETCHAT_UPDATE_MASTERS") != ""
)

// assertMarkup compares the canvas's markup, with machine-dependent text
// (the temp folder, measured rates, dates) normalised, against
// testdata/NAME. A mismatch writes the candidate to testdata/failed/.
func assertMarkup(t *testing.T, name string, c fyne.Canvas, root string) {
	t.Helper()
	checkFonts(t, name, c)
	if dir := os.Getenv("ETCHAT_UI_PNG"); dir != "" { // look at what the test sees
		if f, err := os.Create(filepath.Join(dir, strings.TrimSuffix(name, ".xml")+".png")); err == nil {
			png.Encode(f, c.Capture())
			f.Close()
		}
	}
	if os.TempDir() != "/tmp" {
		t.Logf("%s not compared: the masters are made with models under /tmp", name)
		return
	}
	got := test.RenderToMarkup(c)
	got = strings.ReplaceAll(got, root, "$MODELS")
	got = reRate.ReplaceAllString(got, "N tok/s")
	got = reTTFT.ReplaceAllString(got, "TTFT N ms")
	got = reDate.ReplaceAllString(got, "DATE")
	lines := strings.Split(got, "\n")
	for i, l := range lines {
		if strings.Contains(l, "N tok/s") || strings.Contains(l, "DATE") { // measured text: its width varies
			lines[i] = reSize.ReplaceAllString(l, `size="WxH"`)
		}
	}
	got = strings.Join(lines, "\n")
	path := filepath.Join("testdata", name)
	want, err := os.ReadFile(path)
	if updMast {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(path, []byte(got), 0o644)
		return
	}
	if err != nil || string(want) != got {
		failed := filepath.Join("testdata", "failed", name)
		os.MkdirAll(filepath.Dir(failed), 0o755)
		os.WriteFile(failed, []byte(got), 0o644)
		t.Errorf("%s does not match its master (%v); candidate written to %s", name, err, failed)
	}
}

func TestModelsView(t *testing.T) {
	u, root := newTestUI(t)
	v := u.lib
	if got := v.list.Length(); got != 3 {
		t.Fatalf("list has %d rows", got)
	}
	u.Library.Select("")
	settle(u)
	if !v.noSel.Visible() || v.details.Visible() {
		t.Error("details shown with nothing selected")
	}
	llama := filepath.Join(root, fixtures.Llama3, "model.pte")
	v.list.Select(2) // sorted: gemma3, in-graph, llama3
	settle(u)
	if sel, ok := u.Library.Selected(); !ok || sel.Path != llama {
		t.Fatalf("selected %v", sel.Path)
	}
	if v.title.Text != fixtures.Llama3 || !v.details.Visible() || !v.chatBtn.Visible() || v.chatBtn.Disabled() {
		t.Errorf("details title %q, chat button disabled %v", v.title.Text, v.chatBtn.Disabled())
	}
	if !strings.Contains(v.memory.Text, "capacity 128, bf16") {
		t.Errorf("memory %q", v.memory.Text)
	}
	assertMarkup(t, "models.xml", u.Win.Canvas(), root)

	// The estimate follows the fields.
	test.Type(v.capacity, "64")
	settle(u)
	v.dtype.SetSelected("fp32")
	settle(u)
	if !strings.Contains(v.memory.Text, "capacity 64, fp32") || v.layerRow[0][7] != "16.0 KiB" {
		t.Errorf("after 64/fp32: %q, layer 0 %v", v.memory.Text, v.layerRow[0])
	}
	test.Type(v.capacity, "x")
	settle(u)
	if !strings.Contains(v.memory.Text, `"64x" is not a positive whole number`) || v.memory.Importance != widget.DangerImportance || len(v.layerRow) != 0 {
		t.Errorf("bad capacity: %q", v.memory.Text)
	}

	// The in-graph model cannot chat and says why.
	v.list.Select(1)
	settle(u)
	if !v.chatBtn.Disabled() || !strings.Contains(v.memory.Text, "inside the graph") {
		t.Errorf("in-graph: chat enabled %v, memory %q", !v.chatBtn.Disabled(), v.memory.Text)
	}

	// Chat button: switches to the chat with the model.
	v.list.Select(2)
	settle(u)
	test.Tap(v.chatBtn)
	settle(u)
	waitFor(t, func() bool { st := u.Chat.State(); return st.Model != nil && st.Model.Path == llama })
	settle(u)
	if u.CurrentTab() != TabChat {
		t.Errorf("tab %q", u.CurrentTab())
	}
}

// waitFor polls cond (for work the view starts on its own goroutine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	// Patient: under -race on a loaded 2-core machine a store poll and a
	// redraw can take seconds; a condition met returns at once.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		sleepMs(10)
	}
	t.Fatal("condition not reached in 30 s")
}

func TestDropAddsAndExplains(t *testing.T) {
	u, _ := newTestUI(t)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("x"), 0o644)
	broken := filepath.Join(t.TempDir(), "broken.pte")
	os.WriteFile(broken, []byte("nope"), 0o644)
	u.SelectTab(TabBenchmarks)
	<-u.AddURIs([]fyne.URI{storage.NewFileURI(notes), storage.NewFileURI(broken)})
	settle(u)
	if u.CurrentTab() != TabModels {
		t.Errorf("drop did not show the library")
	}
	e, ok := u.Library.Entry(broken)
	if !ok || e.Badge() != "unreadable" {
		t.Fatalf("broken file: %v %q", ok, e.Badge())
	}
	top := u.Win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no dialog for the refused file")
	}
	if m := test.RenderObjectToMarkup(top); !strings.Contains(m, "notes.txt is not a .pte file") {
		t.Errorf("dialog:\n%s", m)
	}
	// the selected broken model explains itself in the details pane
	u.Library.Select(broken)
	settle(u)
	found := false
	objs := u.lib.facts.Objects
	for i := 0; i+1 < len(objs); i += 2 {
		if objs[i].(*widget.Label).Text == "Problem" && objs[i+1].(*widget.Label).Text != "" {
			found = true
		}
	}
	if !found {
		t.Error("no Problem line for the broken file")
	}
}

func TestChatView(t *testing.T) {
	u, root := newTestUI(t)
	ref := llamaReference(t).Cases[0]
	llama := filepath.Join(root, fixtures.Llama3, "model.pte")
	e, _ := u.Library.Entry(llama)
	v := u.chat
	u.SelectTab(TabChat)
	if len(v.model.Options) != 2 { // the in-graph model has no tokenizer: not offered
		t.Errorf("model options %v", v.model.Options)
	}
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if v.model.Selected != fixtures.Llama3 || !strings.Contains(v.title.Text, "type a message to start") {
		t.Errorf("selector %q title %q", v.model.Selected, v.title.Text)
	}
	if err := u.Chat.NewConversation(greedy(16)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if v.meterText != "0 / 128 tokens · nothing to undo yet" {
		t.Errorf("meter %q", v.meterText)
	}

	// Type and press Ctrl/Cmd+Enter.
	test.Type(v.input, ref.Prompt)
	settle(u)
	v.input.TypedShortcut(ShortcutSend)
	settle(u)
	if v.input.Text != "" {
		t.Errorf("composer not cleared: %q", v.input.Text)
	}
	md := test.RenderObjectToMarkup(v.transcript)
	if !strings.Contains(md, ref.Prompt) || !strings.Contains(md, "16 generated") {
		t.Errorf("transcript:\n%s", md)
	}
	if got := u.Chat.State().Messages[1].Text; got != ref.GreedyText {
		t.Errorf("reply %q", got)
	}
	if v.meterText != "33 / 128 tokens · undo is instant" || v.meter.Value <= 0.25 || v.meter.Value >= 0.26 {
		t.Errorf("meter %q %v", v.meterText, v.meter.Value)
	}
	if v.stopBtn.Disabled() == false || v.sendBtn.Disabled() {
		t.Error("buttons: stop should be disabled and send enabled when idle")
	}
	if len(v.convs) != 1 || v.convs[0].Title != ref.Prompt {
		t.Errorf("conversation list %+v", v.convs)
	}
	assertMarkup(t, "chat.xml", u.Win.Canvas(), root)
	// the reply is stored as a run
	if runs, err := u.Backend.DB.ListRuns(context.Background(), store.RunFilter{Kind: "chat"}); err != nil || len(runs) != 1 ||
		runs[0].ModelName != fixtures.Llama3 || runs[0].Stats.NumGeneratedTokens != 16 {
		t.Errorf("stored runs %+v %v", runs, err)
	}

	// Esc in the composer stops.
	stopped := false
	v.input.onStop = func() { stopped = true }
	v.input.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if !stopped {
		t.Error("Esc did not stop")
	}

	// Undo tokens via the field; a bad number is explained.
	v.undoN.SetText("2")
	v.undoTokens()
	settle(u)
	if v.meterText != "31 / 128 tokens · undo is instant" {
		t.Errorf("after undo 2: %q", v.meterText)
	}
	v.undoN.SetText("two")
	v.undoTokens()
	if top := u.Win.Canvas().Overlays().Top(); top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "not a whole number") {
		t.Error("no dialog for a bad token count")
	} else {
		u.Win.Canvas().Overlays().Remove(top)
	}
	test.Tap(findButton(t, v.root, "Undo Turn"))
	settle(u)
	if v.meterText != "0 / 128 tokens · nothing to undo yet" || !strings.Contains(test.RenderObjectToMarkup(v.transcript), "Type a message below") {
		t.Errorf("after undo turn: %q", v.meterText)
	}
}

// findButton finds the button labelled text under o.
func findButton(t *testing.T, o fyne.CanvasObject, text string) *widget.Button {
	t.Helper()
	for _, obj := range test.LaidOutObjects(o) {
		if b, ok := obj.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	t.Fatalf("no %q button", text)
	return nil
}

func TestSettingsSheet(t *testing.T) {
	u, root := newTestUI(t)
	gemma := filepath.Join(root, fixtures.Gemma3, "model.pte")
	e, _ := u.Library.Entry(gemma)
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	settle(u)
	s := u.chat.showSettings()
	if s == nil {
		t.Fatal("no sheet")
	}
	if !strings.HasPrefix(s.summary.Text, "4 layers: 1 flat + 3 ring(window 8)") {
		t.Errorf("summary %q", s.summary.Text)
	}
	assertMarkup(t, "settings.xml", u.Win.Canvas(), root)
	apply := findButton(t, u.Win.Canvas().Overlays().Top(), "Apply")
	below := fyne.CurrentApp().Driver().AbsolutePositionForObject(s.entries["Temperature"])
	test.Type(s.entries["Windows"], "4,x")
	settle(u)
	if msg := s.errs["Windows"]; !strings.Contains(msg.Text, `"4,x": "x" is not a window size`) || !apply.Disabled() ||
		!strings.HasPrefix(s.summary.Text, "One field to fix before applying:\nWindows: ") {
		t.Errorf("windows message %q, apply disabled %v, summary %q", msg.Text, apply.Disabled(), s.summary.Text)
	}
	// The message does not push the fields below it down.
	if now := fyne.CurrentApp().Driver().AbsolutePositionForObject(s.entries["Temperature"]); now != below {
		t.Errorf("the field below moved from %v to %v", below, now)
	}
	s.entries["Windows"].SetText("4,4,0,4")
	if strings.TrimSpace(s.errs["Windows"].Text) != "" || apply.Disabled() || !strings.HasPrefix(s.summary.Text, "4 layers: 1 flat + 3 ring(window 4)") {
		t.Errorf("after a valid window: %q", s.summary.Text)
	}
	// No conversation open: applying stores the settings for the next one.
	test.Tap(apply)
	settle(u)
	if got := u.Chat.State().Settings.Windows; got != "4,4,0,4" {
		t.Errorf("applied windows %q", got)
	}
	// in-graph: the cache fields are fixed
	ig, _ := u.Library.Entry(filepath.Join(root, fixtures.InGraph, "model.pte"))
	sh := newSettingsSheet(NewSettingsForm(DefaultSettings("cpu"), ig.Info), u.newEscEntry)
	if !sh.entries["Capacity"].Disabled() || !sh.selects["StorageDType"].Disabled() || sh.entries["Temperature"].Disabled() {
		t.Error("in-graph sheet: cache fields should be fixed, sampling editable")
	}
}

func TestBenchmarksView(t *testing.T) {
	u, root := newTestUI(t)
	// The Benchmarks tab is the app/benchmarks view, its run form offering
	// the library's runnable models.
	if u.BenchVM == nil || u.tabs.Items[2].Content != u.benchObj {
		t.Fatal("the benchmarks view is not installed")
	}
	var labels []string
	for _, m := range u.BenchVM.Library() {
		labels = append(labels, m.Label)
	}
	if strings.Join(labels, ",") != fixtures.Gemma3+","+fixtures.InGraph+","+fixtures.Llama3 {
		t.Errorf("run form models %v", labels)
	}
	u.SelectTab(TabBenchmarks)
	settle(u)
	_ = root

	// Without a database the tab says so.
	a := test.NewTempApp(t)
	b, _ := testBackend(t)
	b.DB, b.StoreErr = nil, errors.New("no database")
	u2 := NewUI(a, b)
	t.Cleanup(u2.Close)
	if l, ok := u2.benchObj.(*widget.Label); !ok || !strings.Contains(l.Text, "database, which is not open") || u2.BenchVM != nil {
		t.Errorf("tab without a database: %T", u2.benchObj)
	}
}

func TestStoreFailureBannerAndPrefs(t *testing.T) {
	a := test.NewTempApp(t)
	storeErr := explainStoreErr("/x/etchat.db", errors.New("permission denied"))
	u := NewUI(a, Backend{Inspector: NewInspector(), Opener: hermeticOpener(), StoreErr: storeErr})
	t.Cleanup(u.Close)
	if !u.banner.Visible() || !strings.Contains(u.banner.Text, "saves nothing") || !strings.Contains(u.banner.Text, "Preferences") {
		t.Errorf("banner %q", u.banner.Text)
	}
	// the library still works without a database
	res := u.Library.Add(context.Background(), fixtures.PTE(fixtures.Llama3))
	if len(res.Added) != 1 || len(res.Problems) != 0 {
		t.Errorf("add without a store: %+v", res)
	}

	s := u.newPrefsSheet()
	if s.engine.Selected != "auto" || s.theme.Selected != "system" {
		t.Errorf("defaults %q %q", s.engine.Selected, s.theme.Selected)
	}
	s.lib.SetText("/nonexistent/libetchat_runner.dylib")
	if err := u.savePrefs(s); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("missing runner library: %v", err)
	}
	s.db.SetText(t.TempDir())
	s.lib.SetText("")
	if err := u.savePrefs(s); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("folder as database: %v", err)
	}
	db := filepath.Join(t.TempDir(), "other.db")
	s.db.SetText(db)
	s.engine.SetSelected("cpu")
	s.theme.SetSelected("light")
	if err := u.savePrefs(s); err != nil {
		t.Fatal(err)
	}
	if u.Prefs.DBPath() != db || u.Prefs.Engine() != "cpu" || u.Prefs.Theme() != "light" {
		t.Errorf("prefs %q %q %q", u.Prefs.DBPath(), u.Prefs.Engine(), u.Prefs.Theme())
	}
	if got := a.Settings().Theme().Color(theme.ColorNameBackground, theme.VariantDark); got != theme.DefaultTheme().Color(theme.ColorNameBackground, theme.VariantLight) {
		t.Errorf("light theme not applied: %v", got)
	}
	// new conversations use the default engine
	if got := u.Chat.defEng; got != "cpu" {
		t.Errorf("chat default engine %q", got)
	}
	if p, _ := DBPath("", u.Prefs, func(string) string { return "" }); p != db {
		t.Errorf("DBPath %q, want the preference %q", p, db)
	}
	if p, _ := DBPath("/flag.db", u.Prefs, func(string) string { return "" }); p != "/flag.db" {
		t.Errorf("--db should win: %q", p)
	}
}

func TestParseArgs(t *testing.T) {
	o, err := ParseArgs([]string{"--db", "/x.db", "--add", "a.pte", "--add", "dir"})
	if err != nil || o.DB != "/x.db" || len(o.Models) != 2 {
		t.Errorf("%+v %v", o, err)
	}
	if _, err := ParseArgs([]string{"--bogus"}); err == nil || !strings.Contains(err.Error(), "--db PATH") {
		t.Errorf("bogus flag: %v", err)
	}
	if _, err := ParseArgs([]string{"--db", "/x.db", "extra"}); err == nil {
		t.Error("extra argument accepted")
	}
}

func TestMenuShortcuts(t *testing.T) {
	u, _ := newTestUI(t)
	menu := u.Win.MainMenu()
	seen := map[string]bool{}
	for _, m := range menu.Items {
		for _, it := range m.Items {
			if it.Shortcut != nil {
				if seen[it.Shortcut.ShortcutName()] {
					t.Errorf("shortcut %s used twice", it.Shortcut.ShortcutName())
				}
				seen[it.Shortcut.ShortcutName()] = true
			}
		}
	}
	if !seen[ShortcutSend.ShortcutName()] || len(menu.Items) != 5 { // File, Chat, View, Conversations, Help
		t.Errorf("menus %d, send shortcut %v", len(menu.Items), seen[ShortcutSend.ShortcutName()])
	}
	if h := ShortcutHelp(); !strings.Contains(h, "+Enter") || !strings.Contains(h, "Esc") {
		t.Errorf("help %q", h)
	}
}

func sleepMs(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }

// Delete File asks first; until the user confirms the file stays.
func TestDeleteFileAsksFirst(t *testing.T) {
	u, _ := newTestUI(t)
	victim := filepath.Join(t.TempDir(), "victim.pte")
	data, err := os.ReadFile(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(victim, data, 0o644)
	<-u.AddURIs([]fyne.URI{storage.NewFileURI(victim)})
	settle(u)
	if sel, _ := u.Library.Selected(); sel.Path != victim {
		t.Fatalf("selected %q", sel.Path)
	}
	test.Tap(u.lib.deleteBtn)
	top := u.Win.Canvas().Overlays().Top()
	if top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "cannot be undone") {
		t.Fatal("no confirmation")
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatal("deleted before the user confirmed")
	}
	test.Tap(findButton(t, top, "No"))
	settle(u)
	if _, err := os.Stat(victim); err != nil {
		t.Error("deleted although the user said no")
	}
	test.Tap(u.lib.deleteBtn)
	test.Tap(findButton(t, u.Win.Canvas().Overlays().Top(), "Yes"))
	waitFor(t, func() bool { _, err := os.Stat(victim); return err != nil })
	waitFor(t, func() bool { _, ok := u.Library.Entry(victim); return !ok })
	settle(u)
}

// gateInspector holds the second inspection until gate closes.
type gateInspector struct {
	Inspector
	calls atomic.Int32
	gate  chan struct{}
}

func (g *gateInspector) Inspect(ctx context.Context, path string) (*ModelInfo, error) {
	if g.calls.Add(1) == 2 {
		<-g.gate
	}
	return g.Inspector.Inspect(ctx, path)
}

func TestStartShowsInspectionProgress(t *testing.T) {
	a := test.NewTempApp(t)
	b, _ := testBackend(t)
	root := uiModels(t)
	if res := NewLibrary(b.Inspector, b.Library).Add(context.Background(), root); len(res.Added) != 3 {
		t.Fatalf("added %v", res.Added)
	}
	gi := &gateInspector{Inspector: b.Inspector, gate: make(chan struct{})}
	b.Inspector = gi
	u := NewUI(a, b)
	q := &uiQueue{}
	u.do = q.post
	queues.Store(u, q)
	t.Cleanup(u.Close)
	done := make(chan struct{})
	u.Start(nil, done) // returns at once; the window stays usable

	// The first model is in, the second is being read.
	waitFor(t, func() bool { return u.Library.Scanning().Done == 1 })
	settle(u)
	v := u.lib
	if !v.scanBox.Visible() || !strings.HasPrefix(v.scanText.Text, "Inspecting 2 of 3: ") || v.scanBar.Value < 0.33 || v.scanBar.Value > 0.34 {
		t.Errorf("progress shown %v: %q at %v", v.scanBox.Visible(), v.scanText.Text, v.scanBar.Value)
	}
	if v.list.Length() != 1 || v.empty.Visible() {
		t.Errorf("list has %d rows while reading, empty note shown %v", v.list.Length(), v.empty.Visible())
	}
	u.SelectTab(TabBenchmarks)
	if u.CurrentTab() != TabBenchmarks {
		t.Error("tabs do not switch while the library loads")
	}

	close(gi.gate)
	<-done
	settle(u)
	if v.scanBox.Visible() || v.list.Length() != 3 || u.Library.Scanning().Active() {
		t.Errorf("after loading: progress shown %v, %d rows", v.scanBox.Visible(), v.list.Length())
	}
}

// focusOrder presses Tab from nothing focused until the focus comes back
// round, and returns where each object came.
func focusOrder(c fyne.Canvas) map[fyne.Focusable]int {
	c.Unfocus()
	order := map[fyne.Focusable]int{}
	for i := 0; i < 60; i++ {
		c.FocusNext()
		f := c.Focused()
		if _, seen := order[f]; seen || f == nil {
			break
		}
		order[f] = i
	}
	return order
}

func TestKeyboardFocusOrderAndSend(t *testing.T) {
	u, root := newTestUI(t)
	c := u.Win.Canvas()
	lib := u.lib
	// Models: the toolbar, then the list, then the estimate's fields.
	order := focusOrder(c)
	before := func(a, b fyne.Focusable, what string) {
		t.Helper()
		ia, oka := order[a]
		ib, okb := order[b]
		if !oka || !okb || ia >= ib {
			t.Errorf("%s: tab order %d (%v) then %d (%v)", what, ia, oka, ib, okb)
		}
	}
	before(findButton(t, lib.root, "Add…"), lib.list, "Add before the list")
	before(lib.list, lib.capacity, "list before the capacity field")

	u.SelectTab(TabChat)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(2)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	v := u.chat
	order = focusOrder(c)
	before(v.model, v.newBtn, "model before New Conversation")
	before(v.newBtn, v.settings, "side bar before the chat")
	before(v.settings, v.input, "header before the composer")
	before(v.input, v.sendBtn, "composer before Send")

	// Pressing Send leaves the focus in the composer, so Esc stops.
	test.Type(v.input, "Hi")
	test.Tap(v.sendBtn)
	settle(u)
	if c.Focused() != v.input {
		t.Errorf("focus after Send: %T", c.Focused())
	}
	// The menu's shortcuts are all different and the help lists them.
	for _, sc := range []fyne.Shortcut{ShortcutEditLast, ShortcutKeyHelp} {
		found := false
		for _, m := range u.Win.MainMenu().Items {
			for _, it := range m.Items {
				found = found || (it.Shortcut != nil && it.Shortcut.ShortcutName() == sc.ShortcutName())
			}
		}
		if !found {
			t.Errorf("no menu item for %s", sc.ShortcutName())
		}
	}
	if h := ShortcutHelp(); !strings.Contains(h, "+E ") || !strings.Contains(h, "+/ ") {
		t.Errorf("help %q", h)
	}
}

func TestTranscriptMarksIncompleteReply(t *testing.T) {
	u, _ := newTestUI(t)
	v := u.chat
	v.drawTranscript(ChatState{Loaded: true, Messages: []Message{
		{Role: "user", Text: "Tell me about the sea."},
		{Role: "assistant", Text: "The sea is", IDs: []int{1, 2, 3}, StopReason: StopIncomplete},
	}})
	var text strings.Builder
	for _, seg := range transcriptSegs(v) {
		text.WriteString(seg.Textual())
		text.WriteString("\n")
	}
	if md := text.String(); !strings.Contains(md, "The sea is") || !strings.Contains(md, "incomplete: etchat stopped before this reply finished") {
		t.Errorf("transcript:\n%s", md)
	}
	if MessageNote(Message{Role: "assistant", Stats: &inference.Stats{Stats: stats.Stats{NumGeneratedTokens: 3}}}) == IncompleteNote() {
		t.Error("a finished reply is marked incomplete")
	}
}

// At 800×600 and 1280×800, in both themes, the chat's action row and the
// side bar fit the window: no button reaches past the right edge, and the
// side bar's buttons fit the side bar.
func TestChatFitsSmallAndLargeWindows(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	u.SelectTab(TabChat)
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	v := u.chat
	if err := u.Chat.Send("Hello"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		for _, sz := range []fyne.Size{{Width: 800, Height: 600}, {Width: 1280, Height: 800}} {
			u.Win.Resize(sz)
			settle(u)
			width := u.Win.Canvas().Size().Width
			d := fyne.CurrentApp().Driver()
			for _, b := range []*widget.Button{v.sendBtn, v.stopBtn, v.undoBtn, v.regenBtn, v.moreBtn, v.settings} {
				if p := d.AbsolutePositionForObject(b); p.X+b.Size().Width > width+0.5 || !b.Visible() {
					t.Errorf("%s %v: %q ends at %.0f of %.0f", th, sz, b.Text, p.X+b.Size().Width, width)
				}
			}
			assertMarkup(t, fmt.Sprintf("chat-%dx%d-%s.xml", int(sz.Width), int(sz.Height), th), u.Win.Canvas(), root)
			side := v.root.(*container.Split).Leading
			for _, b := range []*widget.Button{v.newBtn, v.delBtn} {
				if b.MinSize().Width > side.Size().Width {
					t.Errorf("%s %v: %q needs %.0f, the side bar is %.0f", th, sz, b.Text, b.MinSize().Width, side.Size().Width)
				}
			}
		}
	}
}
