package app

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"etchat/inference/engine"
)

// settingsSheet is the per-conversation settings form's widgets, bound to a
// SettingsForm: every keystroke re-evaluates it and shows the cache
// builder's messages under the field they concern.
type settingsSheet struct {
	form    *SettingsForm
	root    fyne.CanvasObject
	entries map[string]*escEntry
	selects map[string]*widget.Select
	errs    map[string]*widget.Label
	summary *widget.Label
	onValid func(bool)
}

// settingsFields lists the sheet's fields in order: name, label, hint.
var settingsFields = [][3]string{
	{"Engine", "Engine", ""},
	{"Capacity", "Capacity", "tokens; empty = the model's maximum"},
	{"StorageDType", "KV storage dtype", ""},
	{"InitialCapacity", "Initial capacity", "tokens; empty = 512; pools double up to the capacity"},
	{"Windows", "Windows", "e.g. 512 or 8,8,0; empty = the model's own; 0 = flat"},
	{"Temperature", "Temperature", "0 = greedy"},
	{"TopK", "Top-k", "0 = off"},
	{"TopP", "Top-p", "1 = off"},
	{"Seed", "Seed", ""},
	{"MaxNewTokens", "Max new tokens", ""},
	{"Numerics", "Numerics", ""},
	{"SystemPrompt", "System prompt", ""},
}

func (s *settingsSheet) field(name string) *string {
	f := s.form
	switch name {
	case "Engine":
		return &f.Engine
	case "Capacity":
		return &f.Capacity
	case "StorageDType":
		return &f.StorageDType
	case "InitialCapacity":
		return &f.InitialCapacity
	case "Windows":
		return &f.Windows
	case "Temperature":
		return &f.Temperature
	case "TopK":
		return &f.TopK
	case "TopP":
		return &f.TopP
	case "Seed":
		return &f.Seed
	case "MaxNewTokens":
		return &f.MaxNewTokens
	case "SystemPrompt":
		return &f.SystemPrompt
	case "Numerics":
		return &f.Numerics
	}
	panic("unknown settings field " + name)
}

// newEntry makes the sheet's entries (Esc closes the sheet).
func newSettingsSheet(f *SettingsForm, newEntry func(multiLine bool) *escEntry) *settingsSheet {
	return newSettingsSheetOf(f, newEntry, nil)
}

// newSettingsSheetOf is the sheet with only the fields named (nil: all),
// as the preset editor shows them.
func newSettingsSheetOf(f *SettingsForm, newEntry func(multiLine bool) *escEntry, only []string) *settingsSheet {
	s := &settingsSheet{form: f, entries: map[string]*escEntry{}, selects: map[string]*widget.Select{}, errs: map[string]*widget.Label{}}
	form := widget.NewForm()
	cacheFields := map[string]bool{"Capacity": true, "StorageDType": true, "InitialCapacity": true, "Windows": true}
	for _, fd := range settingsFields {
		name, label, hint := fd[0], fd[1], fd[2]
		if only != nil && !contains(only, name) {
			continue
		}
		ptr := s.field(name)
		var w fyne.CanvasObject
		switch name {
		case "Engine", "StorageDType", "Numerics":
			opts := map[string][]string{"Engine": Engines(), "StorageDType": DTypes, "Numerics": engine.NumericsModes()}[name]
			sel := widget.NewSelect(opts, nil)
			sel.SetSelected(*ptr)
			if name == "Numerics" && *ptr == "" {
				sel.SetSelected(engine.NumericsFast) // the default (Settings.LoadNumerics); the form keeps ""
			}
			sel.OnChanged = func(v string) { *ptr = v; s.refresh() }
			s.selects[name] = sel
			if cacheFields[name] && !f.CacheEditable() {
				sel.Disable()
			}
			w = sel
		default:
			e := newEntry(name == "SystemPrompt")
			if name == "SystemPrompt" {
				e.Wrapping = fyne.TextWrapWord
				e.SetMinRowsVisible(3)
			}
			e.SetText(*ptr)
			e.SetPlaceHolder(hint)
			e.OnChanged = func(v string) { *ptr = v; s.refresh() }
			s.entries[name] = e
			if cacheFields[name] && !f.CacheEditable() {
				e.Disable()
			}
			w = e
		}
		// One line, always there: a message appearing while typing must
		// not push the fields below it down (the next click would land in
		// another field). The whole text is in the summary under the form.
		msg := widget.NewLabel(" ")
		msg.Importance = widget.DangerImportance
		msg.Truncation = fyne.TextTruncateEllipsis
		msg.SizeName = theme.SizeNameCaptionText
		s.errs[name] = msg
		item := widget.NewFormItem(label, container.NewVBox(w, msg))
		form.AppendItem(item)
	}
	s.summary = widget.NewLabel("")
	s.summary.Wrapping = fyne.TextWrapWord
	if !f.CacheEditable() {
		// The cache of an in-graph program is fixed: its fields show the
		// export's values, greyed.
		f.Capacity, f.Windows = "", ""
	}
	note := widget.NewLabel("")
	note.Wrapping = fyne.TextWrapWord
	if !f.CacheEditable() {
		note.SetText("This model keeps its cache inside the program: capacity, dtype and windows are fixed by the export.")
	} else {
		note.SetText("Applying reloads the model, then reads the conversation into the new cache in the background.")
	}
	if only != nil {
		note.Hide() // the preset editor says what its settings do
	}
	s.summary.TextStyle = fyne.TextStyle{Bold: true}
	// The summary (the cache line, or the list of fields to fix) goes under
	// the form: at the top, its lines coming and going while you type moved
	// every field below them, so clicks landed on gaps.
	s.root = container.NewVBox(note, form, s.summary)
	return s
}

// refresh re-evaluates the form and shows its messages.
func (s *settingsSheet) refresh() {
	r := s.form.Evaluate()
	for name, l := range s.errs {
		if msg := r.ErrorFor(name); msg != "" {
			l.SetText(msg)
		} else {
			l.SetText(" ")
		}
	}
	switch {
	case !r.OK():
		s.summary.Importance = widget.DangerImportance
		var lines []string
		for _, e := range r.Errors {
			lines = append(lines, fieldLabel(e.Field)+": "+e.Msg)
		}
		head := "One field to fix before applying:"
		if n := len(r.Errors); n > 1 {
			head = fmt.Sprintf("%d fields to fix before applying:", n)
		}
		s.summary.SetText(head + "\n" + strings.Join(lines, "\n"))
	case r.Cache != nil:
		s.summary.Importance = widget.MediumImportance
		s.summary.SetText(r.Summary())
	default:
		s.summary.Importance = widget.MediumImportance
		s.summary.SetText("The cache is fixed by the export.")
	}
	if s.onValid != nil {
		s.onValid(r.OK())
	}
}

// fieldLabel is a field's label in the sheet.
func fieldLabel(name string) string {
	for _, f := range settingsFields {
		if f[0] == name {
			return f[1]
		}
	}
	return name
}
