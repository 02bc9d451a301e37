package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// browser sends one request the way a browser does for a page: its Host
// is the name in the page's URL (a DNS-rebinding page's own name), Origin
// names the page on cross-origin requests (and on any POST), and a simple
// request's Content-Type is whatever the page set.
type browser struct {
	method, path, host, origin, contentType, body string
	header                                        []string
}

func (b browser) send(t *testing.T, base string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(b.method, base+b.path, strings.NewReader(b.body))
	if err != nil {
		t.Fatal(err)
	}
	if b.host != "" {
		req.Host = b.host
	}
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	if b.contentType != "" {
		req.Header.Set("Content-Type", b.contentType)
	}
	for i := 0; i+1 < len(b.header); i += 2 {
		req.Header.Set(b.header[i], b.header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(raw)
}

// TestWebPagesCannotDriveIt: the requests a foreign page can make — a
// DNS-rebinding page's (foreign Host), a cross-site fetch (foreign
// Origin, also with the right key), a form or text/plain POST (no
// preflight) — are refused; the pages of this machine and those allowed
// by flag are answered, with the CORS headers and preflights a browser
// front end needs.
func TestWebPagesCannotDriveIt(t *testing.T) {
	_, ts := newServer(t, Options{})
	_, keyed := newServer(t, Options{APIKey: "sekret"})
	_, allowing := newServer(t, Options{AllowHosts: []string{"my-box.lan"}, AllowOrigins: []string{"https://*.example.org", "null", "chrome-extension://abcdef"}})
	chat := `{"model":"` + llamaID + `","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
	const js = "application/json"
	cases := []struct {
		name   string
		base   string
		b      browser
		status int
		acao   string // Access-Control-Allow-Origin expected
	}{
		{"rebinding GET", ts.URL, browser{method: "GET", path: "/v1/models", host: "evil.example:8917"}, 403, ""},
		{"rebinding POST", ts.URL, browser{method: "POST", path: "/v1/chat/completions", host: "evil.example", origin: "http://evil.example", contentType: js, body: chat}, 403, ""},
		{"rebinding health", ts.URL, browser{method: "GET", path: "/health", host: "evil.example"}, 403, ""},
		{"localhost any port", ts.URL, browser{method: "GET", path: "/v1/models", host: "localhost:1234"}, 200, ""},
		{"ipv6 loopback", ts.URL, browser{method: "GET", path: "/v1/models", host: "[::1]:8917"}, 200, ""},
		{"allowed host", allowing.URL, browser{method: "GET", path: "/v1/models", host: "my-box.lan:8917"}, 200, ""},
		{"foreign origin", ts.URL, browser{method: "POST", path: "/v1/chat/completions", origin: "https://evil.example", contentType: js, body: chat}, 403, ""},
		{"foreign origin, right key", keyed.URL, browser{method: "POST", path: "/v1/chat/completions", origin: "https://evil.example", contentType: js, body: chat, header: []string{"Authorization", "Bearer sekret"}}, 403, ""},
		{"text/plain cross-site", ts.URL, browser{method: "POST", path: "/v1/chat/completions", origin: "https://evil.example", contentType: "text/plain;charset=UTF-8", body: chat}, 403, ""},
		{"text/plain no origin", ts.URL, browser{method: "POST", path: "/v1/chat/completions", contentType: "text/plain", body: chat}, 415, ""},
		{"form post", ts.URL, browser{method: "POST", path: "/v1/completions", origin: "http://localhost:3000", contentType: "application/x-www-form-urlencoded", body: "a=b"}, 415, "http://localhost:3000"},
		{"null origin", ts.URL, browser{method: "GET", path: "/v1/models", origin: "null"}, 403, ""},
		{"extension", ts.URL, browser{method: "GET", path: "/v1/models", origin: "chrome-extension://abcdef"}, 403, ""},
		{"local page", ts.URL, browser{method: "POST", path: "/v1/chat/completions", origin: "http://localhost:5173", contentType: "application/json; charset=utf-8", body: chat}, 200, "http://localhost:5173"},
		{"local page 127", ts.URL, browser{method: "GET", path: "/v1/models", origin: "http://127.0.0.1:8080"}, 200, "http://127.0.0.1:8080"},
		{"https localhost is another origin", ts.URL, browser{method: "GET", path: "/v1/models", origin: "https://localhost:8080"}, 403, ""},
		{"allowed pattern", allowing.URL, browser{method: "GET", path: "/v1/models", origin: "https://app.example.org"}, 200, "https://app.example.org"},
		{"allowed null", allowing.URL, browser{method: "GET", path: "/v1/models", origin: "null"}, 200, "null"},
		{"allowed extension", allowing.URL, browser{method: "GET", path: "/v1/models", origin: "chrome-extension://abcdef"}, 200, "chrome-extension://abcdef"},
		{"preflight allowed, no key needed", keyed.URL, browser{method: "OPTIONS", path: "/v1/chat/completions", origin: "http://localhost:3000",
			header: []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type,x-stainless-os"}}, 204, "http://localhost:3000"},
		{"preflight foreign", ts.URL, browser{method: "OPTIONS", path: "/v1/chat/completions", origin: "https://evil.example",
			header: []string{"Access-Control-Request-Method", "POST"}}, 403, ""},
		{"no content type", ts.URL, browser{method: "POST", path: "/v1/chat/completions", body: chat}, 415, ""},
	}
	for _, c := range cases {
		resp, raw := c.b.send(t, c.base)
		if resp.StatusCode != c.status || resp.Header.Get("Access-Control-Allow-Origin") != c.acao {
			t.Errorf("%s: %d (Access-Control-Allow-Origin %q) %s; want %d and %q", c.name, resp.StatusCode,
				resp.Header.Get("Access-Control-Allow-Origin"), clip(raw), c.status, c.acao)
		}
		if c.status == 204 {
			h := resp.Header
			if !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "x-stainless-os") {
				t.Errorf("%s: preflight headers %v", c.name, h)
			}
		}
	}
}

func TestOriginPatterns(t *testing.T) {
	g := newGuard(Options{AllowOrigins: []string{"https://*.example.org"}})
	for origin, want := range map[string]bool{
		"http://localhost": true, "http://localhost:80": true, "http://127.0.0.1:9": true, "http://[::1]:3000": true,
		"HTTP://LOCALHOST:3000": true, "https://a.example.org": true, "https://example.org": false,
		"http://localhost.evil.example": false, "http://localhost:3000.evil.example": false, "http://localhost:": false,
		"http://127.0.0.2:1": false, "null": false, "file://": false, "moz-extension://x": false,
	} {
		if got := g.originAllowed(origin); got != want {
			t.Errorf("%s: allowed %v, want %v", origin, got, want)
		}
	}
	h := newGuard(Options{ListenHost: "0.0.0.0"})
	if !h.hostAllowed("192.168.1.5:8917") {
		t.Error("a server bound to every interface refused its LAN name")
	}
}

// TestQueuedLeaveAtShutdown: a request waiting in the queue when the
// shutdown begins gets 503 at once, not when the grace period ends, and
// never starts generating.
func TestQueuedLeaveAtShutdown(t *testing.T) {
	s, ts := newServer(t, Options{})
	e := s.byID[llamaID]
	e.queued.Add(1) // the model is busy: its turn is held
	e.turn <- struct{}{}
	waited := make(chan reply, 1)
	go func() { waited <- post(t, ts.URL+"/v1/chat/completions", chatBody(4, false, user("queued"))) }()
	for deadline := time.Now().Add(10 * time.Second); e.queued.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never queued")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go s.Shutdown(ctx)
	select {
	case r := <-waited:
		if r.status != 503 || !strings.Contains(string(r.raw), "shutting down") {
			t.Errorf("queued at shutdown: %d %s", r.status, r.raw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queued request still waits 5 s into a one-minute grace period")
	}
	if s.Served() != 0 {
		t.Errorf("%d requests started after the shutdown began", s.Served())
	}
	<-e.turn
	e.queued.Add(-1)
}
