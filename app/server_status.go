package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"etchat/app/advice"
	"etchat/serve"
)

// The server in the main window (issue 40): the Serve dialog sets the
// port, an API key and whether other machines may connect; while it runs
// a line at the foot of the window says where, what and how busy, and
// opens the requests it answered (the Benchmarks tab's history).

// ServeConfig is what the Serve dialog sets, kept in the preferences.
type ServeConfig struct {
	Port int // 0 picks a free port
	// APIKey, when set, is required as "Authorization: Bearer KEY". It is
	// stored in the app's preferences file (plain text in the user's
	// config folder, like etchat serve's $ETCHAT_API_KEY in a shell
	// profile), shown only as dots, and never logged or put in a status.
	APIKey string
	// Network: listen on every interface, not only loopback; like etchat
	// serve --host 0.0.0.0 it needs the key.
	Network bool
}

// Check refuses a port out of range and a server open to the network
// without a key.
func (c ServeConfig) Check() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("port %d is out of range: choose 1 to 65535, or 0 for any free port", c.Port)
	}
	if c.Network && strings.TrimSpace(c.APIKey) == "" {
		return errors.New("a server other machines can reach needs an API key: set one, or serve on this machine only")
	}
	return nil
}

func (c ServeConfig) addr() string {
	host := "127.0.0.1"
	if c.Network {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(c.Port))
}

// ParsePort reads the dialog's port field ("" is etchat serve's default).
func ParsePort(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return serve.DefaultPort, nil
	}
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("port %q is not a number: type one such as %d", s, serve.DefaultPort)
	}
	return p, ServeConfig{Port: p}.Check()
}

// ServeStatus is the server as the window shows it.
type ServeStatus struct {
	Running bool
	URL     string
	Model   string // the served model's name
	Served  int64  // requests answered since it started
	// InFlight: requests being answered or waiting for their turn now.
	InFlight int64
	Keyed    bool // an API key is required
	Network  bool // other machines may connect
}

// Snapshot is the server's status now.
func (s *ServeSwitch) Snapshot() ServeStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return ServeStatus{}
	}
	st := ServeStatus{Running: true, URL: s.url, Model: ModelName(s.path), Served: s.srv.Served(),
		Keyed: s.cfg.APIKey != "", Network: s.cfg.Network}
	for _, m := range s.srv.Status() {
		st.InFlight += m.Queued
		if m.Busy {
			st.InFlight++
		}
	}
	return st
}

// IndicatorText is the line at the foot of the window while the server
// runs ("" when it does not).
func IndicatorText(st ServeStatus) string {
	if !st.Running {
		return ""
	}
	port := st.URL
	if u := strings.TrimPrefix(st.URL, "http://"); u != st.URL {
		if _, p, err := net.SplitHostPort(strings.TrimSuffix(u, "/v1")); err == nil {
			port = ":" + p
		}
	}
	reach := "this machine only"
	if st.Network {
		reach = "open to the network"
	}
	key := "no key"
	if st.Keyed {
		key = "key required"
	}
	return fmt.Sprintf("Serving %s on %s (%s, %s) · %d in flight · %d served", st.Model, port, reach, key, st.InFlight, st.Served)
}

// Preference keys of the Serve dialog.
const (
	PrefServePort    = "serve_port"
	PrefServeAPIKey  = "serve_api_key"
	PrefServeNetwork = "serve_network"
)

// ServeConfig is the Serve dialog's last settings (etchat serve's port
// by default).
func (p *Prefs) ServeConfig() ServeConfig {
	return ServeConfig{Port: p.p.IntWithFallback(PrefServePort, serve.DefaultPort), APIKey: p.p.String(PrefServeAPIKey),
		Network: p.p.Bool(PrefServeNetwork)}
}

// SetServeConfig checks and stores the Serve dialog's settings.
func (p *Prefs) SetServeConfig(c ServeConfig) error {
	c.APIKey = strings.TrimSpace(c.APIKey)
	if err := c.Check(); err != nil {
		return err
	}
	p.p.SetInt(PrefServePort, c.Port)
	p.p.SetString(PrefServeAPIKey, c.APIKey)
	p.p.SetBool(PrefServeNetwork, c.Network)
	return nil
}

// advised is err with what to do about it (app/advice) appended, for a
// dialog of the window; form names where the user changes the choice.
func advised(err error, form string) error {
	if next := advice.For(err, form); next != "" && err != nil {
		return fmt.Errorf("%w: %s", err, next)
	}
	return err
}
