package serve

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssBytes is the process's resident memory (Linux; 0 elsewhere).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestHugePromptRefusedCheaply: three 8 MB chat bodies (just under the
// body limit) at once for the 128-token model are refused as too long
// for the context without being tokenized: quickly, and with resident
// memory flat (tokenizing them whole took ~20 s of CPU and 0.8 GB each).
func TestHugePromptRefusedCheaply(t *testing.T) {
	_, ts := newServer(t, Options{})
	text := strings.Repeat("lorem ipsum dolor sit amet ", (DefaultMaxBody-4096)/27)
	body := `{"model":"` + llamaID + `","messages":[{"role":"user","content":"` + text + `"}],"max_tokens":4}`
	if len(body) >= DefaultMaxBody {
		t.Fatalf("body %d bytes, over the limit", len(body))
	}
	before := rssBytes()
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, rssBytes())
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	replies := make([]reply, 3)
	for i := range replies {
		wg.Add(1)
		go func() { defer wg.Done(); replies[i] = do(t, "POST", ts.URL+"/v1/chat/completions", body) }()
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	for i, r := range replies {
		if r.status != 400 || path(r.doc, "error", "code") != "context_length_exceeded" || !bytes.Contains(r.raw, []byte("bytes")) {
			t.Errorf("reply %d: %d %s", i, r.status, clip(string(r.raw)))
		}
	}
	grow := peak - before
	t.Logf("three %.1f MB bodies refused in %v; resident %d → %d MiB (peak growth %d MiB)", float64(len(body))/1e6, took.Round(time.Millisecond), before>>20, peak>>20, grow>>20)
	if took > 10*time.Second && !raceEnabled { // the race detector makes decoding 25 MB of JSON slow
		t.Errorf("refusing took %v", took)
	}
	if grow > 400<<20 {
		t.Errorf("resident memory grew by %d MiB", grow>>20)
	}
}
