// The branch tree (issue 40 item 7): the conversation's whole tree, which
// turn each ‹k/n› belongs to, and switching to any branch from it.

package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"etchat/internal/runlog"
	"etchat/store"
)

// TreeNode is one message of the conversation's tree, in the order the
// tree view lists them (depth first, alternatives oldest first).
type TreeNode struct {
	ID   int64
	Role string
	Text string
	// Turn is the turn the message belongs to (a reply is its question's
	// turn; the system prompt is turn 0); K and N its place among its
	// alternatives (‹k/n›, N 1 without).
	Turn, K, N int
	// Level is how many branch points lie above it (the view's indent).
	Level int
	// Current: on the path the transcript shows; Leaf: its last message.
	Current, Leaf bool
}

// Label is the tree view's line: "Turn 2 · You ‹1/2› · hello there".
func (n TreeNode) Label() string {
	who := map[string]string{"user": "You", "assistant": "Assistant", "system": "System"}[n.Role]
	if who == "" {
		who = n.Role
	}
	head := fmt.Sprintf("Turn %d · %s", n.Turn, who)
	if n.Turn == 0 {
		head = who
	}
	if n.N > 1 {
		head += fmt.Sprintf(" ‹%d/%d›", n.K, n.N)
	}
	text, _, more := strings.Cut(strings.TrimSpace(n.Text), "\n")
	if r := []rune(text); len(r) > 60 {
		text, more = string(r[:60]), true
	}
	if more {
		text += "…"
	}
	return head + " · " + text
}

// TreeStore keeps the conversation tree (the store adapter has it).
type TreeStore interface {
	Tree(ctx context.Context, id int64) ([]TreeNode, error)
	// SwitchTo makes the branch through message msgID the current path
	// at revision at (stale: refused) and returns it.
	SwitchTo(ctx context.Context, id int64, at Revision, msgID int64) ([]Message, Revision, error)
}

// BuildTree lists msgs (all of a conversation's, any order) as the tree
// view does, current marking the current path's ids.
func BuildTree(msgs []store.Message, current []int64) []TreeNode {
	kids := map[int64][]store.Message{}
	for _, m := range msgs {
		kids[m.ParentID] = append(kids[m.ParentID], m)
	}
	for _, k := range kids {
		sort.Slice(k, func(i, j int) bool { return k[i].ID < k[j].ID })
	}
	on := map[int64]bool{}
	for _, id := range current {
		on[id] = true
	}
	var leaf int64
	if len(current) > 0 {
		leaf = current[len(current)-1]
	}
	var out []TreeNode
	var walk func(parent int64, turn, level int)
	walk = func(parent int64, turn, level int) {
		sib := kids[parent]
		for i, m := range sib {
			t := turn
			if m.Role == "user" {
				t++
			}
			out = append(out, TreeNode{ID: m.ID, Role: m.Role, Text: m.Text, Turn: t, K: i + 1, N: len(sib), Level: level,
				Current: on[m.ID], Leaf: m.ID == leaf})
			next := level
			if len(kids[m.ID]) > 1 {
				next++
			}
			walk(m.ID, t, next)
		}
	}
	walk(0, 0, 0)
	return out
}

func (s *storeAdapter) Tree(ctx context.Context, id int64) ([]TreeNode, error) {
	all, err := s.db.Messages(ctx, id)
	if err != nil {
		return nil, err
	}
	_, path, err := s.db.CurrentPath(ctx, id)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(path))
	for i, m := range path {
		ids[i] = m.ID
	}
	return BuildTree(all, ids), nil
}

func (s *storeAdapter) SwitchTo(ctx context.Context, id int64, at Revision, msgID int64) ([]Message, Revision, error) {
	path, rev, err := s.db.SwitchToAt(ctx, id, &at, msgID)
	if err != nil {
		return nil, Revision{}, err
	}
	return runlog.Messages(path), rev, nil
}

// errNoTree: the tree is kept in the database.
var errNoTree = errors.New("branches are kept in the database, which is not open")

// Tree is the open conversation's tree.
func (c *Chat) Tree(ctx context.Context) ([]TreeNode, error) {
	ts, ok := c.store.(TreeStore)
	c.mu.Lock()
	id := c.st.ConvID
	c.mu.Unlock()
	switch {
	case !ok:
		return nil, errNoTree
	case id == 0:
		return nil, errors.New("no conversation is open")
	}
	return ts.Tree(ctx, id)
}

// SwitchToMessage shows the branch through message msgID (a node of Tree)
// and continues from it; the cache keeps the prefix the two branches share.
func (c *Chat) SwitchToMessage(msgID int64) error {
	ts, ok := c.store.(TreeStore)
	if !ok {
		return errNoTree
	}
	return c.switchVia(func(ctx context.Context, id int64, at Revision) ([]Message, Revision, error) {
		return ts.SwitchTo(ctx, id, at, msgID)
	})
}
