package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/cli"
	"etchat/store"
)

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code := cli.Run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

// seedHistory writes two conversations (one with a regenerated reply) and
// three runs to a new database.
func seedHistory(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "etchat.db")
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, _ := db.UpsertModel(ctx, store.Model{Path: "/m/llama.pte", SHA256: "aa11bb22", DisplayName: "Llama"})
	c, _ := db.CreateConversation(ctx, store.Conversation{ModelID: m.ID, Title: "Capitals"})
	u, _ := db.AddMessage(ctx, store.Message{ConversationID: c.ID, Role: "user", Text: "Capital of France?", TokenIDs: []int32{1, 2}, PosEnd: 2})
	db.AddMessage(ctx, store.Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "Lyon", TokenIDs: []int32{3}, PosStart: 2, PosEnd: 3})
	db.AddMessage(ctx, store.Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "Paris", TokenIDs: []int32{4}, PosStart: 2, PosEnd: 3})
	db.CreateConversation(ctx, store.Conversation{Title: "Other model", ModelName: "Qwen", ModelSHA256: "cc33"})
	st := store.Stats{InferenceStartMs: 0, PromptEvalEndMs: 100, FirstTokenMs: 120, InferenceEndMs: 1100, NumPromptTokens: 512, NumGeneratedTokens: 128}
	db.InsertRun(ctx, store.Run{Kind: "bench", Engine: "cpu", ModelSHA256: "aa11bb22", ModelName: "Llama", Stats: st, Bench: store.BenchTest{NPrompt: 512}},
		[]store.Sample{{TokS: 5000}, {TokS: 5200}})
	db.InsertRun(ctx, store.Run{Kind: "bench", Engine: "cpu", ModelSHA256: "aa11bb22", ModelName: "Llama", Stats: st, Bench: store.BenchTest{NGen: 128, NDepth: 4096}}, nil)
	db.InsertRun(ctx, store.Run{Kind: "chat", Engine: "metal", ModelSHA256: "cc33", ModelName: "Qwen", Stats: st}, nil)
	return path
}

func TestHistoryListsConversations(t *testing.T) {
	path := seedHistory(t)
	r := runCLI(t, nil, "", "history", "--db", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(r.stdout, "Capitals") || !strings.Contains(r.stdout, "Other model") {
		t.Errorf("listing:\n%s", r.stdout)
	}
	r = runCLI(t, nil, "", "history", "--db", path, "--json", "--model", "llama")
	var convs []store.Conversation
	if err := json.Unmarshal([]byte(r.stdout), &convs); err != nil || len(convs) != 1 || convs[0].Title != "Capitals" || convs[0].Messages != 3 {
		t.Errorf("--json --model llama: %v %+v\n%s", err, convs, r.stdout)
	}
	r = runCLI(t, nil, "", "history", "--db", path, "--json", "--limit", "1")
	if err := json.Unmarshal([]byte(r.stdout), &convs); err != nil || len(convs) != 1 {
		t.Errorf("--limit 1: %v %d", err, len(convs))
	}
}

func TestHistoryListsRuns(t *testing.T) {
	path := seedHistory(t)
	r := runCLI(t, nil, "", "history", "--db", path, "--runs")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"pp512", "tg128 @ d4096", "5100.00 ± 141.42", "5120.00", "Qwen", "metal"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("runs table lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--model", "aa11"}, 2},
		{[]string{"--model", "QWEN"}, 1},
		{[]string{"--kind", "chat"}, 1},
		{[]string{"--kind", "bench", "--limit", "1"}, 1},
		{[]string{"--model", "nothing"}, 0},
	} {
		r := runCLI(t, nil, "", append([]string{"history", "--db", path, "--runs", "--json"}, tc.args...)...)
		var runs []store.Run
		if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != tc.want {
			t.Errorf("%v: %d runs, %v; want %d\n%s%s", tc.args, len(runs), err, tc.want, r.stdout, r.stderr)
		}
	}
}

func TestHistoryDatabaseLocation(t *testing.T) {
	path := seedHistory(t)
	// ETCHAT_DB is used without --db.
	r := runCLI(t, map[string]string{"ETCHAT_DB": path}, "", "history")
	if r.code != 0 || !strings.Contains(r.stdout, "Capitals") {
		t.Errorf("ETCHAT_DB: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --db beats ETCHAT_DB.
	other := filepath.Join(t.TempDir(), "none.db")
	r = runCLI(t, map[string]string{"ETCHAT_DB": path}, "", "history", "--db", other)
	if r.code != 0 || !strings.Contains(r.stdout, "No history yet") || !strings.Contains(r.stdout, other) {
		t.Errorf("--db over ETCHAT_DB: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(other); err == nil {
		t.Errorf("listing created a database at %s", other)
	}
	// The default is under the user's config folder.
	home := t.TempDir()
	r = runCLI(t, map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "cfg"), "AppData": home}, "", "history", "--runs", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("empty default: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}

func TestHistoryBadFlags(t *testing.T) {
	path := seedHistory(t)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--limit", "-1"}, "limit"},
		{[]string{"--limit", "many"}, "limit"},
		{[]string{"--kind", "train"}, "kind"},
		{[]string{"--export-conversation", "x"}, "export-conversation"},
		{[]string{"--export-conversation", "1", "--format", "pdf"}, "format"},
		{[]string{"--export-runs", "--format", "md"}, "format"},
		{[]string{"--format", "json"}, "format"},
		{[]string{"--runs", "--import", "f.json"}, "--import"},
		{[]string{"stray"}, "stray"},
	} {
		r := runCLI(t, nil, "", append([]string{"history", "--db", path}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.flag) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, r.code, r.stderr, tc.flag)
		}
	}
}

func TestHistoryExportImport(t *testing.T) {
	path := seedHistory(t)
	r := runCLI(t, nil, "", "history", "--db", path, "--export-conversation", "1", "--format", "md")
	if r.code != 0 || !strings.Contains(r.stdout, "# Capitals") || !strings.Contains(r.stdout, "Paris") || strings.Contains(r.stdout, "Lyon") {
		t.Errorf("markdown export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "", "history", "--db", path, "--export-conversation", "all")
	if r.code != 0 {
		t.Fatalf("json export: %s", r.stderr)
	}
	all := r.stdout
	file := filepath.Join(t.TempDir(), "export.json")
	os.WriteFile(file, []byte(all), 0o600)

	dst := filepath.Join(t.TempDir(), "new.db")
	r = runCLI(t, nil, "", "history", "--db", dst, "--import", file)
	if r.code != 0 || strings.Count(r.stdout, "imported conversation") != 2 || !strings.Contains(r.stdout, "Capitals (3 messages)") {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "", "history", "--db", dst, "--export-conversation", "all")
	if r.stdout != all {
		t.Errorf("export → import → export differs:\n%s\n---\n%s", all, r.stdout)
	}
	// Again: refused, and it says why.
	r = runCLI(t, nil, "", "history", "--db", dst, "--import", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "not an etchat conversation export") {
		t.Errorf("empty stdin import: exit %d %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, all, "history", "--db", dst, "--import", "-")
	if r.code != 1 || !strings.Contains(r.stderr, "already here") {
		t.Errorf("second import: exit %d %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "", "history", "--db", path, "--export-conversation", "99")
	if r.code != 1 || !strings.Contains(r.stderr, "conversation 99") {
		t.Errorf("missing conversation: exit %d %s", r.code, r.stderr)
	}

	r = runCLI(t, nil, "", "history", "--db", path, "--export-runs", "--model", "llama")
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if r.code != 0 || err != nil || len(recs) != 3 || recs[0][0] != "id" {
		t.Errorf("runs csv: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	r = runCLI(t, nil, "", "history", "--db", path, "--export-runs", "--format", "json", "--kind", "bench")
	var runs []store.RunExport
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 2 {
		t.Errorf("runs json: %v %d", err, len(runs))
	}
}

func TestHistoryCorruptDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etchat.db")
	junk := []byte("not a database at all")
	os.WriteFile(path, junk, 0o600)
	r := runCLI(t, nil, "", "history", "--db", path)
	if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "mv ") {
		t.Errorf("corrupt file: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, junk) {
		t.Errorf("the file was changed")
	}
}

func TestHistoryCheckAndNewerDatabase(t *testing.T) {
	path := seedHistory(t)
	r := runCLI(t, nil, "", "history", "--db", path, "--check")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok: "+path) {
		t.Errorf("--check: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("INSERT INTO schema_migrations VALUES (?, 'from the future', 0)", store.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	r = runCLI(t, nil, "", "history", "--db", path)
	if r.code != 1 || !strings.Contains(r.stderr, "newer etchat") || !strings.Contains(r.stderr, path) {
		t.Errorf("newer database: exit %d %s", r.code, r.stderr)
	}
}
