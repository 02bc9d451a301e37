package serve

import (
	"slices"
	"strings"
	"testing"
	"time"

	"etchat/inference"
)

// alternate plays two conversations turn by turn, A1 B1 A2 B2 A3 B3, each
// resending its history as a client does, and returns each turn's result
// (A's, B's, interleaved).
func alternate(t *testing.T, url string) []turnResult {
	t.Helper()
	sys := inference.Message{Role: inference.RoleSystem, Text: "You answer in one short sentence about the topic you are asked."}
	convs := [2][]inference.Message{{sys}, {sys}}
	questions := [2][]string{{"Tell me about the sea and its tides.", "And the moon?", "And the sun?"},
		{"Tell me about mountains and their snow.", "And rivers?", "And lakes?"}}
	var out []turnResult
	for turn := range 3 {
		for c := range 2 {
			convs[c] = append(convs[c], user(questions[c][turn]))
			r := streamTurn(t, url, chatBody(4, true, convs[c]...))
			convs[c] = append(convs[c], inference.Message{Role: inference.RoleAssistant, Text: r.text})
			out = append(out, r)
		}
	}
	return out
}

// TestSlotsAlternatingChats: with two slots, two alternating
// conversations each keep their cache — every later turn finds its whole
// previous prompt cached — while one slot has them evict each other (only
// the shared system prompt is reused). The replies are the same either
// way, and /slots shows the two slots in use. The second-turn TTFTs are
// logged (docs/serve.md).
func TestSlotsAlternatingChats(t *testing.T) {
	_, one := newServer(t, Options{Slots: 1})
	s2, two := newServer(t, Options{Slots: 2})
	var oneRes, twoRes []turnResult
	const rounds = 3 // fresh servers each round; the logged TTFTs are medians
	ttft := map[int][]time.Duration{}
	for round := range rounds {
		if round > 0 {
			_, one = newServer(t, Options{Slots: 1})
			s2, two = newServer(t, Options{Slots: 2})
		}
		oneRes, twoRes = alternate(t, one.URL), alternate(t, two.URL)
		for i := 2; i < len(oneRes); i++ {
			ttft[1] = append(ttft[1], oneRes[i].ttft)
			ttft[2] = append(ttft[2], twoRes[i].ttft)
		}
	}
	for i := range oneRes {
		if !slices.Equal(oneRes[i].gen, twoRes[i].gen) {
			t.Errorf("turn %d: one slot %v, two %v", i, oneRes[i].gen, twoRes[i].gen)
		}
		if i < 2 {
			continue
		}
		prev := twoRes[i-2] // the same conversation's previous turn
		if twoRes[i].cached < len(prev.prompt) {
			t.Errorf("two slots, turn %d: %d cached, the previous prompt alone is %d", i, twoRes[i].cached, len(prev.prompt))
		}
		if oneRes[i].cached >= len(prev.prompt) {
			t.Errorf("one slot, turn %d: %d cached of the other conversation's cache?", i, oneRes[i].cached)
		}
	}
	var rows []string
	for i := 2; i < len(oneRes); i++ {
		rows = append(rows, strings.Join([]string{"turn", string(rune('A' + i%2)), string(rune('1' + i/2))}, ""))
	}
	t.Logf("later turns (%s): cached one slot %v, two slots %v; median TTFT one slot %v, two slots %v",
		strings.Join(rows, " "), cachedOf(oneRes[2:]), cachedOf(twoRes[2:]), median(ttft[1]), median(ttft[2]))
	st := s2.Status()
	if len(st) != 1 || len(st[0].Slots) != 2 || st[0].Max != 2 || st[0].Slots[0].Uses != 3 || st[0].Slots[1].Uses != 3 || st[0].Slots[1].Tokens == 0 {
		t.Errorf("status %+v", st)
	}
	r := do(t, "GET", two.URL+"/slots", "")
	if r.status != 200 || len(path(r.doc, "data", 0, "slots").([]any)) != 2 {
		t.Errorf("/slots: %d %s", r.status, r.raw)
	}
}

func cachedOf(rs []turnResult) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.cached)
	}
	return out
}
