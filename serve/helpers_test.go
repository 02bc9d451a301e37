package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"etchat/inference/sampler"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"etchat/inference"
	"etchat/inference/kvcache"
	"etchat/internal/engines"
	"etchat/internal/fixtures"
	"etchat/internal/fuzzing"
)

func TestMain(m *testing.M) {
	engines.Register()
	fuzzing.Main(m) // bounds the fuzzer's minimisation (FuzzDecodeRequest)
}

const llamaID = "llama3-tiny-offgraph"

// testPolicy gives the llama3 fixture (get_max_ctx_len 128) room for a
// multi-turn replay and for streams long enough to interrupt; random
// weights do not mind positions past 128.
var testPolicy = kvcache.Policy{Capacity: 128, InitialCapacity: -1}

func llamaPTE(t testing.TB) string {
	return filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
}

// newServer starts a server on the CPU engine over a real loopback
// listener; it is shut down when the test ends.
func newServer(t testing.TB, o Options) (*Server, *httptest.Server) {
	t.Helper()
	if o.Models == nil {
		o.Models = []string{llamaPTE(t)}
	}
	o.Load.Engine = "cpu"
	if o.Load.Policy == (kvcache.Policy{}) {
		o.Load.Policy = testPolicy
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s, ts
}

type reply struct {
	status int
	header http.Header
	doc    map[string]any
	raw    []byte
}

func do(t testing.TB, method, url, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.doc)
	return r
}

func post(t testing.TB, url string, body any, header ...string) reply {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, http.MethodPost, url, string(b), header...)
}

// events reads a server-sent event stream: each data line's JSON, and
// whether [DONE] ended it.
func events(t testing.TB, r io.Reader) (docs []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return docs, true
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		docs = append(docs, d)
	}
	return docs, false
}

// path walks a decoded JSON document: keys for objects, ints for arrays.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func ints(v any) []int {
	a, _ := v.([]any)
	out := []int{}
	for _, x := range a {
		f, _ := x.(float64)
		out = append(out, int(f))
	}
	return out
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// The reference: the same fixture loaded on its own, generating greedily
// from a fresh cache, as etchat run does.
var ref struct {
	once sync.Once
	mu   sync.Mutex
	m    *inference.Model
	err  error
}

func refModel(t testing.TB) *inference.Model {
	t.Helper()
	ref.once.Do(func() {
		ref.m, ref.err = inference.Load(context.Background(), llamaPTE(t), inference.LoadOptions{Engine: "cpu", NeedTokenizer: true, Policy: testPolicy})
	})
	if ref.err != nil {
		t.Fatal(ref.err)
	}
	return ref.m
}

// greedy is the reference's reply to msgs (rendered with the template):
// its prompt and generated ids.
func greedy(t testing.TB, n int, msgs ...inference.Message) (prompt, gen []int) {
	t.Helper()
	m := refModel(t)
	text, err := m.Chat.Template.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ = m.Chat.Tokenizer.Encode(text, false)
	return prompt, greedyIDs(t, prompt, n)
}

func greedyIDs(t testing.TB, prompt []int, n int) []int {
	t.Helper()
	m := refModel(t)
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if err := m.Session.Clear(); err != nil {
		t.Fatal(err)
	}
	res, err := inference.Generate(context.Background(), m.Session, prompt, m.Generation(n, sampler.Sampling{}))
	if err != nil {
		t.Fatal(err)
	}
	return append([]int{}, res.GeneratedIDs...)
}

func user(text string) inference.Message {
	return inference.Message{Role: inference.RoleUser, Text: text}
}

func chatBody(n int, stream bool, msgs ...inference.Message) map[string]any {
	wm := make([]map[string]string, len(msgs))
	for i, m := range msgs {
		wm[i] = map[string]string{"role": m.Role, "content": m.Text}
	}
	return map[string]any{"model": llamaID, "messages": wm, "max_tokens": n, "temperature": 0, "stream": stream, "return_token_ids": true}
}

func jsonBytes(v any) *bytes.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
