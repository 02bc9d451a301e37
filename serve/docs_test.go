package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"etchat/cli"
	"etchat/internal/fixtures"
)

// TestDocsCurl runs docs/serve.md's examples: each ```sh serve block's
// etchat serve command is started (on a free port, in a folder holding the
// llama3 fixture as model.pte, like the docs test's), and each ```sh curl
// command after it is sent to that server and must get a 200 (a stream
// must end with [DONE]).
func TestDocsCurl(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "serve.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "my-model")
	llama := fixtures.Unpacked(t, fixtures.Llama3)
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"model.pte", "tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json"} {
		if err := os.Symlink(filepath.Join(llama, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	db := filepath.Join(dir, "etchat.db")
	var base string
	servers, curls := 0, 0
	for _, b := range blocks(string(md)) {
		for _, cmd := range b.cmds {
			switch b.info {
			case "sh serve":
				args := shellWords(t, cmd)
				if len(args) < 2 || args[0] != "etchat" || args[1] != "serve" {
					t.Fatalf("a serve block runs %q", cmd)
				}
				base = startServe(t, db, append(args[1:], "--port", "0", "--engine", "cpu")...)
				servers++
			case "sh curl":
				if base == "" {
					t.Fatalf("curl before any server: %s", cmd)
				}
				if err := curl(shellWords(t, cmd), base); err != nil {
					t.Errorf("%s\n%v", cmd, err)
				}
				curls++
			}
		}
	}
	if servers < 2 || curls < 5 {
		t.Errorf("ran %d servers and %d curl examples: the blocks were not found", servers, curls)
	}
}

type block struct {
	info string
	cmds []string
}

// blocks are the fenced blocks of a page, each with its lines joined over
// trailing backslashes.
func blocks(md string) []block {
	var out []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !ok || info == "" {
			continue
		}
		b := block{info: info}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			l := lines[i]
			for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
			}
			if strings.TrimSpace(l) != "" {
				b.cmds = append(b.cmds, l)
			}
		}
		out = append(out, b)
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the quoting
// the docs use: single quotes, double quotes, backslash escapes.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// curl sends what a curl command line asks (the flags the docs use),
// with the docs' address replaced by the server's.
func curl(args []string, base string) error {
	if len(args) == 0 || args[0] != "curl" {
		return fmt.Errorf("not a curl command: %q", args)
	}
	method, url := "", ""
	var body *string
	header := http.Header{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "-s" || a == "-N" || a == "-sN" || a == "-Ns":
		case a == "-H":
			v, err := next()
			if err != nil {
				return err
			}
			k, val, ok := strings.Cut(v, ":")
			if !ok {
				return fmt.Errorf("header %q", v)
			}
			header.Set(strings.TrimSpace(k), strings.TrimSpace(val))
		case a == "-d" || a == "--data":
			v, err := next()
			if err != nil {
				return err
			}
			body = &v
		case a == "-X":
			v, err := next()
			if err != nil {
				return err
			}
			method = v
		case strings.HasPrefix(a, "http://"):
			url = a
		default:
			return fmt.Errorf("the docs test does not know curl's %q: use -s, -N, -H, -d, -X", a)
		}
	}
	// The API is under /v1; /tokenize, /metrics and the like are at the
	// server's root.
	const docBase, docRoot = "http://127.0.0.1:8917/v1", "http://127.0.0.1:8917/"
	switch {
	case strings.HasPrefix(url, docBase):
		url = base + strings.TrimPrefix(url, docBase)
	case strings.HasPrefix(url, docRoot):
		url = strings.TrimSuffix(base, "/v1") + "/" + strings.TrimPrefix(url, docRoot)
	default:
		return fmt.Errorf("the URL %q is not under %s", url, docRoot)
	}
	if method == "" {
		method = "GET"
		if body != nil {
			method = "POST" // curl's -d
		}
	}
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(*body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, out)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && !bytes.HasSuffix(bytes.TrimSpace(out), []byte("data: [DONE]")) {
		return fmt.Errorf("stream without [DONE]: %s", out)
	}
	return nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listening = regexp.MustCompile(`http://(\S+)/v1`)

// startServe runs etchat serve with args until the test ends (stopped as
// by Ctrl-C; it must exit 0) and returns its base URL.
func startServe(t *testing.T, db string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "ETCHAT_DB" {
				return db
			}
			return ""
		}}
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, env, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("etchat %s exited %d: %s", strings.Join(args, " "), code, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("etchat serve did not stop")
		}
	})
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := listening.FindString(out.String()); m != "" {
			return m
		}
		select {
		case code := <-done:
			t.Fatalf("etchat serve exited %d: %s", code, errb.String())
		default:
		}
	}
	t.Fatal("etchat serve never said where it listens")
	return ""
}
