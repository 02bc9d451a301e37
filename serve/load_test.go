package serve

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
)

// TestLoad: 8 clients × 20 requests against one model, a third of them
// streaming and one in seven hanging up after the first chunk. Every
// answered request equals what its prompt alone gives the engine at
// temperature 0 (nothing lost or mixed up between clients), the queue
// never overflows, and no goroutine outlives the load. It logs p50/p99
// latency and throughput.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	const clients, perClient, maxTokens = 8, 20, 8
	s, ts := newServer(t, Options{QueueLimit: clients})
	prompts := []string{"alpha", "beta gamma", "delta epsilon zeta", "eta", "theta iota", "kappa"}
	want := map[string][]int{}
	for _, p := range prompts {
		_, want[p] = greedy(t, maxTokens, user(p))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	// Each prompt once first: the model's slots open as distinct prompts
	// come (each a session with its own cache), which is not the growth
	// the heap check below looks for.
	for _, p := range prompts {
		if r := post(t, ts.URL+"/v1/chat/completions", chatBody(maxTokens, false, user(p))); r.status != 200 {
			t.Fatalf("warming up: %d %s", r.status, r.raw)
		}
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	var mem0 runtime.MemStats
	runtime.ReadMemStats(&mem0)

	type result struct {
		latency time.Duration
		tokens  int
		err     error
	}
	results := make(chan result, clients*perClient)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < perClient; i++ {
				n := c*perClient + i
				p := prompts[(c+i)%len(prompts)]
				stream, hangUp := n%3 == 0, n%7 == 0
				t0 := time.Now()
				body := chatBody(maxTokens, stream || hangUp, user(p))
				resp, err := client.Post(ts.URL+"/v1/chat/completions", "application/json", jsonBytes(body))
				if err != nil {
					results <- result{err: err}
					continue
				}
				if resp.StatusCode != 200 {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					results <- result{err: fmt.Errorf("request %d: %d %s", n, resp.StatusCode, b)}
					continue
				}
				var got []int
				switch {
				case hangUp:
					buf := make([]byte, 64)
					resp.Body.Read(buf)
					resp.Body.Close()
					results <- result{latency: time.Since(t0), tokens: -1}
					continue
				case stream:
					docs, done := events(t, resp.Body)
					if !done {
						err = fmt.Errorf("request %d: stream without [DONE]", n)
					}
					for _, d := range docs {
						if path(d, "choices", 0, "finish_reason") != nil {
							got = ints(path(d, "choices", 0, "token_ids"))
						}
					}
				default:
					var r reply
					r.raw, _ = io.ReadAll(resp.Body)
					_ = jsonUnmarshal(r.raw, &r.doc)
					got = ints(path(r.doc, "choices", 0, "token_ids"))
				}
				resp.Body.Close()
				if err == nil && !slices.Equal(got, want[p]) {
					err = fmt.Errorf("request %d (%q, stream %v): %v, alone %v", n, p, stream, got, want[p])
				}
				results <- result{latency: time.Since(t0), tokens: len(got), err: err}
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(results)
	var lat []time.Duration
	tokens, answered := 0, 0
	for r := range results {
		if r.err != nil {
			t.Error(r.err)
			continue
		}
		lat = append(lat, r.latency)
		if r.tokens >= 0 {
			tokens += r.tokens
			answered++
		}
	}
	if len(lat) != clients*perClient {
		t.Fatalf("%d of %d requests completed", len(lat), clients*perClient)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("%d requests (%d answered in full) in %v: p50 %v, p99 %v, %.1f requests/s, %.0f generated tokens/s",
		len(lat), answered, elapsed.Round(time.Millisecond), p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		float64(len(lat))/elapsed.Seconds(), float64(tokens)/elapsed.Seconds())

	// Every request has left the queue and the model is free; no
	// goroutine is left behind once the connections are closed.
	e := s.byID[llamaID]
	for deadline := time.Now().Add(10 * time.Second); e.queued.Load() != 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if n := e.queued.Load(); n != 0 {
		t.Errorf("%d requests still queued", n)
	}
	client.CloseIdleConnections()
	ts.CloseClientConnections()
	var after int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		runtime.GC()
		if after = runtime.NumGoroutine(); after <= before+1 || time.Now().After(deadline) {
			break
		}
	}
	if after > before+1 {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
	var mem1 runtime.MemStats
	runtime.ReadMemStats(&mem1)
	t.Logf("heap in use: %.1f MiB before, %.1f MiB after", float64(mem0.HeapInuse)/(1<<20), float64(mem1.HeapInuse)/(1<<20))
	if grow := int64(mem1.HeapInuse) - int64(mem0.HeapInuse); grow > 64<<20 {
		t.Errorf("the heap grew by %d MiB over the load", grow>>20)
	}
}
