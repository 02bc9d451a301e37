package app

import (
	"fmt"
	"os"
	"strings"

	"fyne.io/fyne/v2"

	inferengine "etchat/inference/engine"
)

// Preference keys.
const (
	PrefDBPath        = "db_path"
	PrefRunnerLibrary = "runner_library"
	PrefEngine        = "default_engine"
	PrefTheme         = "theme" // system | light | dark
	// PrefEnterNewline swaps the message box's keys: Enter starts a new
	// line and Ctrl/Cmd+Enter sends.
	PrefEnterNewline = "enter_newline"
	// The conversation open when the window closed, reopened at start.
	PrefLastModel = "last_model"
	PrefLastConv  = "last_conversation"
	// PrefAllModels: the conversation list shows every model's (All models).
	PrefAllModels = "conversations_all_models"
	PrefLastTab   = "last_tab" // the tab shown when the window closed
)

// Themes are the theme choices.
var Themes = []string{"system", "light", "dark"}

// Prefs is the preferences sheet's view-model over the app's stored
// preferences.
type Prefs struct {
	p fyne.Preferences
}

// NewPrefs wraps p.
func NewPrefs(p fyne.Preferences) *Prefs { return &Prefs{p: p} }

// DBPath is the database path chosen in the preferences ("" = default).
func (p *Prefs) DBPath() string { return p.p.String(PrefDBPath) }

// RunnerLibrary is the native runner library path ("" = search the usual places).
func (p *Prefs) RunnerLibrary() string { return p.p.String(PrefRunnerLibrary) }

// Engine is the default engine of new conversations.
func (p *Prefs) Engine() string { return p.p.StringWithFallback(PrefEngine, "auto") }

// Theme is the chosen theme variant.
func (p *Prefs) Theme() string { return p.p.StringWithFallback(PrefTheme, "system") }

// SetTheme stores the theme choice.
func (p *Prefs) SetTheme(t string) error {
	if !contains(Themes, t) {
		return fmt.Errorf("unknown theme %q (system, light or dark)", t)
	}
	p.p.SetString(PrefTheme, t)
	return nil
}

// Save validates and stores the sheet's fields. The database path takes
// effect at the next start; the others at once.
func (p *Prefs) Save(dbPath, runnerLib, engine string) error {
	dbPath, runnerLib, engine = strings.TrimSpace(dbPath), strings.TrimSpace(runnerLib), strings.TrimSpace(engine)
	if engine == "" {
		engine = "auto"
	}
	if _, err := inferengine.Canonical(engine); err != nil {
		return fmt.Errorf("unknown engine %q: choose %s", engine, strings.Join(Engines(), ", "))
	}
	if dbPath != "" {
		if fi, err := os.Stat(dbPath); err == nil && fi.IsDir() {
			return fmt.Errorf("the database path %s is a folder: give a file name, e.g. %s/etchat.db", dbPath, dbPath)
		}
	}
	if runnerLib != "" {
		fi, err := os.Stat(runnerLib)
		if err != nil {
			return fmt.Errorf("the runner library %s cannot be read (%v): build it with scripts/build-native or clear the field to use the CPU engine", runnerLib, unwrapPathErr(err))
		}
		if fi.IsDir() {
			return fmt.Errorf("the runner library path %s is a folder: give the library file (libetchat_runner.dylib)", runnerLib)
		}
	}
	p.p.SetString(PrefDBPath, dbPath)
	p.p.SetString(PrefRunnerLibrary, runnerLib)
	p.p.SetString(PrefEngine, engine)
	return nil
}

// EnterNewline reports whether Enter starts a new line (and Ctrl/Cmd+Enter
// sends) instead of sending.
func (p *Prefs) EnterNewline() bool { return p.p.Bool(PrefEnterNewline) }

// SetEnterNewline stores the Enter key's choice.
func (p *Prefs) SetEnterNewline(on bool) { p.p.SetBool(PrefEnterNewline, on) }

// LastTab is the tab shown when the window last closed ("" = Models).
func (p *Prefs) LastTab() string { return p.p.String(PrefLastTab) }

// SetLastTab records the tab shown.
func (p *Prefs) SetLastTab(name string) { p.p.SetString(PrefLastTab, name) }

// LastConversation is the model and conversation open when the window
// last closed ("", 0 for none).
func (p *Prefs) LastConversation() (model string, id int64) {
	return p.p.String(PrefLastModel), int64(p.p.Int(PrefLastConv))
}

// SetLastConversation records the open conversation.
func (p *Prefs) SetLastConversation(model string, id int64) {
	if m, i := p.LastConversation(); m == model && i == id {
		return
	}
	p.p.SetString(PrefLastModel, model)
	p.p.SetInt(PrefLastConv, int(id))
}

// AllModels is whether the conversation list showed every model's
// conversations when the window last closed.
func (p *Prefs) AllModels() bool { return p.p.Bool(PrefAllModels) }

// SetAllModels records the All models switch.
func (p *Prefs) SetAllModels(on bool) { p.p.SetBool(PrefAllModels, on) }
