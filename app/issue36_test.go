package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/internal/fixtures"
)

// Issue 36 item 2: a message sent when the model fails to load (here the
// native engine, whose runner library this test environment does not
// have) goes back into the box, and the red line says it once: the
// model's path is not repeated, and the error is the typed LoadError the
// window shows without a dialog on top.
func TestSendWhenTheModelFailsToLoadKeepsTheText(t *testing.T) {
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	c, errs := newTestChat(t, b, inspect(t, path))
	s := greedy(4)
	s.Engine = "mlx"
	if err := c.ApplySettings(s); err != nil { // no session yet: the settings are kept for the next one
		t.Fatal(err)
	}
	const text = "Hello, are you there?"
	if err := c.Send(text); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	st := c.State()
	if st.Restore != text || st.Draft != text {
		t.Errorf("after the failed load the box gets %q (draft %q), want %q", st.Restore, st.Draft, text)
	}
	if len(*errs) != 1 {
		t.Fatalf("%d errors reported: %v", len(*errs), *errs)
	}
	var load *LoadError
	var lib *engine.LibraryError
	if !errors.As((*errs)[0], &load) || !errors.As((*errs)[0], &lib) || !saidInRedLine((*errs)[0]) {
		t.Errorf("the error %T (%v) is not a LoadError of the missing library, said in the red line", (*errs)[0], (*errs)[0])
	}
	if st.Err == "" || strings.Count(st.Err, filepath.Dir(path)) > 1 {
		t.Errorf("the red line names the model's folder %d times: %q", strings.Count(st.Err, filepath.Dir(path)), st.Err)
	}
	if st.Loaded || st.ConvID != 0 {
		t.Errorf("after the failed load: loaded %v, conversation %d", st.Loaded, st.ConvID)
	}
}

// Issue 36 item 3: a tokenizer.json that is not JSON is found when the
// library reads the model: the row says "tokenizer unusable", Chat is off
// with the reason, and the details' Tokenizer row carries it; a broken
// tokenizer_config.json is named in its own row, not in the Kind row.
func TestLibraryChecksTheTokenizerWhenScanning(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	tok := filepath.Join(filepath.Dir(path), "tokenizer.json")
	if err := os.Remove(tok); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, []byte(`{"model": {"type": "BPE", `), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := NewLibrary(b.Inspector, b.Library)
	if res := lib.Add(ctx, path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	e, ok := lib.Entry(path)
	if !ok {
		t.Fatal("not in the library")
	}
	var te *inference.TokenizerError
	if !errors.As(e.ChatErr, &te) {
		t.Fatalf("scan found %v, want a TokenizerError", e.ChatErr)
	}
	if e.Chattable() || !strings.Contains(e.ChatBlocked(), tok) || !strings.HasPrefix(e.Row(), "tokenizer unusable, template found") {
		t.Errorf("chattable %v, blocked %q, row %q", e.Chattable(), e.ChatBlocked(), e.Row())
	}
	facts := modelFacts(e)
	if i := slices.IndexFunc(facts, func(f [2]string) bool { return f[0] == "Tokenizer" }); i < 0 || !strings.Contains(facts[i][1], "cannot be used") {
		t.Errorf("Tokenizer row %v", facts)
	}

	// Repaired, a rescan makes it chattable again.
	good, err := os.ReadFile(filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, good, 0o644); err != nil {
		t.Fatal(err)
	}
	// A tokenizer_config.json that is not JSON: named in its own row.
	cfg := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib.Rescan(ctx)
	e, _ = lib.Entry(path)
	facts = modelFacts(e)
	for _, f := range facts {
		if f[0] == "Kind" && strings.Contains(f[1], "tokenizer_config") {
			t.Errorf("the Kind row names the tokenizer config: %q", f[1])
		}
	}
	if i := slices.IndexFunc(facts, func(f [2]string) bool { return f[0] == "Companion files" }); i < 0 || !strings.Contains(facts[i][1], cfg) {
		t.Errorf("no Companion files row naming %s: %v", cfg, facts)
	}
}

// Issue 36 item 4: undo removes what it takes back from the store (no
// branch counters growing), and Redo brings it back — the same messages,
// the cache what they hold — until the next send, which forgets it.
func TestUndoRemovesAndRedoBringsBack(t *testing.T) {
	ctx := context.Background()
	b, db := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	if res := NewLibrary(b.Inspector, b.Library).Add(ctx, path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(greedy(6)))
	run(t, c, errs, c.Send("Hello"))
	full := run(t, c, errs, c.Send("And then?"))
	id := full.ConvID
	stored := func() int {
		conv, err := db.GetConversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return conv.Messages
	}
	if stored() != 4 {
		t.Fatalf("%d messages stored after two turns", stored())
	}
	for range 3 { // undo and redo again and again: nothing piles up
		st := run(t, c, errs, c.UndoTurn())
		if len(st.Messages) != 2 || stored() != 2 || !st.CanRedo() || st.Redo != 1 {
			t.Fatalf("after undo: %d shown, %d stored, redo %d", len(st.Messages), stored(), st.Redo)
		}
		if st.BranchOf(1).N > 1 {
			t.Fatalf("undo left a branch: %v", st.Branches)
		}
		st = run(t, c, errs, c.Redo())
		if !sameTranscript(st.Messages, full.Messages) || st.Position != full.Position || stored() != 4 || st.CanRedo() {
			t.Fatalf("after redo: %q at %d, want %q at %d; %d stored, redo %d", msgTexts(st.Messages), st.Position,
				msgTexts(full.Messages), full.Position, stored(), st.Redo)
		}
		if slices.ContainsFunc(st.Branches, func(b Branch) bool { return b.N > 1 }) {
			t.Fatalf("redo left branches: %v", st.Branches)
		}
	}
	// Tokens too: the cut reply replaces the whole one, and comes back.
	st := run(t, c, errs, c.UndoTokens(3))
	if st.Position != full.Position-3 || stored() != 4 || st.BranchOf(3).N > 1 {
		t.Fatalf("after undoing 3 tokens: at %d (want %d), %d stored, branch %v", st.Position, full.Position-3, stored(), st.BranchOf(3))
	}
	st = run(t, c, errs, c.Redo())
	if !sameTranscript(st.Messages, full.Messages) || st.Position != full.Position {
		t.Fatalf("redo of the tokens: %q at %d", msgTexts(st.Messages), st.Position)
	}
	// Undo twice, redo once, then send: the second undone turn is gone.
	run(t, c, errs, c.UndoTurn())
	st = run(t, c, errs, c.UndoTurn())
	if st.Redo != 2 || stored() != 0 {
		t.Fatalf("after two undos: redo %d, %d stored", st.Redo, stored())
	}
	st = run(t, c, errs, c.Redo())
	if len(st.Messages) != 2 || st.Redo != 1 {
		t.Fatalf("one redo of two: %d messages, redo %d", len(st.Messages), st.Redo)
	}
	st = run(t, c, errs, c.Send("Something else"))
	if st.CanRedo() || stored() != 4 {
		t.Fatalf("after a send: redo %d, %d stored", st.Redo, stored())
	}
	if err := c.Redo(); err == nil {
		t.Error("Redo after a send did something")
	}
}

// Issue 36 item 6: New starts with the model's defaults, not the open
// chat's max tokens, capacity and Greedy; "All models" is restored in the
// next window (the same preferences).
func TestNewUsesModelDefaultsAndAllModelsIsRestored(t *testing.T) {
	u, root := newTestUI(t)
	e, ok := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if !ok {
		t.Fatal("llama3 not in the library")
	}
	if err := u.Chat.SetModel(u.ctx, e.Info); err != nil {
		t.Fatal(err)
	}
	s := greedy(7)
	s.Capacity = 64
	if err := u.Chat.NewConversation(s); err != nil {
		t.Fatal(err)
	}
	settle(u)
	u.chat.newConversation()
	settle(u)
	st := u.Chat.State()
	if want := ModelDefaults(e.Info, u.Prefs.Engine()); st.Settings != want || st.Err != "" {
		t.Errorf("New started with %+v (%s), want the model's defaults %+v", st.Settings, st.Err, want)
	}
	if st.Settings.MaxNewTokens == 7 || st.Settings.Capacity == 64 {
		t.Errorf("New copied the open chat's settings: %+v", st.Settings)
	}

	test.Tap(u.chat.allConvs)
	if !u.Prefs.AllModels() {
		t.Fatal("All models was not recorded")
	}
	u2 := NewUI(u.App, u.Backend)
	q := &uiQueue{}
	u2.do = q.post
	queues.Store(u2, q)
	t.Cleanup(u2.Close)
	done := make(chan struct{})
	u2.Start(nil, done)
	<-done
	settle(u2)
	if !u2.chat.allConvs.Checked || !u2.Chat.ListFilter().All || len(u2.Chat.State().Conversations) != 2 {
		t.Errorf("next window: All models %v, filter %+v, %d conversations listed (want 2)",
			u2.chat.allConvs.Checked, u2.Chat.ListFilter(), len(u2.Chat.State().Conversations))
	}
}

// Issue 36 item 6: the benchmark charts (images) are drawn again in the
// new theme's colours when the theme changes.
func TestChartsFollowTheThemeSwitch(t *testing.T) {
	u, _ := newTestUI(t)
	for _, name := range []string{"dark", "light", "dark"} {
		u.ApplyTheme(name)
		settle(u)
		th := u.App.Settings().Theme()
		v := u.App.Settings().ThemeVariant()
		fg, bg := u.BenchVM.ChartColors()
		if fg != th.Color(theme.ColorNameForeground, v) || bg != th.Color(theme.ColorNameBackground, v) {
			t.Errorf("after %s: charts in %v on %v, want the theme's %v on %v", name, fg, bg,
				th.Color(theme.ColorNameForeground, v), th.Color(theme.ColorNameBackground, v))
		}
	}
}

// Issue 36 item 6: a successful export says where the file is; a file the
// save dialog could not create (a typed absolute path) says what to do,
// not only the raw error.
func TestExportSaysWhereAndWhyNot(t *testing.T) {
	u, root := newTestUI(t)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(u.ctx, e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(2)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	if err := u.Chat.Send("Hello"); err != nil {
		t.Fatal(err)
	}
	settle(u)
	id := u.Chat.State().ConvID
	path := filepath.Join(t.TempDir(), "chat.md")
	w, err := storage.Writer(storage.NewFileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	var note string
	u.chat.exportTo(w, nil, id, func(n string) { note = n })
	settle(u)
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "Hello") || note != "Exported as MD to "+path {
		t.Errorf("export: note %q, file %q (%v)", note, b, err)
	}
	_, werr := storage.Writer(storage.NewFileURI(filepath.Join(t.TempDir(), "no", "such", "folder", "x.md")))
	if werr == nil {
		t.Fatal("a writer in a missing folder opened")
	}
	u.chat.exportTo(nil, werr, id, func(n string) { note = n })
	settle(u)
	if !strings.Contains(note, "not exported") || !strings.Contains(note, "Type a file name only") {
		t.Errorf("a failed export says %q", note)
	}
}

// Issue 36 item 5: a reply cut at max tokens keeps the ids it was
// generated as. The llama3 reference's turn-1 reply (8 tokens, capped)
// re-encodes to other ids from its text; stored, it is still its 8
// generated ids (then the template's turn end the next turn closed it
// with), the next turn reuses the whole cache, and the meter reads the
// same after a send and its undo.
func TestCappedReplyKeepsItsGeneratedIDs(t *testing.T) {
	ctx := context.Background()
	b, db := testBackend(t)
	ref := llamaReference(t)
	mt := ref.Multiturn
	path := modelCopy(t, fixtures.Llama3, true)
	if res := NewLibrary(b.Inspector, b.Library).Add(ctx, path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(greedy(len(mt.Turn1.GeneratedIDs))))
	first := run(t, c, errs, c.Send(mt.Turn1.Messages[0].Content))
	reply := first.Messages[len(first.Messages)-1]
	if reply.StopReason != inference.StopLength || !slices.Equal(reply.Generated, mt.Turn1.GeneratedIDs) || !slices.Equal(reply.IDs, reply.Generated) {
		t.Fatalf("turn 1: stopped by %q, generated %v, ids %v; want length, %v", reply.StopReason, reply.Generated, reply.IDs, mt.Turn1.GeneratedIDs)
	}
	storedReply := func(id int64) []int {
		_, path, err := db.CurrentPath(ctx, id)
		if err != nil || len(path) < 2 {
			t.Fatalf("stored path: %d messages (%v)", len(path), err)
		}
		var ids []int
		for _, v := range path[1].TokenIDs {
			ids = append(ids, int(v))
		}
		return ids
	}
	if got := storedReply(first.ConvID); !slices.Equal(got, mt.Turn1.GeneratedIDs) {
		t.Fatalf("stored reply after turn 1: %v, want %v", got, mt.Turn1.GeneratedIDs)
	}
	for round := range 2 { // send and undo, twice: the meter comes back each time
		st := run(t, c, errs, c.Send(mt.Turn2.Messages[2].Content))
		got := storedReply(st.ConvID)
		if len(got) < len(reply.Generated) || !slices.Equal(got[:len(reply.Generated)], reply.Generated) {
			t.Fatalf("round %d: stored reply %v, want its generated %v first", round, got, reply.Generated)
		}
		// What follows is only the turn end the next turn closed it with
		// (<|eot_id|>), never a re-encoding of its text.
		if end := got[len(reply.Generated):]; len(end) != 1 || end[0] != 128009 {
			t.Errorf("round %d: stored reply ends with %v after its generated ids, want [128009]", round, end)
		}
		st = run(t, c, errs, c.UndoTurn())
		if st.Position != first.Position+1 || st.Meter() == "" {
			t.Errorf("round %d: meter after send and undo at %d (%q), want %d: turn 1 and the turn end", round, st.Position, st.Meter(), first.Position+1)
		}
	}
}
