package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"

	"etchat/store"
)

// TourPrompt is the message the screenshot tour sends.
const TourPrompt = "Hello! Tell me about the sea."

// Tour walks through the views for scripts/screenshots: before each
// picture it writes DIR/NAME.ready and waits for the script to create
// DIR/NAME.done. Views: models, chat, chat-small (800×600), settings,
// benchmarks (the run form and its results), benchmarks-history,
// benchmarks-chart, chat-light; chat-markdown after chat-small.
func (u *UI) Tour(dir string) error {
	shot := func(name string) error {
		time.Sleep(700 * time.Millisecond) // let the frame settle
		if err := os.WriteFile(filepath.Join(dir, name+".ready"), nil, 0o644); err != nil {
			return err
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(filepath.Join(dir, name+".done")); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("no screenshot of %s within a minute", name)
	}

	fyne.DoAndWait(func() { u.Win.Resize(fyne.NewSize(1280, 800)) })
	// Models: select the smallest model the chat can open.
	var model *ModelInfo
	for _, e := range u.Library.Entries() {
		if e.Chattable() && (model == nil || e.Info.SizeBytes < model.SizeBytes) {
			model = e.Info
		}
	}
	if model == nil {
		return errors.New("no runnable model with a tokenizer in the library (pass --add)")
	}
	// The details pane of a sliding-window model shows ring layers too.
	show := model
	for _, e := range u.Library.Entries() {
		if e.Info != nil && e.Info.Layout != nil && slices.ContainsFunc(e.Info.Layout.Windows, func(w int) bool { return w > 0 }) {
			show = e.Info
		}
	}
	fyne.DoAndWait(func() {
		u.SelectTab(TabModels)
		u.Library.Select(show.Path)
		u.lib.capacity.SetText("64")
		u.lib.dtype.SetSelected("fp16")
	})
	if err := shot("models"); err != nil {
		return err
	}

	// Chat: one conversation, one reply.
	fyne.DoAndWait(func() { u.SelectTab(TabChat) })
	if err := u.Chat.SetModel(u.ctx, model); err != nil {
		return err
	}
	set := DefaultSettings(u.Prefs.Engine())
	set.MaxNewTokens = 24 // two short replies fit the fixtures' 128-token context
	if err := u.Chat.NewConversation(set); err != nil {
		return err
	}
	u.Chat.Wait()
	if err := u.Chat.Send(TourPrompt); err != nil {
		return err
	}
	u.Chat.Wait()
	if err := u.Chat.Send("And what lives in it?"); err != nil {
		return err
	}
	u.Chat.Wait()
	if err := u.Chat.Regenerate(); err != nil { // a second reply: "‹ 2/2 ›" under it
		return err
	}
	u.Chat.Wait()
	if st := u.Chat.State(); st.Err != "" {
		fmt.Fprintln(os.Stderr, "etchat: tour: chat:", st.Err)
	}
	fyne.DoAndWait(func() {
		u.chat.input.SetText("Thank you!") // the token count shows under the box
	})
	if err := shot("chat"); err != nil {
		return err
	}
	fyne.DoAndWait(func() { u.Win.Resize(fyne.NewSize(800, 600)) })
	if err := shot("chat-small"); err != nil {
		return err
	}
	fyne.DoAndWait(func() { u.Win.Resize(fyne.NewSize(1280, 800)) })

	// A reply in Markdown: the fixtures' random weights write none, so the
	// tour imports a conversation that has one (as etchat history --import
	// would) and opens it on the same model.
	if err := u.tourMarkdown(shot); err != nil {
		return err
	}

	if err := u.tourSettings(shot); err != nil {
		return err
	}

	// Benchmarks: the run form with the chat's model picked from the
	// library, then the history and the chart of what the script ran.
	sub, _ := u.benchObj.(*container.AppTabs)
	fyne.DoAndWait(func() { u.SelectTab(TabBenchmarks) })
	if u.BenchVM != nil {
		f := u.BenchVM.Form()
		f.Reps, f.Engine = "3", "cpu"
		u.BenchVM.SetForm(f)
		u.BenchVM.ChooseModel(model.Path) // sizes from its context: pp32, tg16
		if err := u.BenchVM.Start(u.ctx); err == nil {
			u.BenchVM.Wait() // the results table shows under the form
		}
		_ = u.BenchVM.Refresh(u.ctx)
	}
	time.Sleep(300 * time.Millisecond)
	if err := shot("benchmarks"); err != nil {
		return err
	}
	if sub != nil {
		for i, name := range []string{"benchmarks-history", "benchmarks-chart"} {
			fyne.DoAndWait(func() { sub.SelectIndex(i + 1) })
			if err := shot(name); err != nil {
				return err
			}
		}
		fyne.DoAndWait(func() { sub.SelectIndex(0) })
	}

	return u.tourIssue40(shot) // tour_issue40.go, then the chat in the light theme
}

// TourMarkdownReply is the reply of the conversation the tour imports to
// show a reply drawn as Markdown.
const TourMarkdownReply = "### Engines\n\n| engine | runs on | **decode** |\n|---|---|--:|\n| cpu | any CPU | 410 tok/s |\n| mlx | Metal, CUDA | 2,900 tok/s |\n\n" +
	"Pick one with `--engine`:\n\n```sh\netchat run --engine cpu model.pte\n```\n\n- *auto* prefers **mlx**\n- see [run.md](https://example.com/run)\n"

// tourSettings shows the settings sheet with one invalid field, for its
// validation message.
func (u *UI) tourSettings(shot func(string) error) error {
	var sheet *settingsSheet
	fyne.DoAndWait(func() { sheet = u.chat.showSettings() })
	if sheet != nil {
		fyne.DoAndWait(func() { sheet.entries["Windows"].SetText("8,x") })
	}
	err := shot("settings")
	fyne.DoAndWait(func() { u.chat.hideSettings() })
	return err
}

// tourMarkdown imports a conversation whose reply is Markdown, opens it
// and takes its picture.
func (u *UI) tourMarkdown(shot func(string) error) error {
	if u.Backend.DB == nil {
		return errors.New("the tour needs the database")
	}
	now := time.Now()
	doc := store.ExportFile{Format: store.ExportFormat, Version: store.ExportVersion, Conversations: []store.ExportConversation{{
		UID: "tour-markdown", Title: "Which engine?", Settings: json.RawMessage("{}"), Created: now, Updated: now, CurrentLeaf: 2,
		Messages: []store.ExportMessage{
			{ID: 1, Role: "user", Text: "Which engine should I use?", Created: now, Updated: now},
			{ID: 2, Parent: 1, Role: "assistant", Text: TourMarkdownReply, Created: now, Updated: now},
		},
	}}}
	js, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	convs, err := u.Backend.DB.ImportJSON(u.ctx, bytes.NewReader(js))
	if err != nil {
		return err
	}
	if err := u.Chat.OpenConversation(convs[0].ID); err != nil {
		return err
	}
	u.Chat.Wait()
	return shot("chat-markdown")
}
