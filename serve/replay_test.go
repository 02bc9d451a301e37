package serve

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"etchat/inference"
)

// turnResult is one streamed turn as a client sees it.
type turnResult struct {
	text           string
	prompt, gen    []int
	cached, tokens int
	finish         string
	ttft, total    time.Duration
}

// streamTurn sends a streaming chat request and times the first content
// (TTFT as a client measures it).
func streamTurn(t *testing.T, url string, body map[string]any) turnResult {
	t.Helper()
	body["stream_options"] = map[string]any{"include_usage": true}
	start := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", jsonBytes(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var r turnResult
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(line), &d); err != nil || path(d, "error") != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if s, _ := path(d, "choices", 0, "delta", "content").(string); s != "" {
			if r.ttft == 0 {
				r.ttft = time.Since(start)
			}
			b.WriteString(s)
		}
		if f, ok := path(d, "choices", 0, "finish_reason").(string); ok {
			r.finish = f
			r.gen = ints(path(d, "choices", 0, "token_ids"))
			r.prompt = ints(path(d, "prompt_token_ids"))
		}
		if u := path(d, "usage"); u != nil {
			r.cached = num(path(u, "prompt_tokens_details", "cached_tokens"))
			r.tokens = num(path(u, "completion_tokens"))
		}
	}
	r.total = time.Since(start)
	if !done {
		t.Fatal("stream without [DONE]")
	}
	r.text = b.String()
	return r
}

// TestPrefixReuseReplay replays a 7-turn chat the way a client does —
// each request resends the whole history with the assistant turns as the
// server returned them — against a server with prefix reuse and one
// without, side by side, turn by turn. With reuse every turn's
// cached_tokens is exactly the token prefix the new prompt shares with the
// previous prompt and reply (at least the whole previous prompt); without,
// it is 0. Both give the same replies, token for token. The replay runs
// replayRounds times on fresh servers, and the table logs each turn's
// median TTFT, so that one noisy request on a shared machine does not
// make the column.
func TestPrefixReuseReplay(t *testing.T) {
	// Seven turns of four-token replies fill most of the fixture's 128-token
	// context (the cache may not exceed what the model was exported for).
	questions := []string{"Hi", "How are you?", "Tell me more", "Why?", "And then", "Really", "Go on"}
	with, without := make([][]time.Duration, len(questions)), make([][]time.Duration, len(questions))
	var rows []replayRow
	for range replayRounds {
		rows = replay(t, questions)
		for i, r := range rows {
			with[i], without[i] = append(with[i], r.ttftWith), append(without[i], r.ttftWithout)
		}
	}
	t.Logf("turn  prompt  cached(reuse)  prev prompt+reply  lost to re-tokenising  TTFT reuse  TTFT none  (median of %d)", replayRounds)
	var restWith, restWithout []time.Duration
	for i, r := range rows {
		mw, mo := median(with[i]), median(without[i])
		t.Logf("%4d  %6d  %13d  %17d  %21d  %10v  %9v", i+1, r.prompt, r.cached, r.held, r.held-r.cached,
			mw.Round(time.Microsecond), mo.Round(time.Microsecond))
		if i > 0 {
			restWith, restWithout = append(restWith, mw), append(restWithout, mo)
		}
	}
	t.Logf("median TTFT, turns 2-%d: with reuse %v, without %v", len(questions), median(restWith), median(restWithout))
}

// replayRounds is how many times the replay runs.
const replayRounds = 5

// replayRow is one turn of a replay.
type replayRow struct {
	prompt, cached, held  int
	ttftWith, ttftWithout time.Duration
}

// replay runs the chat once on a fresh server with reuse and one without,
// checking each turn.
func replay(t *testing.T, questions []string) []replayRow {
	t.Helper()
	_, withTS := newServer(t, Options{})
	_, withoutTS := newServer(t, Options{NoPrefixReuse: true})
	const replyTokens = 4
	var history []inference.Message
	var prev turnResult
	var rows []replayRow
	for i, q := range questions {
		history = append(history, user(q))
		with := streamTurn(t, withTS.URL, chatBody(replyTokens, true, history...))
		without := streamTurn(t, withoutTS.URL, chatBody(replyTokens, true, history...))
		if !slices.Equal(with.gen, without.gen) || with.text != without.text || !slices.Equal(with.prompt, without.prompt) {
			t.Fatalf("turn %d: reuse changed the reply: %v vs %v", i+1, with.gen, without.gen)
		}
		if without.cached != 0 {
			t.Errorf("turn %d without reuse: cached %d", i+1, without.cached)
		}
		want, held := 0, 0
		if i > 0 {
			heldIDs := append(slices.Clone(prev.prompt), prev.gen...)
			held = len(heldIDs)
			want = commonPrefixLen(heldIDs, with.prompt)
			if want < len(prev.prompt) {
				t.Errorf("turn %d: the previous prompt is not a token prefix of this one (%d of %d shared)", i+1, want, len(prev.prompt))
			}
		}
		if with.cached != want {
			t.Errorf("turn %d: cached_tokens %d, want %d (the prefix shared with the previous prompt and reply)", i+1, with.cached, want)
		}
		rows = append(rows, replayRow{prompt: len(with.prompt), cached: with.cached, held: held, ttftWith: with.ttft, ttftWithout: without.ttft})
		history = append(history, inference.Message{Role: inference.RoleAssistant, Text: with.text})
		prev = with
	}
	return rows
}

func commonPrefixLen(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
