package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
)

// lockedBuffer is a buffer the server goroutine writes while the test reads.
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

var serveURL = regexp.MustCompile(`http://(\S+)/v1`)

// startServe runs etchat serve in the background and returns its base URL
// (…/v1); the server is stopped, as by SIGINT, when the test ends, and must
// then exit 0.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := startServeEnv(t, func(string) string { return "" }, args...)
	return url
}

// startServeEnv is startServe with an environment; it also returns the
// server's log (stderr).
func startServeEnv(t *testing.T, getenv func(string) string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}
	done := make(chan int, 1)
	go func() { done <- Run(ctx, env, append([]string{"serve", "--port", "0"}, args...)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := serveURL.FindStringSubmatch(out.String()); m != nil {
			return m[0], &errb
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s%s", code, out.String(), errb.String())
		default:
		}
	}
	t.Fatalf("serve never said where it listens: %s", errb.String())
	return "", nil
}

func TestServeFlags(t *testing.T) {
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	for _, c := range []struct {
		args []string
		in   string
	}{
		{[]string{"--host", "0.0.0.0", "--models", pte}, "refusing to serve it without --api-key"},
		{[]string{"--port", "70000", "--models", pte}, "-port"},
		{[]string{"--max-models", "0", "--models", pte}, "-max-models"},
		{[]string{"--engine", "warp", "--models", pte}, "-engine"},
	} {
		code, _, stderr := runCLI(t, append([]string{"serve"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.in) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
	ingraph := filepath.Join(fixtures.Unpacked(t, fixtures.InGraph), "model.pte")
	if code, _, stderr := runCLI(t, "serve", "--no-save", "--models", ingraph); code != 1 || !strings.Contains(stderr, "off-graph") {
		t.Errorf("in-graph model: exit %d, %s", code, stderr)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	return Run(context.Background(), env, args), out.String(), errb.String()
}

// TestServeOpenAIClient drives etchat serve with the official openai npm
// package (tests/openai-client, installed by scripts/setup): its greedy
// ids must be etchat run --json's for the same prompt, its errors the
// client's typed errors. Without node or the package it is skipped, except
// under CI=true, where a missing package fails.
func TestServeOpenAIClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the openai client test needs Node 18 or later")
	}
	// openai 6.x declares no engines and its README names Node 20 LTS, but
	// this test passes on Debian 12's own nodejs 18.20.4 (what scripts/setup
	// installs on a machine without Node; scripts/check-fresh ran it).
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	} else if major, _, _ := strings.Cut(strings.TrimSpace(string(v)), "."); atoi(major) < 18 {
		t.Skipf("node is %s: the openai client test needs Node 18 or later", strings.TrimSpace(string(v)))
	}
	dir, _ := filepath.Abs(filepath.Join("..", "tests", "openai-client"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the openai package is not installed in %s: run scripts/setup (%v)", dir, err)
		}
		t.Skipf("the openai package is not installed in %s: run scripts/setup", dir)
	}
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	const prompt, n = "Hello from Node", 8
	code, stdout, stderr := runRunCLI(t, "", "--pte", pte, "--prompt", prompt, "--max-new-tokens", "8", "--engine", "cpu", "--json")
	if code != 0 {
		t.Fatalf("etchat run: %d %s", code, stderr)
	}
	var doc runDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.GeneratedIDs) != n {
		t.Fatalf("etchat run --json: %v %s", err, stdout)
	}
	base := startServe(t, "--models", pte, "--engine", "cpu", "--api-key", "test-key", "--no-save")
	expect, _ := json.Marshal(map[string]any{"model": "llama3-tiny-offgraph", "prompt": prompt, "max_tokens": n,
		"ids": doc.GeneratedIDs, "text": doc.Text})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ETCHAT_BASE_URL="+base, "ETCHAT_API_KEY=test-key", "ETCHAT_EXPECT="+string(expect))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node test.mjs: %v\n%s", err, out)
	}
	var seen struct {
		ChatIDs    []int          `json:"chat_ids"`
		Errors     string         `json:"errors"`
		Structured map[string]any `json:"structured"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &seen); err != nil || seen.Errors != "typed" || len(seen.ChatIDs) != n || len(seen.Structured) != 3 {
		t.Errorf("node's report: %v %s", err, out)
	}
	for i := range seen.ChatIDs {
		if seen.ChatIDs[i] != doc.GeneratedIDs[i] {
			t.Errorf("openai client's ids %v, etchat run's %v", seen.ChatIDs, doc.GeneratedIDs)
			break
		}
	}
}

// TestNativeServe: etchat serve --engine mlx against the real native
// library answers a greedy chat completion with the native engine's own
// ids (etchat run --engine mlx --json for the same prompt), and a second
// identical request reuses the cached prompt on the native session and
// answers the same. Skipped, saying why, without the library.
func TestNativeServe(t *testing.T) {
	lib := nativelib.Require(t)
	getenv := func(k string) string {
		if k == nativelib.Env {
			return lib
		}
		return ""
	}
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	const prompt, n = "Hello from the native engine", 8
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}
	if code := Run(context.Background(), env, []string{"run", "--pte", pte, "--prompt", prompt, "--max-new-tokens", "8",
		"--engine", "mlx", "--json"}); code != 0 {
		t.Fatalf("etchat run --engine mlx: exit %d: %s", code, errb.String())
	}
	var own runDoc
	if err := json.Unmarshal(out.Bytes()[bytes.LastIndex(out.Bytes(), []byte("\n{"))+1:], &own); err != nil || len(own.GeneratedIDs) != n {
		t.Fatalf("etchat run --json: %v %s", err, out.String())
	}
	base, log := startServeEnv(t, getenv, "--models", pte, "--engine", "mlx", "--no-save")
	body := fmt.Sprintf(`{"model":"llama3-tiny-offgraph","messages":[{"role":"user","content":%q}],"max_tokens":%d,"temperature":0,"return_token_ids":true}`, prompt, n)
	ask := func() (ids []int, cached int) {
		t.Helper()
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Choices []struct {
				TokenIDs []int `json:"token_ids"`
			} `json:"choices"`
			Prompt []int `json:"prompt_token_ids"`
			Usage  struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 || len(doc.Choices) != 1 {
			t.Fatalf("chat completion: %d %v; log:\n%s", resp.StatusCode, err, log.String())
		}
		if len(doc.Prompt) == 0 {
			t.Fatal("no prompt_token_ids")
		}
		return doc.Choices[0].TokenIDs, doc.Usage.Details.Cached - (len(doc.Prompt) - 1)
	}
	ids, _ := ask()
	if !slices.Equal(ids, own.GeneratedIDs) {
		t.Errorf("served on mlx %v, the native engine's own %v", ids, own.GeneratedIDs)
	}
	if !strings.Contains(log.String(), "engine: mlx on ") {
		t.Errorf("the server's log does not say it loaded on mlx:\n%s", log.String())
	}
	again, short := ask()
	if !slices.Equal(again, own.GeneratedIDs) || short != 0 {
		t.Errorf("again: %v (cached %d short of the prompt but its last token), want %v", again, short, own.GeneratedIDs)
	}
}

// TestServeAllInterfaces: --host 0.0.0.0 prints a URL a client can use
// (loopback, not 0.0.0.0), and a client reaches the server at it.
func TestServeAllInterfaces(t *testing.T) {
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	url := startServe(t, "--host", "0.0.0.0", "--api-key", "k", "--no-save", "--models", pte)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %s", url)
	}
	req, _ := http.NewRequest("GET", url+"/models", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET %s/models: %d", url, resp.StatusCode)
	}
}

// TestServeSecondSignalStopsNow: the first SIGINT lets a request in flight
// (here one whose client sends half its body) finish for the grace period
// (a minute); a second SIGINT stops the server at once.
func TestServeSecondSignalStopsNow(t *testing.T) {
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	var out, errb lockedBuffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), env, []string{"serve", "--port", "0", "--no-save", "--grace", "1m", "--models", pte})
	}()
	var addr string
	for deadline := time.Now().Add(60 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if m := serveURL.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL: %s%s", out.String(), errb.String())
		}
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":", addr)
	time.Sleep(200 * time.Millisecond) // the handler is reading the body
	wait := func(what string) {
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), what); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q: %s", what, errb.String())
			}
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	wait("press Ctrl-C again")
	select {
	case code := <-done:
		t.Fatalf("exited %d while a request was in flight in the grace period", code)
	case <-time.After(300 * time.Millisecond):
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second SIGINT did not stop the server")
	}
}
