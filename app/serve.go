package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"etchat/inference"
	"etchat/serve"
	"etchat/store"
)

// ServeSwitch is the app's Serve switch: the same server as etchat serve,
// in the app's process, on loopback. It opens its own session on the
// model (its prefix reuse never touches the chat's cache). Safe for
// concurrent use.
type ServeSwitch struct {
	mu   sync.Mutex
	srv  *serve.Server
	url  string
	done chan error
}

// Start serves the model at path with the conversation's engine and cache
// settings (library: the native runner library, "" = the usual search) on
// addr ("127.0.0.1:8917"; port 0 picks one), storing each request as a run
// in db (may be nil). It returns the API's base URL.
func (s *ServeSwitch) Start(path string, st Settings, library string, db *store.DB, addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return s.url, errors.New("the server is already running")
	}
	srv, err := serve.New(serve.Options{Models: []string{path}, Store: db, Version: Version,
		Load: inference.LoadOptions{Engine: st.Engine, Library: library, Policy: st.Policy()}})
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listening on %s: %w", addr, err)
	}
	s.srv, s.url, s.done = srv, "http://"+l.Addr().String()+"/v1", make(chan error, 1)
	go func(done chan error) { done <- srv.Serve(l) }(s.done)
	return s.url, nil
}

// Stop lets requests in flight finish for a few seconds, cancels the rest
// (their runs are stored) and closes the server's session.
func (s *ServeSwitch) Stop() error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv, s.url = nil, ""
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	<-done
	return err
}

// Status is whether it runs, its URL, the models it serves and the
// requests answered.
func (s *ServeSwitch) Status() (running bool, url string, models []string, served int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return false, "", nil, 0
	}
	return true, s.url, s.srv.Models(), s.srv.Served()
}

// serveAddr is where the app serves: loopback only (the app has no API
// key), on etchat serve's default port.
var serveAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(serve.DefaultPort))

// showServe is the Serve dialog: the switch, the URL and the requests
// served, refreshed while it is open.
func (u *UI) showServe() {
	if u.serve == nil {
		u.serve = &ServeSwitch{}
	}
	status := widget.NewLabel("")
	status.Wrapping = fyne.TextWrapWord
	var toggle *widget.Button
	refresh := func() {
		running, url, models, served := u.serve.Status()
		if !running {
			status.SetText("Off. Serve starts an OpenAI-compatible server on " + serveAddr + " over the chat's model, with its own session.")
			toggle.SetText("Start")
			return
		}
		status.SetText(fmt.Sprintf("Serving %v at %s\n%d requests served", models, url, served))
		toggle.SetText("Stop")
	}
	toggle = widget.NewButton("Start", func() {
		if running, _, _, _ := u.serve.Status(); running {
			u.ShowError(u.serve.Stop())
			refresh()
			return
		}
		st := u.Chat.State()
		if st.Model == nil {
			u.ShowError(errors.New("choose a model in the Models tab first: Serve serves the chat's model"))
			return
		}
		library := ""
		if u.Prefs != nil {
			library = u.Prefs.RunnerLibrary()
		}
		if _, err := u.serve.Start(st.Model.Path, st.Settings, library, u.Backend.DB, serveAddr); err != nil {
			u.ShowError(err)
		}
		refresh()
	})
	refresh()
	d := dialog.NewCustom("Serve", "Close", container.NewGridWrap(fyne.NewSize(480, 120), container.NewVBox(status, toggle)), u.Win)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				u.do(refresh)
			}
		}
	}()
	d.SetOnClosed(func() { close(stop) })
	d.Show()
}
