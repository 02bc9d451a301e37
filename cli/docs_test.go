package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/internal/fixtures"
	"etchat/store"
)

// TestDocsExamples runs every etchat command the docs show, in order, page
// by page, against the fixtures, and fails on any that does not exit 0 (or
// whose shown output differs). Examples are the lines of ```sh blocks that
// start with "etchat", or with "printf"/"echo" piped into or redirected
// for etchat; a "$ " prompt marks a command whose following lines are its
// exact output. A block whose info string says more than "sh" (for
// example "sh mac-only" or "sh gpu") is not run; nor is a bare "etchat"
// (it opens the window), nor anything else (mv, sqlite3, go, scripts).
//
// Each page runs in a fresh folder named my-model holding the llama3-tiny
// fixture as model.pte with its tokenizer files, path/to/tokenizer.json,
// path/to/model-dir/ and qwen3/ (the qwen3 fixture), one database
// ($ETCHAT_DB) seeded with one conversation.
func TestDocsExamples(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	ran := 0
	for _, page := range append([]string{filepath.Join("..", "README.md")}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		examples := docExamples(string(text))
		if len(examples) == 0 {
			continue
		}
		abs, _ := filepath.Abs(page)
		t.Run(filepath.Base(page), func(t *testing.T) {
			dir := docsWorkdir(t)
			t.Chdir(dir)
			env := func(name string) string {
				if name == store.EnvVar {
					return filepath.Join(dir, "etchat.db")
				}
				return ""
			}
			for _, ex := range examples {
				ran++
				if err := ex.run(t.Context(), env); err != nil {
					t.Errorf("%s:%d: %s\n%v", abs, ex.line, ex.cmd, err)
				}
			}
		})
	}
	if ran < 15 {
		t.Errorf("only %d examples ran: the docs' ```sh blocks were not found", ran)
	}
}

// docsWorkdir lays out what the examples name.
func docsWorkdir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "my-model")
	llama := fixtures.Unpacked(t, fixtures.Llama3)
	qwen := fixtures.Unpacked(t, fixtures.Qwen3)
	link := func(from, to string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(from, to); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(llama)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") || e.Name() == "model.pte" {
			link(filepath.Join(llama, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	link(filepath.Join(llama, "tokenizer.json"), filepath.Join(dir, "path", "to", "tokenizer.json"))
	link(llama, filepath.Join(dir, "path", "to", "model-dir"))
	link(qwen, filepath.Join(dir, "qwen3"))

	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "etchat.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateConversation(ctx, store.Conversation{Title: "Capitals", ModelName: "my-model"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.AddMessage(ctx, store.Message{ConversationID: c.ID, Role: "user", Text: "Capital of France?", TokenIDs: []int32{1, 2}, PosEnd: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddMessage(ctx, store.Message{ConversationID: c.ID, ParentID: u.ID, Role: "assistant", Text: "Paris", TokenIDs: []int32{3}, PosStart: 2, PosEnd: 3}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// docExample is one shell line of the docs.
type docExample struct {
	line int
	cmd  string
	want *string // the output shown after a "$ " command
}

// docExamples reads the runnable examples of a markdown page.
func docExamples(md string) []docExample {
	var out []docExample
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		var cur *docExample
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			l := lines[i]
			start := i + 1
			for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
			}
			prompt := strings.HasPrefix(l, "$ ")
			if cur != nil && cur.want != nil && !prompt {
				*cur.want += l + "\n"
				continue
			}
			cmd := strings.TrimSpace(strings.TrimPrefix(l, "$ "))
			if !runnable(cmd) {
				cur = nil
				continue
			}
			out = append(out, docExample{line: start, cmd: cmd})
			cur = &out[len(out)-1]
			if prompt {
				cur.want = new(string)
			}
		}
	}
	return out
}

func runnable(cmd string) bool {
	words, err := shellWords(cmd)
	if err != nil || len(words) == 0 {
		return false
	}
	for _, w := range words {
		if w == "etchat" {
			return true
		}
	}
	return (words[0] == "echo" || words[0] == "printf") && slicesContains(words, ">")
}

func slicesContains(ws []string, s string) bool {
	for _, w := range ws {
		if w == s {
			return true
		}
	}
	return false
}

// run runs an example: [printf|echo TEXT |] etchat ARGS [> FILE], or
// echo|printf TEXT > FILE.
func (ex docExample) run(ctx context.Context, getenv func(string) string) error {
	words, err := shellWords(ex.cmd)
	if err != nil {
		return err
	}
	var redirect string
	if n := len(words); n >= 2 && words[n-2] == ">" {
		redirect, words = words[n-1], words[:n-2]
	}
	var stdin string
	if words[0] == "printf" || words[0] == "echo" {
		if len(words) < 2 {
			return fmt.Errorf("%s without text", words[0])
		}
		stdin = words[1]
		if words[0] == "printf" {
			stdin = strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t").Replace(stdin)
		} else {
			stdin += "\n"
		}
		words = words[2:]
		if len(words) == 0 {
			return os.WriteFile(redirect, []byte(stdin), 0o644)
		}
		if words[0] != "|" {
			return fmt.Errorf("expected a pipe after the text, got %q", words[0])
		}
		words = words[1:]
	}
	if len(words) == 0 || words[0] != "etchat" {
		return fmt.Errorf("not an etchat command: %q", words)
	}
	args := words[1:]
	if !IsCommand(args) {
		return nil // the window
	}
	var stdout, stderr bytes.Buffer
	code := Run(ctx, &Env{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Getenv: getenv}, args)
	if code != 0 {
		return fmt.Errorf("exit status %d\nstderr: %s", code, stderr.String())
	}
	if redirect != "" {
		if err := os.WriteFile(redirect, stdout.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if ex.want != nil && strings.TrimRight(stdout.String(), "\n") != strings.TrimRight(*ex.want, "\n") {
		return fmt.Errorf("output\n%q\nwant (as the docs show it)\n%q", stdout.String(), *ex.want)
	}
	return nil
}

// shellWords splits a command line the way sh does for the examples' needs:
// single quotes (literal), double quotes (\" and \\ escapes), a "#" comment
// at a word's start, and "|" and ">" as words of their own.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return words, nil
		case c == '|' || c == '>':
			flush()
			words = append(words, string(c))
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %q", s)
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// The README stays a map: short, the test command where .ci/run reads it,
// and a link into docs/ for each topic.
func TestREADMEIsAMap(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > 250 {
		t.Errorf("README.md has %d lines; keep it a map (≤ 250) and put the rest in docs/", n)
	}
	if !strings.Contains(text, "Run the tests:\n\n    scripts/test\n") {
		t.Error(`README.md lost "Run the tests:", a blank line, then the indented scripts/test`)
	}
	for _, page := range []string{"app", "inspect", "run", "tokenizers-and-templates", "benchmarks", "data", "native-engine", "development"} {
		if !strings.Contains(text, "(docs/"+page+".md)") {
			t.Errorf("README.md does not link docs/%s.md", page)
		}
		if _, err := os.Stat(filepath.Join("..", "docs", page+".md")); err != nil {
			t.Errorf("docs/%s.md: %v", page, err)
		}
	}
}
