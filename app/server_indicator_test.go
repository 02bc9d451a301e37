package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
	"etchat/serve"
)

// askWithKey is ask with an Authorization header (none for "").
func askWithKey(url, key, text string, n int) (int, string) {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"temperature":0}`, serveModelID, text, n)
	req, _ := http.NewRequest("POST", url+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestServeKeyPortAndStatus (issue 40 item 4): the Serve switch on the
// dialog's settings with the real CPU engine: a key is required once set
// (401 without it, the engine's reply with it), a server open to the
// network is refused without a key and a port out of range is refused;
// the status counts the requests in flight (one held in its turn) and
// served, names the model, and never shows the key.
func TestServeKeyPortAndStatus(t *testing.T) {
	sc := newServedChat(t)
	run(t, sc.c, sc.errs, sc.c.NewConversation(greedy(chatBudget)))
	const key = "s3cret-key-for-the-test"
	for _, bad := range []ServeConfig{{Port: 0, Network: true}, {Port: 70000}, {Port: -1, APIKey: key}} {
		if _, err := sc.sw.StartWith(sc.programs, sc.path, greedy(chatBudget), nil, bad); err == nil {
			t.Errorf("StartWith %+v succeeded", bad)
		}
	}
	// A port another program listens on: refused, with the advice to
	// choose another (matched by the error's type, syscall.EADDRINUSE).
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busyPort := busy.Addr().(*net.TCPAddr).Port
	_, err = sc.sw.StartWith(sc.programs, sc.path, greedy(chatBudget), nil, ServeConfig{Port: busyPort, APIKey: key})
	busy.Close()
	if err == nil || !strings.Contains(advised(err, "this dialog").Error(), "choose another port in this dialog") {
		t.Errorf("a port in use: %v", err)
	}
	if st := sc.sw.Snapshot(); st.Running || IndicatorText(st) != "" {
		t.Fatalf("refused starts left %+v", st)
	}
	url, err := sc.sw.StartWith(sc.programs, sc.path, greedy(chatBudget), nil, ServeConfig{Port: 0, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := askWithKey(url, "", "hi", 3); code != http.StatusUnauthorized {
		t.Errorf("without the key: %d %s", code, body)
	}
	if code, body := askWithKey(url, "wrong", "hi", 3); code != http.StatusUnauthorized {
		t.Errorf("with a wrong key: %d %s", code, body)
	}
	code, body := askWithKey(url, key, "hi", 3)
	if code != 200 || !strings.Contains(body, `"completion_tokens":3`) {
		t.Fatalf("with the key: %d %s", code, body)
	}
	st := sc.sw.Snapshot()
	if !st.Running || !st.Keyed || st.Network || st.Model != ModelName(sc.path) || st.Served != 1 || st.InFlight != 0 || st.URL != url {
		t.Errorf("status %+v", st)
	}
	text := IndicatorText(st)
	_, port, _ := strings.Cut(strings.TrimSuffix(url, "/v1"), "127.0.0.1")
	for _, w := range []string{ModelName(sc.path), "on " + port + " ", "key required", "this machine only", "0 in flight", "1 served"} {
		if !strings.Contains(text, w) {
			t.Errorf("indicator %q lacks %q", text, w)
		}
	}
	if strings.Contains(text, key) {
		t.Errorf("the indicator shows the key: %q", text)
	}

	// A request held in its turn is in flight.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	sc.setHooks(nil, func() {
		once.Do(func() { close(held) })
		<-release
	})
	done := make(chan int)
	go func() {
		c, _ := askWithKey(url, key, "hi", 3)
		done <- c
	}()
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the request never took its turn")
	}
	if st := sc.sw.Snapshot(); st.InFlight != 1 || !strings.Contains(IndicatorText(st), "1 in flight") {
		t.Errorf("with a request generating: %+v %q", st, IndicatorText(st))
	}
	close(release)
	if c := <-done; c != 200 {
		t.Errorf("the held request: %d", c)
	}
	sc.setHooks(nil, nil)
	if st := sc.sw.Snapshot(); st.InFlight != 0 || st.Served != 2 {
		t.Errorf("after it: %+v", st)
	}
	if err := sc.sw.Stop(); err != nil {
		t.Fatal(err)
	}
	if st := sc.sw.Snapshot(); st.Running || IndicatorText(st) != "" {
		t.Errorf("after Stop: %+v", st)
	}
}

// TestServePrefs: the dialog's settings are kept (etchat serve's port by
// default); a port out of range and a network server without a key are
// refused and change nothing.
func TestServePrefs(t *testing.T) {
	p := NewPrefs(test.NewTempApp(t).Preferences())
	if c := p.ServeConfig(); c.Port != serve.DefaultPort || c.APIKey != "" || c.Network {
		t.Errorf("defaults %+v", c)
	}
	want := ServeConfig{Port: 9001, APIKey: "k", Network: true}
	if err := p.SetServeConfig(ServeConfig{Port: 9001, APIKey: "  k  ", Network: true}); err != nil {
		t.Fatal(err)
	}
	if c := p.ServeConfig(); c != want {
		t.Errorf("stored %+v, want %+v", c, want)
	}
	for _, bad := range []ServeConfig{{Port: 9002, Network: true}, {Port: 65536, APIKey: "k"}} {
		if err := p.SetServeConfig(bad); err == nil {
			t.Errorf("stored %+v", bad)
		}
	}
	if c := p.ServeConfig(); c != want {
		t.Errorf("a refused setting changed them: %+v", c)
	}
	for s, w := range map[string]int{"": serve.DefaultPort, " 8080 ": 8080, "0": 0} {
		if got, err := ParsePort(s); err != nil || got != w {
			t.Errorf("ParsePort(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"80a", "99999", "-3"} {
		if _, err := ParsePort(s); err == nil {
			t.Errorf("ParsePort(%q) accepted", s)
		}
	}
}

// newServedUI is newTestUI with the window's real opener (the one that
// lends the chat's program to the Serve switch), the llama3 fixture's
// conversation open.
func newServedUI(t *testing.T) (*UI, string) {
	t.Helper()
	a := test.NewTempApp(t)
	b, _ := testBackend(t)
	b.Opener = &engineOpener{getenv: func(string) string { return "" }, programs: &chatPrograms{}}
	u := NewUI(a, b)
	q := &uiQueue{}
	u.do = q.post
	queues.Store(u, q)
	t.Cleanup(u.Close)
	root := uiModels(t)
	done := make(chan struct{})
	u.Start([]string{root}, done)
	<-done
	settle(u)
	e, _ := u.Library.Entry(filepath.Join(root, fixtures.Llama3, "model.pte"))
	if err := u.Chat.SetModel(context.Background(), e.Info); err != nil {
		t.Fatal(err)
	}
	if err := u.Chat.NewConversation(greedy(4)); err != nil {
		t.Fatal(err)
	}
	settle(u)
	return u, root
}

// TestServerIndicatorView800x600 (issue 40 item 4): the Serve dialog
// starts the server on its port and key; the window then shows the
// indicator at its foot, inside the window and on no other control, in
// both themes at 800×600; its text opens the Benchmarks tab's history on
// the served model, where the request is listed; Stop hides it.
func TestServerIndicatorView800x600(t *testing.T) {
	u, _ := newServedUI(t)
	if u.indicator.root.Visible() {
		t.Fatal("the indicator shows with the server off")
	}
	if err := u.Prefs.SetServeConfig(ServeConfig{Port: 0, APIKey: "view-key"}); err != nil {
		t.Fatal(err)
	}
	u.showServe()
	settle(u)
	top := u.Win.Canvas().Overlays().Top()
	var key *widget.Entry
	walk(top, func(o fyne.CanvasObject) {
		if e, ok := o.(*widget.Entry); ok && e.Password {
			key = e
		}
	})
	if key == nil || key.Text != "view-key" {
		t.Fatalf("the dialog's key field: %+v", key)
	}
	test.Tap(findButton(t, top, "Start"))
	settle(u)
	st := u.serve.Snapshot()
	if !st.Running || !st.Keyed {
		t.Fatalf("after Start: %+v", st)
	}
	if !key.Disabled() {
		t.Error("the key can be edited while the server runs")
	}
	if code, body := askWithKey(st.URL, "view-key", "hi", 2); code != 200 {
		t.Fatalf("request: %d %s", code, body)
	}
	for _, th := range []string{"light", "dark"} {
		u.ApplyTheme(th)
		u.Win.Resize(fyne.NewSize(800, 600))
		u.SelectTab(TabChat)
		u.indicator.refresh()
		settle(u)
		// The dialog, open over it, fits: every field and button inside
		// the window, none on another.
		dctrls := focusables(top)
		if len(dctrls) < 6 {
			t.Fatalf("%s: %d controls in the Serve dialog", th, len(dctrls))
		}
		for _, c := range dctrls {
			if r := rectOf(c); !r.inside(windowRect(u)) {
				t.Errorf("%s: the dialog's %T at %v is out of the window", th, c, r)
			}
		}
		noOverlaps(t, th+" Serve dialog", dctrls)
		if !u.indicator.root.Visible() {
			t.Fatalf("%s: no indicator while serving", th)
		}
		if got, want := u.indicator.text.Text, IndicatorText(u.serve.Snapshot()); got != want || !strings.Contains(got, "1 served") {
			t.Errorf("%s: indicator %q, want %q with the request counted", th, got, want)
		}
		win := windowRect(u)
		bar := rectOf(u.indicator.root)
		if !bar.inside(win) {
			t.Errorf("%s: the indicator %v is out of the window %v", th, bar, win)
		}
		if tabs := rectOf(u.tabs); tabs.overlaps(bar) {
			t.Errorf("%s: the indicator %v is on the tabs %v", th, bar, tabs)
		}
		if need := u.indicator.text.MinSize().Width; u.indicator.text.Size().Width < need-0.5 {
			t.Errorf("%s: the indicator's text is %.0f wide, needs %.0f", th, u.indicator.text.Size().Width, need)
		}
		noOverlaps(t, th+" window", controls(u.Win.Content()))
	}
	top.Hide()
	u.Win.Canvas().Overlays().Remove(top)
	// The indicator opens the served requests.
	test.Tap(u.indicator.text)
	if u.CurrentTab() != TabBenchmarks {
		t.Errorf("the indicator opened %s", u.CurrentTab())
	}
	served := u.serve.Snapshot().Model
	waitFor(t, func() bool { return u.BenchVM.Filter() == served })
	settle(u)
	rows, _ := u.BenchVM.History()
	if len(rows) != 1 || !strings.HasPrefix(rows[0].Test, "api chat/completions") {
		t.Errorf("served requests listed: %+v", rows)
	}
	if tabs := u.benchObj.(*container.AppTabs); tabs.Selected().Text != "History" {
		t.Errorf("the Benchmarks tab shows %s", tabs.Selected().Text)
	}
	if err := u.serve.Stop(); err != nil {
		t.Fatal(err)
	}
	u.indicator.follow()
	settle(u)
	if u.indicator.root.Visible() {
		t.Error("the indicator shows after Stop")
	}
}
