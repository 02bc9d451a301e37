package app

import (
	"context"
	"slices"
	"testing"

	"etchat/internal/fixtures"
)

// Issue 40 item 7: the branch tree lists every message of the stored tree
// with the turn it belongs to and its ‹k/n›, the shown path marked; picking
// a message of another branch shows that branch, the cache holding exactly
// what its messages do.
func TestBranchTreeShowsTurnsAndSwitches(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	path := modelCopy(t, fixtures.Llama3, true)
	NewLibrary(b.Inspector, b.Library).Add(ctx, path)
	c, errs := newTestChat(t, b, inspect(t, path))
	run(t, c, errs, c.NewConversation(greedy(4)))
	run(t, c, errs, c.Send("hello"))
	first := run(t, c, errs, c.Send("how are you"))
	st := run(t, c, errs, c.EditLast("why"))
	if !st.CanShowTree() {
		t.Fatal("tree not offered")
	}
	nodes, err := c.Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		role, text    string
		turn, k, n, l int
		cur, leaf     bool
	}
	var got []row
	for _, n := range nodes {
		got = append(got, row{n.Role, n.Text, n.Turn, n.K, n.N, n.Level, n.Current, n.Leaf})
	}
	a1, a2, a2b := first.Messages[1].Text, first.Messages[3].Text, st.Messages[3].Text
	want := []row{
		{"user", "hello", 1, 1, 1, 0, true, false},
		{"assistant", a1, 1, 1, 1, 0, true, false},
		{"user", "how are you", 2, 1, 2, 1, false, false},
		{"assistant", a2, 2, 1, 1, 1, false, false},
		{"user", "why", 2, 2, 2, 1, true, false},
		{"assistant", a2b, 2, 1, 1, 1, true, true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tree\n got %+v\nwant %+v", got, want)
	}
	if l := nodes[2].Label(); l != "Turn 2 · You ‹1/2› · how are you" {
		t.Errorf("label %q", l)
	}
	if r := TreeRow(nodes[4]); r != "      »  Turn 2 · You ‹2/2› · why" {
		t.Errorf("row %q", r)
	}

	// Picking the first branch's reply shows that branch.
	st = run(t, c, errs, c.SwitchToMessage(nodes[3].ID))
	var texts []string
	held := 0
	for _, m := range st.Messages {
		texts = append(texts, m.Text)
		held += len(m.IDs)
	}
	if !slices.Equal(texts, []string{"hello", a1, "how are you", a2}) || st.Position != held || held != first.Position {
		t.Fatalf("after the switch: %q, position %d, messages hold %d, the branch held %d", texts, st.Position, held, first.Position)
	}
	if br := st.BranchOf(2); br.K != 1 || br.N != 2 {
		t.Errorf("switched message's branch %+v", br)
	}
	nodes, _ = c.Tree(ctx)
	if !nodes[3].Leaf || nodes[4].Current {
		t.Errorf("tree after the switch: %+v", nodes)
	}
}
