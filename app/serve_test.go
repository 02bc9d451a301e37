package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"etchat/inference"
	"etchat/inference/sampler"
	"etchat/internal/fixtures"
	"etchat/internal/nativelib"
	"etchat/serve"
)

// The Serve switch against the real CPU engine on the llama3 fixture: the
// server shares the chat's loaded program, keeps its own cache, and takes
// turns with the chat.

const (
	serveModelID = "llama3-tiny-offgraph"
	chatBudget   = 12 // the chat's reply budget
	serveBudget  = 8  // the server's
)

// servedChat is a chat on the window's opener (with the registry the
// switch shares) with a conversation open, and the switch.
type servedChat struct {
	c        *Chat
	errs     *[]error
	path     string
	programs *chatPrograms
	sw       *ServeSwitch
	backend  Backend
}

func newServedChat(t *testing.T) *servedChat {
	t.Helper()
	return newServedChatEnv(t, func(string) string { return "" })
}

// newServedChatEnv is newServedChat with the environment the native
// library search reads.
func newServedChatEnv(t *testing.T, getenv func(string) string) *servedChat {
	t.Helper()
	b, _ := testBackend(t)
	programs := &chatPrograms{}
	b.Opener = &engineOpener{getenv: getenv, programs: programs}
	path := modelCopy(t, fixtures.Llama3, true)
	c, errs := newTestChat(t, b, inspect(t, path))
	sc := &servedChat{c: c, errs: errs, path: path, programs: programs, sw: &ServeSwitch{}, backend: b}
	t.Cleanup(func() { sc.sw.Stop() })
	return sc
}

func (sc *servedChat) start(t *testing.T) string {
	t.Helper()
	url, err := sc.sw.Start(sc.programs, sc.path, greedy(chatBudget), nil, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// setHooks sets the test hooks of the server's side of a turn.
func (sc *servedChat) setHooks(waiting, held func()) {
	sc.programs.mu.Lock()
	sc.programs.hooks.waiting, sc.programs.hooks.held = waiting, held
	sc.programs.mu.Unlock()
}

// chatEngine is the engine instance the chat's session runs on.
func (sc *servedChat) chatEngine(t *testing.T) any {
	t.Helper()
	sc.programs.mu.Lock()
	defer sc.programs.mu.Unlock()
	s := sc.programs.open[sc.path]
	if s == nil {
		t.Fatal("the chat has no program registered")
	}
	return s.engine.Engine
}

// referenceChat is what a chat alone (no server, its own engine) holds
// after sending texts in turn at temperature 0.
func referenceChat(t *testing.T, path string, texts ...string) []Message {
	t.Helper()
	return referenceChatOn(t, hermeticOpener(), greedy(chatBudget), path, texts...)
}

// referenceChatOn is referenceChat through opener with settings s.
func referenceChatOn(t *testing.T, opener Opener, s Settings, path string, texts ...string) []Message {
	t.Helper()
	b, _ := testBackend(t)
	b.Opener = opener
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(s))
	var st ChatState
	for _, text := range texts {
		st = run(t, c, errs, c.Send(text))
	}
	return st.Messages
}

// engineIDs are the engine's own greedy ids for a user message rendered
// with the template, from a fresh session of its own.
func engineIDs(t *testing.T, path, text string, n int) []int {
	t.Helper()
	return engineIDsOn(t, inference.LoadOptions{Engine: "cpu"}, path, text, n)
}

// engineIDsOn is engineIDs on the engine o chooses.
func engineIDsOn(t *testing.T, o inference.LoadOptions, path, text string, n int) []int {
	t.Helper()
	ctx := context.Background()
	o.NeedTokenizer, o.Policy = true, greedy(chatBudget).Policy()
	m, err := inference.Load(ctx, path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt, err := m.Chat.Template.Render([]inference.Message{{Role: inference.RoleUser, Text: text}}, true)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := m.Chat.Tokenizer.Encode(prompt, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := inference.Generate(ctx, m.Session, ids, m.Generation(n, sampler.Sampling{}))
	if err != nil {
		t.Fatal(err)
	}
	return res.GeneratedIDs
}

type served struct {
	status int
	ids    []int
	cached int
	raw    string
	err    error
}

// ask sends a temperature-0 chat completion and reads its ids.
func ask(url, text string, n int) served {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"temperature":0,"return_token_ids":true}`,
		serveModelID, text, n)
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return served{err: err}
	}
	defer resp.Body.Close()
	var doc struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	var raw json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&raw)
	out := served{status: resp.StatusCode, raw: string(raw), err: err}
	if err == nil && json.Unmarshal(raw, &doc) == nil && len(doc.Choices) == 1 {
		out.ids, out.cached = doc.Choices[0].TokenIDs, doc.Usage.Details.Cached
	}
	return out
}

// assertSameTranscript compares what two chats hold: roles, texts and token ids.
func assertSameTranscript(t *testing.T, what string, got, want []Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].Role != want[i].Role || got[i].Text != want[i].Text || !slices.Equal(got[i].IDs, want[i].IDs) {
			t.Errorf("%s: message %d is %s %q %v, want %s %q %v", what, i, got[i].Role, got[i].Text, got[i].IDs, want[i].Role, want[i].Text, want[i].IDs)
		}
	}
}

func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// TestServeSwitch: the switch serves the model the chat has open and only
// that, on the chat's engine instance (one loaded program), counts the
// requests it answered, follows the chat onto a reloaded program, answers
// 503 once the chat has closed the model, and stops (twice is harmless).
func TestServeSwitch(t *testing.T) {
	sc := newServedChat(t)
	if _, err := sc.sw.Start(sc.programs, sc.path, greedy(chatBudget), nil, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "not open in the app's chat") {
		t.Fatalf("Start with no conversation open: %v", err)
	}
	if _, err := sc.sw.Start(nil, sc.path, greedy(chatBudget), nil, "127.0.0.1:0"); err == nil {
		t.Error("Start without the opener's registry succeeded")
	}
	run(t, sc.c, sc.errs, sc.c.NewConversation(greedy(chatBudget)))
	url := sc.start(t)
	if _, err := sc.sw.Start(sc.programs, sc.path, greedy(chatBudget), nil, "127.0.0.1:0"); err == nil {
		t.Error("a second Start while running succeeded")
	}
	want := engineIDs(t, sc.path, "hi", 3)
	if r := ask(url, "hi", 3); r.status != 200 || !slices.Equal(r.ids, want) {
		t.Fatalf("chat through the switch: %d %v, engine %v (%s)", r.status, r.ids, want, r.raw)
	}
	loaded := sc.sw.srv.Loaded()
	if len(loaded) != 1 || !loaded[0].Shared || loaded[0].Engine.Engine != sc.chatEngine(t) {
		t.Errorf("the server's session is not on the chat's engine instance: %+v", loaded)
	}
	running, got, models, n := sc.sw.Status()
	if !running || got != url || len(models) != 1 || models[0] != serveModelID || n != 1 {
		t.Errorf("status %v %q %v %d", running, got, models, n)
	}

	// New settings load the model anew (a new engine, a new program): the
	// server follows instead of keeping the old one loaded.
	s := greedy(chatBudget)
	s.Capacity = 96
	run(t, sc.c, sc.errs, sc.c.ApplySettings(s))
	if r := ask(url, "hi", 3); r.status != 200 || !slices.Equal(r.ids, want) {
		t.Fatalf("after the chat reloaded: %d %v, engine %v", r.status, r.ids, want)
	}
	if loaded := sc.sw.srv.Loaded(); len(loaded) != 1 || loaded[0].Engine.Engine != sc.chatEngine(t) {
		t.Errorf("after the chat reloaded, the server is on %+v, not the chat's new engine", loaded)
	}

	// The chat closes the model: the server closes its session too, and
	// says why it cannot answer.
	if err := sc.c.SetModel(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(sc.sw.srv.Loaded()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if loaded := sc.sw.srv.Loaded(); len(loaded) != 0 {
		t.Errorf("the server still holds %+v after the chat closed the model", loaded)
	}
	if r := ask(url, "hi", 3); r.status != 503 || !strings.Contains(r.raw, "not open in the app's chat") {
		t.Errorf("with the model closed in the chat: %d %s", r.status, r.raw)
	}

	if err := sc.sw.Stop(); err != nil {
		t.Fatal(err)
	}
	if running, _, _, _ := sc.sw.Status(); running {
		t.Error("still running after Stop")
	}
	if err := sc.sw.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := http.Get(url + "/models"); err == nil {
		t.Error("the port still answers after Stop")
	}
}

// TestServeSwitchStoresConversations: with the dialog's option on, the
// switch's server saves a chat request as a conversation of the chat's
// model, which the app's conversation list shows beside the chat's own.
func TestServeSwitchStoresConversations(t *testing.T) {
	sc := newServedChat(t)
	run(t, sc.c, sc.errs, sc.c.NewConversation(greedy(chatBudget)))
	sc.sw.SetStoreConversations(true)
	url, err := sc.sw.Start(sc.programs, sc.path, greedy(chatBudget), sc.backend.DB, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if r := ask(url, "a request from a client", 3); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if err := sc.sw.Stop(); err != nil {
		t.Fatal(err)
	}
	list, err := sc.backend.Chats.ListConversations(context.Background(), sc.path)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range list {
		found = found || c.Title == "a request from a client"
	}
	if !found {
		t.Errorf("the request is not among the model's conversations: %+v", list)
	}
}

// TestServeWaitsForChatStream: a request that arrives while the chat
// streams a reply waits for it (on the program's turn), then returns
// exactly the engine's own temperature-0 ids; the chat's transcript and
// cache are what a chat alone has, so its next turn is too.
func TestServeWaitsForChatStream(t *testing.T) {
	sc := newServedChat(t)
	wantFirst := referenceChat(t, sc.path, "Tell me a story")
	wantChat := referenceChat(t, sc.path, "Tell me a story", "And then?")
	wantServed := engineIDs(t, sc.path, "Ping", serveBudget)
	run(t, sc.c, sc.errs, sc.c.NewConversation(greedy(chatBudget)))
	url := sc.start(t)
	serverWaits := make(chan struct{}, 1)
	sc.setHooks(func() { serverWaits <- struct{}{} }, nil)

	// The chat stops at its first streamed token until the request waits.
	streaming := newPause(t)
	var paused atomic.Bool
	sc.c.OnChange = func() {
		if sc.c.State().Streaming != "" && paused.CompareAndSwap(false, true) {
			streaming.wait()
		}
	}
	if err := sc.c.Send("Tell me a story"); err != nil {
		t.Fatal(err)
	}
	within(t, streaming.reached, "the chat's first token")
	answered := make(chan served, 1)
	go func() { answered <- ask(url, "Ping", serveBudget) }()
	select {
	case <-serverWaits:
	case r := <-answered:
		t.Fatalf("the request was answered while the chat streamed: %d %s", r.status, r.raw)
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for the request to wait for the chat")
	}
	streaming.release()
	st := run(t, sc.c, sc.errs, nil)
	r := within(t, answered, "the request's answer")
	if r.err != nil || r.status != 200 || !slices.Equal(r.ids, wantServed) || r.cached != 0 {
		t.Errorf("the queued request: %d %v (cached %d, %v), engine %v: %s", r.status, r.ids, r.cached, r.err, wantServed, r.raw)
	}
	assertSameTranscript(t, "the chat's first turn", st.Messages, wantFirst)
	// The next turn reads the chat's cache: the server must not have
	// touched it.
	sc.c.OnChange = nil
	st = run(t, sc.c, sc.errs, sc.c.Send("And then?"))
	assertSameTranscript(t, "the chat's second turn", st.Messages, wantChat)
	if n := tokens(st.Messages); st.Position != n {
		t.Errorf("the chat's cache holds %d tokens, its transcript %d", st.Position, n)
	}
}

// TestChatWaitsForServer: a chat send while the server generates waits,
// saying so, then streams its reply; the request returns the engine's own
// ids, and the chat's transcript is what a chat alone has.
func TestChatWaitsForServer(t *testing.T) {
	sc := newServedChat(t)
	wantChat := referenceChat(t, sc.path, "Tell me a story")
	wantServed := engineIDs(t, sc.path, "Ping", serveBudget)
	run(t, sc.c, sc.errs, sc.c.NewConversation(greedy(chatBudget)))
	url := sc.start(t)
	// The server stops once it holds the program's turn, until released.
	held := newPause(t)
	sc.setHooks(nil, held.wait)
	answered := make(chan served, 1)
	go func() { answered <- ask(url, "Ping", serveBudget) }()
	within(t, held.reached, "the server to take the program's turn")
	if err := sc.c.Send("Tell me a story"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for sc.c.State().Activity != "Waiting for the server's reply…" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := sc.c.State(); st.Activity != "Waiting for the server's reply…" || !st.Busy || st.Streaming != "" {
		t.Fatalf("the chat while the server generates: busy %v, activity %q, streaming %q", st.Busy, st.Activity, st.Streaming)
	}
	held.release()
	r := within(t, answered, "the request's answer")
	if r.err != nil || r.status != 200 || !slices.Equal(r.ids, wantServed) {
		t.Errorf("the request: %d %v (%v), engine %v: %s", r.status, r.ids, r.err, wantServed, r.raw)
	}
	st := run(t, sc.c, sc.errs, nil)
	assertSameTranscript(t, "the chat's turn after waiting", st.Messages, wantChat)
}

// TestChatStopWhileWaitingForServer: Stop while the chat waits for the
// server takes the turn back whole (the text returns to the box), and the
// server is not disturbed.
func TestChatStopWhileWaitingForServer(t *testing.T) {
	sc := newServedChat(t)
	run(t, sc.c, sc.errs, sc.c.NewConversation(greedy(chatBudget)))
	url := sc.start(t)
	held := newPause(t)
	sc.setHooks(nil, held.wait)
	answered := make(chan served, 1)
	go func() { answered <- ask(url, "Ping", serveBudget) }()
	within(t, held.reached, "the server to take the program's turn")
	if err := sc.c.Send("Tell me a story"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for sc.c.State().Activity != "Waiting for the server's reply…" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	sc.c.Stop()
	st := run(t, sc.c, sc.errs, nil)
	if len(st.Messages) != 0 || st.Draft != "Tell me a story" {
		t.Errorf("after Stop while waiting: %d messages, draft %q", len(st.Messages), st.Draft)
	}
	sc.setHooks(nil, nil)
	held.release()
	if r := within(t, answered, "the request's answer"); r.status != 200 || len(r.ids) != serveBudget {
		t.Errorf("the request: %d %s", r.status, r.raw)
	}
}

// pause is a point where a test holds a goroutine until it lets it go
// (at the latest when the test ends, so that a failure does not hang the
// cleanup).
type pause struct {
	reached, resume chan struct{}
	arrive, leave   sync.Once
}

func newPause(t *testing.T) *pause {
	p := &pause{reached: make(chan struct{}), resume: make(chan struct{})}
	t.Cleanup(p.release)
	return p
}

// wait marks the point reached (the first time) and blocks until release.
func (p *pause) wait() {
	p.arrive.Do(func() { close(p.reached) })
	<-p.resume
}

func (p *pause) release() { p.leave.Do(func() { close(p.resume) }) }

// TestNativeServeSharesChatEngine: with the chat on the native engine
// (real library), the switch's server opens its session on the chat's
// engine instance and answers the native engine's own greedy ids, and a
// chat turn after it is a chat's alone. Skipped, saying why, without the
// library.
func TestNativeServeSharesChatEngine(t *testing.T) {
	lib := nativelib.Require(t)
	getenv := func(k string) string {
		if k == nativelib.Env {
			return lib
		}
		return ""
	}
	sc := newServedChatEnv(t, getenv)
	native := greedy(chatBudget)
	native.Engine = "mlx"
	wantChat := referenceChatOn(t, &engineOpener{getenv: getenv}, native, sc.path, "Tell me a story")
	run(t, sc.c, sc.errs, sc.c.NewConversation(native))
	if st := sc.c.State(); st.Engine.Name != "mlx" {
		t.Fatalf("the chat runs on %q, want mlx", st.Engine.Name)
	}
	url := sc.start(t)
	want := engineIDsOn(t, inference.LoadOptions{Engine: "mlx", Library: lib}, sc.path, "Ping", serveBudget)
	if r := ask(url, "Ping", serveBudget); r.status != 200 || !slices.Equal(r.ids, want) {
		t.Fatalf("served on the chat's native engine: %d %v, the engine's own %v (%s)", r.status, r.ids, want, r.raw)
	}
	if loaded := sc.sw.srv.Loaded(); len(loaded) != 1 || loaded[0].Engine.Engine != sc.chatEngine(t) || loaded[0].Engine.Name != "mlx" {
		t.Errorf("the server's session is not on the chat's native engine: %+v", loaded)
	}
	st := run(t, sc.c, sc.errs, sc.c.Send("Tell me a story"))
	assertSameTranscript(t, "the chat's turn after the request", st.Messages, wantChat)
	if n := tokens(st.Messages); st.Position != n {
		t.Errorf("the chat's cache holds %d tokens, its transcript %d", st.Position, n)
	}
}

func tokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.IDs)
	}
	return n
}

var _ serve.Host = (*chatPrograms)(nil)
