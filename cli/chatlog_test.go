package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"etchat/inference/modelinfo"
	"etchat/internal/fixtures"
	"etchat/internal/runlog"
	"etchat/store"
)

// A terminal chat with --db is stored as the app stores its chats: the
// model in the library, the conversation's tree (an undone turn stays as a
// branch), token ids that add up to the cache, a chat run per reply, and it
// is listed by etchat history.
func TestRunInteractiveIsStored(t *testing.T) {
	ctx := context.Background()
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	dbPath := filepath.Join(t.TempDir(), "etchat.db")
	in := "hello there\nhow are you\n/undo\nbye now\n/quit\n"
	code, out, errs := runRunCLI(t, in, "--pte", pte, "--interactive", "--max-new-tokens", "6", "--ignore-eos", "--db", dbPath, "--engine", "cpu")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(errs, "not saved") {
		t.Fatalf("a save failed: %s", errs)
	}
	lens := regexp.MustCompile(`\[(\d+)/\d+ tokens\]`).FindAllStringSubmatch(out, -1)
	if len(lens) != 3 {
		t.Fatalf("want three replies:\n%s", out)
	}
	cacheLen, _ := strconv.Atoi(lens[2][1])

	db, err := store.Open(ctx, dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	abs, _ := filepath.Abs(pte)
	model, err := db.ModelByPath(ctx, abs)
	if err != nil {
		t.Fatalf("the model is not in the library: %v", err)
	}
	if model.DisplayName != modelinfo.DisplayName(abs) || model.Kind != "off-graph" || model.SHA256 == "" {
		t.Errorf("library row %+v", model)
	}
	convs, err := db.ListConversations(ctx, model.ID)
	if err != nil || len(convs) != 1 {
		t.Fatalf("conversations of the model: %v, %v", convs, err)
	}
	c := convs[0]
	if c.Title != "hello there" || c.Messages != 6 {
		t.Errorf("conversation %q with %d messages; want the first message as title and 6 messages (the undone turn kept)", c.Title, c.Messages)
	}
	var set runlog.ChatSettings
	if err := json.Unmarshal(c.Settings, &set); err != nil || set.MaxNewTokens != 6 || set.Engine != "cpu" || set.StorageDType != "bf16" {
		t.Errorf("settings %s: %+v, %v", c.Settings, set, err)
	}
	_, path, err := db.CurrentPath(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	msgs := runlog.Messages(path)
	var roles []string
	tokens := 0
	for _, m := range msgs {
		roles = append(roles, m.Role+":"+m.Text[:min(len(m.Text), 7)])
		tokens += len(m.IDs)
		if m.Role == "assistant" && (m.Text == "" || !strings.Contains(out, m.Text) || m.Stats == nil) {
			t.Errorf("stored reply %q (stats %v) is not what the terminal showed:\n%s", m.Text, m.Stats, out)
		}
	}
	if want := []string{"user:hello t", "assistant:", "user:bye now", "assistant:"}; len(roles) != 4 || roles[0] != want[0] || roles[2] != want[2] {
		t.Errorf("current path %q, want %q", roles, want)
	}
	if tokens != cacheLen {
		t.Errorf("stored tokens add up to %d, the cache held %d", tokens, cacheLen)
	}
	bs, err := db.Branches(ctx, c.ID)
	if err != nil || len(bs) != 4 || bs[2] != (store.Branch{K: 2, N: 2}) {
		t.Errorf("branches %v, %v: the undone turn should be the other branch of the second user turn", bs, err)
	}
	runs, err := db.ListRuns(ctx, store.RunFilter{Kind: store.RunChat})
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs %v, %v: want one per reply", runs, err)
	}
	for _, r := range runs {
		if r.ConversationID != c.ID || r.ModelName != model.DisplayName || r.ModelSHA256 != model.SHA256 || r.Engine != "cpu" || r.Stats.NumGeneratedTokens != 6 {
			t.Errorf("run %+v", r)
		}
	}

	var hist bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &hist, Stderr: &hist, Getenv: func(string) string { return "" }}
	if code := Run(ctx, env, []string{"history", "--db", dbPath}); code != 0 || !strings.Contains(hist.String(), "hello there") {
		t.Errorf("etchat history (exit %d):\n%s", code, hist.String())
	}
}
