package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// serverIndicator is the line at the foot of the window while the Serve
// switch's server runs: where, what and how busy, refreshed every second;
// its text opens the requests served (the Benchmarks tab's history, which
// lists them as "api" rows), its Serve… button the dialog. Hidden while
// the server is off.
type serverIndicator struct {
	u     *UI
	root  *fyne.Container
	text  *widget.Button
	stop  context.CancelFunc // ends the refresh loop; nil while off
	every time.Duration      // refresh interval (tests shorten it)
}

func newServerIndicator(u *UI) *serverIndicator {
	in := &serverIndicator{u: u, every: time.Second}
	in.text = widget.NewButtonWithIcon("", theme.MediaRecordIcon(), u.showServedRequests)
	in.text.Importance = widget.LowImportance
	in.text.Alignment = widget.ButtonAlignLeading
	settings := widget.NewButton("Serve…", u.showServe)
	in.root = container.NewBorder(nil, nil, nil, settings, in.text)
	in.root.Hide()
	return in
}

// refresh shows the server's status now (on the UI goroutine).
func (in *serverIndicator) refresh() {
	st := ServeStatus{}
	if in.u.serve != nil {
		st = in.u.serve.Snapshot()
	}
	if !st.Running {
		in.root.Hide()
		return
	}
	in.text.SetText(IndicatorText(st))
	in.root.Show()
}

// follow refreshes the line every interval while the server runs (call
// after a start or a stop).
func (in *serverIndicator) follow() {
	if in.stop != nil {
		in.stop()
		in.stop = nil
	}
	in.refresh()
	if in.u.serve == nil || !in.u.serve.Snapshot().Running {
		return
	}
	ctx, cancel := context.WithCancel(in.u.ctx)
	in.stop = cancel
	go func() {
		t := time.NewTicker(in.every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				in.u.do(in.refresh)
			}
		}
	}()
}

// showServedRequests opens the Benchmarks tab's history on the served
// model's runs, which include every request the server answered.
func (u *UI) showServedRequests() {
	u.SelectTab(TabBenchmarks)
	if u.BenchVM == nil {
		return
	}
	model := ""
	if u.serve != nil {
		model = u.serve.Snapshot().Model
	}
	go func() {
		_ = u.BenchVM.Refresh(u.ctx) // a failure shows in the history
		known := false
		for _, m := range u.BenchVM.Models() {
			known = known || m == model
		}
		if !known {
			model = "" // nothing recorded for it yet: show every run
		}
		u.BenchVM.SetFilter(model)
	}()
	if tabs, ok := u.benchObj.(*container.AppTabs); ok {
		for _, t := range tabs.Items {
			if t.Text == "History" {
				tabs.Select(t)
			}
		}
	}
}

// serveDialog is the Serve dialog's fields.
type serveDialog struct {
	port    *widget.Entry
	key     *widget.Entry
	network *widget.Check
	convs   *widget.Check
	status  *widget.Label
	toggle  *widget.Button
}

// config is the fields' settings, checked.
func (d *serveDialog) config() (ServeConfig, error) {
	port, err := ParsePort(d.port.Text)
	if err != nil {
		return ServeConfig{}, err
	}
	c := ServeConfig{Port: port, APIKey: d.key.Text, Network: d.network.Checked}
	return c, c.Check()
}

// showServe is the Serve dialog: port, API key and reach (kept in the
// preferences), the switch, and the status, refreshed while it is open.
func (u *UI) showServe() {
	if u.serve == nil {
		u.serve = &ServeSwitch{}
	}
	cfg := u.Prefs.ServeConfig()
	d := &serveDialog{port: widget.NewEntry(), key: widget.NewPasswordEntry(), status: widget.NewLabel("")}
	d.port.SetText(strconv.Itoa(cfg.Port))
	d.key.SetText(cfg.APIKey)
	d.key.SetPlaceHolder("none: any program on this machine may call it")
	d.network = widget.NewCheck("Other machines may connect (needs the key)", nil)
	d.network.Checked = cfg.Network
	d.status.Wrapping = fyne.TextWrapWord
	d.convs = widget.NewCheck("Save chat requests as conversations (from the next start)", u.serve.SetStoreConversations)
	u.serve.mu.Lock()
	d.convs.Checked = u.serve.storeConvs
	u.serve.mu.Unlock()
	d.toggle = widget.NewButton("Start", func() { u.toggleServe(d) })
	form := widget.NewForm(widget.NewFormItem("Port", d.port), widget.NewFormItem("API key", d.key))
	served := widget.NewButton("Served requests", u.showServedRequests)
	body := container.NewVBox(form, d.network, d.convs, d.status, container.NewHBox(d.toggle, served))
	u.refreshServe(d)
	dlg := dialog.NewCustom("Serve", "Close", container.NewGridWrap(fyne.NewSize(520, 300), body), u.Win)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				u.do(func() { u.refreshServe(d) })
			}
		}
	}()
	dlg.SetOnClosed(func() { close(stop) })
	dlg.Show()
}

// refreshServe shows the server's state in the dialog: the fields are
// editable only while it is off.
func (u *UI) refreshServe(d *serveDialog) {
	st := u.serve.Snapshot()
	for _, w := range []fyne.Disableable{d.port, d.key, d.network} {
		if st.Running {
			w.Disable()
		} else {
			w.Enable()
		}
	}
	if !st.Running {
		d.status.SetText("Off. Serve starts an OpenAI-compatible server (the same as etchat serve) over the chat's open model: it shares the loaded program, keeps its own cache, and takes turns with the chat. The port, key and reach are kept in the preferences.")
		d.toggle.SetText("Start")
		return
	}
	d.status.SetText(fmt.Sprintf("Serving %s at %s\n%d in flight, %d served", st.Model, st.URL, st.InFlight, st.Served))
	d.toggle.SetText("Stop")
}

// toggleServe starts the server with the dialog's settings (storing them)
// or stops it.
func (u *UI) toggleServe(d *serveDialog) {
	defer func() {
		u.refreshServe(d)
		u.indicator.follow()
	}()
	if u.serve.Snapshot().Running {
		u.ShowError(u.serve.Stop())
		return
	}
	cfg, err := d.config()
	if err == nil {
		err = u.Prefs.SetServeConfig(cfg)
	}
	if err != nil {
		u.ShowError(err)
		return
	}
	st := u.Chat.State()
	if st.Model == nil {
		u.ShowError(errors.New("choose a model in the Models tab first: Serve serves the chat's model"))
		return
	}
	if _, err := u.serve.StartWith(programsOf(u.Backend.Opener), st.Model.Path, st.Settings, u.Backend.DB, u.Prefs.ServeConfig()); err != nil {
		u.ShowError(advised(err, "this dialog"))
	}
}
