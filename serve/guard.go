package serve

// What keeps web pages from driving a keyless server on loopback (the
// rules Ollama follows, written down in docs/serve.md): a page the user
// opens may send requests to 127.0.0.1, but the browser names the page in
// Origin, a DNS-rebinding page's requests carry its own name in Host, and
// a cross-site request without a preflight can only be a "simple" one,
// whose Content-Type is never application/json.

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	pathpkg "path" // path.Match: host and origin patterns
	"strings"
)

// DefaultAllowOrigins are the browser origins allowed without
// --allow-origin: pages served from this machine, on any port.
var DefaultAllowOrigins = []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"}

// guard holds the Host and Origin rules of a server.
type guard struct {
	checkHost bool     // the server listens on loopback: Host must name it
	hosts     []string // --allow-host patterns (path.Match, lower case)
	origins   []string // allowed Origin patterns (path.Match, lower case)
}

func newGuard(o Options) guard {
	g := guard{checkHost: o.ListenHost == "" || IsLoopback(o.ListenHost)}
	for _, h := range o.AllowHosts {
		g.hosts = append(g.hosts, strings.ToLower(h))
	}
	g.origins = append(g.origins, DefaultAllowOrigins...)
	for _, p := range o.AllowOrigins {
		g.origins = append(g.origins, strings.ToLower(p))
	}
	return g
}

// hostAllowed reports whether a request's Host header names this machine
// (any port), or a host --allow-host lets in. A server bound to another
// interface checks no Host: it answers other machines by their own names,
// and it has an API key.
func (g guard) hostAllowed(hostport string) bool {
	if !g.checkHost {
		return true
	}
	host := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = strings.ToLower(h)
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || IsLoopback(host) {
		return true
	}
	for _, p := range g.hosts {
		if ok, _ := pathpkg.Match(p, host); ok || p == "*" {
			return true
		}
	}
	return false
}

// originAllowed reports whether a browser page of this origin may use the
// server. "null" (a sandboxed frame, a file:// page) and extensions'
// schemes (chrome-extension://…) are foreign unless listed.
func (g guard) originAllowed(origin string) bool {
	o := strings.ToLower(origin)
	for _, p := range g.origins {
		if p == "*" || p == o {
			return true
		}
		// "scheme://host:*" is that host on any port, or none: a port is
		// digits (a glob's * would let "localhost:1.evil.example" in).
		if pre, ok := strings.CutSuffix(p, ":*"); ok {
			if rest, ok := strings.CutPrefix(o, pre); ok && (rest == "" || rest[0] == ':' && digits(rest[1:])) {
				return true
			}
			continue
		}
		if ok, _ := pathpkg.Match(p, o); ok {
			return true
		}
	}
	return false
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// admit applies the Host and Origin rules before anything else (the API
// key included: a page holding the key is still a page) and answers CORS
// preflights. It returns false when it has answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	if !s.guard.hostAllowed(r.Host) {
		writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "host_not_allowed",
			Message: fmt.Sprintf("Host %q is not this machine; a page on another site cannot use this server (start it with --allow-host to let that name in)", clip(r.Host))})
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" { // not a browser's cross-origin request: curl, SDKs
		return true
	}
	if !s.guard.originAllowed(origin) {
		writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "origin_not_allowed",
			Message: fmt.Sprintf("requests from the web page %q are not allowed (start the server with --allow-origin to allow it)", clip(origin))})
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		// The origin is allowed, so are the headers its client sends (the
		// openai package adds its X-Stainless-* ones to the key's).
		allow := "Authorization, Content-Type"
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			allow = req
		}
		h.Set("Access-Control-Allow-Headers", allow)
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	h.Set("Access-Control-Expose-Headers", "Retry-After")
	return true
}

// jsonBody refuses a POST whose body is not declared as JSON: the content
// types a page may send cross-site without a preflight (text/plain, forms)
// never reach the decoder.
func jsonBody(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
		Message: fmt.Sprintf("the request's Content-Type is %s; send the body as application/json", clip(ct))}
}
