package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// TestCompareTwoModels (issue 40 item 6): llama3-tiny (fp32 weights) and
// its 4-bit sibling llama3-tiny-q4 (same tokenizer) answer one prompt one
// after the other on the real CPU engine: each reply is exactly what a
// chat alone on that model replies, each has its own speed, and the first
// token where they differ is found and splits both texts there.
func TestCompareTwoModels(t *testing.T) {
	a := inspect(t, modelCopy(t, fixtures.Llama3, true))
	b := inspect(t, modelCopy(t, fixtures.Llama3Q4, true))
	const prompt = "Tell me about lighthouses"
	s := greedy(10)
	cmp := NewCompare(hermeticOpener())
	var running []int
	cmp.OnChange = func() {
		st := cmp.State()
		if n := len(running); n == 0 || running[n-1] != st.Running {
			running = append(running, st.Running)
		}
	}
	if err := cmp.Start(context.Background(), a, nil, prompt, s); err == nil {
		t.Error("a comparison with one model started")
	}
	if err := cmp.Start(context.Background(), a, b, "  ", s); err == nil {
		t.Error("a comparison without a prompt started")
	}
	if err := cmp.Start(context.Background(), a, b, prompt, s); err != nil {
		t.Fatal(err)
	}
	if err := cmp.Start(context.Background(), a, b, prompt, s); err == nil {
		t.Error("a second comparison started while one ran")
	}
	cmp.Wait()
	st := cmp.State()
	// One after the other: side 0 ran, then side 1, never both.
	if !slices.Equal(running, []int{0, 1, -1}) {
		t.Errorf("sides ran in the order %v, want [0 1 -1]", running)
	}
	for i, m := range []*ModelInfo{a, b} {
		side := st.Sides[i]
		if side.Err != "" || !side.Done || side.Stats == nil {
			t.Fatalf("side %d: %+v", i, side)
		}
		want := referenceChatOn(t, hermeticOpener(), s, m.Path, prompt)
		reply := want[len(want)-1]
		if !slices.Equal(side.Generated, reply.Generated) || side.Text != reply.Text {
			t.Errorf("side %d (%s) replied %v %q, a chat alone %v %q", i, side.Model, side.Generated, side.Text, reply.Generated, reply.Text)
		}
		if side.Stats.DecodeTokPerSec() <= 0 || !strings.Contains(side.Speed(), "tok/s decode") {
			t.Errorf("side %d speed %q", i, side.Speed())
		}
	}
	if !st.ByTokens {
		t.Fatal("the two llama3 fixtures share a tokenizer but were compared by text")
	}
	ga, gb := st.Sides[0].Generated, st.Sides[1].Generated
	d := 0
	for d < min(len(ga), len(gb)) && ga[d] == gb[d] {
		d++
	}
	if d == len(ga) && d == len(gb) {
		d = -1
	}
	if st.Diverge != d {
		t.Errorf("diverge at %d, the ids first differ at %d (%v / %v)", st.Diverge, d, ga, gb)
	}
	if d < 0 {
		t.Fatal("the fp32 and 4-bit models replied alike: the fixtures no longer exercise the marking")
	}
	for i := range 2 {
		same, differs := st.Split(i)
		if same+differs != st.Sides[i].Text || (differs == "" && len(st.Sides[i].Generated) > d) {
			t.Errorf("side %d split %q | %q of %q", i, same, differs, st.Sides[i].Text)
		}
	}
	sa, _ := st.Split(0)
	sb, _ := st.Split(1)
	if sa != sb {
		t.Errorf("the shared parts differ: %q / %q", sa, sb)
	}
	if note := st.DivergeNote(); !strings.Contains(note, "token ") {
		t.Errorf("note %q", note)
	}
	t.Logf("diverge at token %d; %s | %s", d, st.Sides[0].Speed(), st.Sides[1].Speed())

	// The same weights under two exports (llama3-tiny-q4 and its newer
	// metadata twin): the same reply, and the note says so.
	twin := inspect(t, modelCopy(t, fixtures.Llama3Q4Meta2, true))
	if err := cmp.Start(context.Background(), b, twin, prompt, s); err != nil {
		t.Fatal(err)
	}
	cmp.Wait()
	st = cmp.State()
	if st.Diverge != -1 || !slices.Equal(st.Sides[0].Generated, st.Sides[1].Generated) || !strings.Contains(st.DivergeNote(), "the same") {
		t.Errorf("twins: diverge %d, %v / %v, note %q", st.Diverge, st.Sides[0].Generated, st.Sides[1].Generated, st.DivergeNote())
	}
	if same, differs := st.Split(1); same != st.Sides[1].Text || differs != "" {
		t.Errorf("twins split %q | %q", same, differs)
	}
}

// TestCompareDivergeByText: replies of models with different tokenizers
// part where their texts first differ, at a character's start.
func TestCompareDivergeByText(t *testing.T) {
	s := [2]CompareSide{{Text: "naïve one", Done: true}, {Text: "naïf two", Done: true}}
	if d := diverge(s, false); d != len("naï") {
		t.Errorf("diverge %d, want %d", d, len("naï"))
	}
	// Texts that part inside a character ("é" and "è" share their first
	// byte) part at its start.
	if d := diverge([2]CompareSide{{Text: "café", Done: true}, {Text: "cafè", Done: true}}, false); d != 3 {
		t.Errorf("diverge inside a character: %d, want 3", d)
	}
	if d := diverge([2]CompareSide{{Text: "same", Done: true}, {Text: "same", Done: true}}, false); d != -1 {
		t.Errorf("same texts diverge at %d", d)
	}
	st := CompareState{Sides: s, Diverge: len("naï")}
	if a, b := st.Split(1); a != "naï" || b != "f two" {
		t.Errorf("split %q %q", a, b)
	}
}
