package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

func tokRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: os.Getenv}
	code := Run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

type tokGolden struct {
	Encode []struct {
		Text               string   `json:"text"`
		IDs                []int    `json:"ids"`
		IDsWithSpecial     []int    `json:"ids_with_special"`
		Tokens             []string `json:"tokens"`
		Decoded            string   `json:"decoded"`
		DecodedSkipSpecial string   `json:"decoded_skip_special"`
	} `json:"encode"`
}

func joinIDs(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ")
}

func TestTokenizeCLIGoldens(t *testing.T) {
	for _, fam := range []struct{ name, fixture string }{{"llama3", fixtures.Llama3}, {"gemma3", fixtures.Gemma3}, {"qwen3", fixtures.Qwen3}} {
		t.Run(fam.name, func(t *testing.T) {
			path := fixtures.Tokenizer(t, fam.fixture)
			var g tokGolden
			fixtures.Golden(t, fam.name, &g)
			// Batch mode covers every record in one process.
			var in strings.Builder
			for _, r := range g.Encode {
				b, _ := json.Marshal(r.Text)
				in.Write(b)
				in.WriteByte('\n')
			}
			// Gemma 3's tokenizer.json is 33 MB: one load for it.
			modes := []bool{false, true}
			if fam.name == "gemma3" {
				modes = []bool{true}
			}
			for _, special := range modes {
				args := []string{"tokenize", "--tokenizer", path, "--jsonl"}
				if special {
					args = append(args, "--add-special")
				}
				code, out, errs := tokRun(t, in.String(), args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errs)
				}
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				if len(lines) != len(g.Encode) {
					t.Fatalf("%d output lines for %d inputs", len(lines), len(g.Encode))
				}
				for i, r := range g.Encode {
					var res struct {
						IDs    []int    `json:"ids"`
						Tokens []string `json:"tokens"`
					}
					if err := json.Unmarshal([]byte(lines[i]), &res); err != nil {
						t.Fatalf("line %d: %v", i, err)
					}
					want := r.IDs
					if special {
						want = r.IDsWithSpecial
					} else if !slices.Equal(res.Tokens, r.Tokens) {
						t.Errorf("record %d: tokens %q, want %q", i, res.Tokens, r.Tokens)
					}
					if special && len(r.IDsWithSpecial) > len(r.IDs) && len(res.Tokens) != len(res.IDs) {
						t.Errorf("record %d: %d tokens for %d ids", i, len(res.Tokens), len(res.IDs))
					}
					if !slices.Equal(res.IDs, want) {
						t.Errorf("record %d (special %v): ids %v, want %v", i, special, res.IDs, want)
					}
				}
			}
			if fam.name != "llama3" {
				return // the other modes once are enough
			}
			// Plain mode, and detokenize, on a few records (text exact, no
			// trailing newline added).
			for _, i := range []int{len(g.Encode) - 1} {
				r := g.Encode[i]
				code, out, errs := tokRun(t, r.Text, "tokenize", "--tokenizer", path)
				if code != 0 || out != joinIDs(r.IDs)+"\n" {
					t.Errorf("tokenize %q: exit %d %q %s, want %q", r.Text, code, out, errs, joinIDs(r.IDs))
				}
				code, out, errs = tokRun(t, r.Text, "tokenize", "--tokenizer", filepath.Dir(path), "--json")
				var res struct{ IDs []int }
				if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !slices.Equal(res.IDs, r.IDs) {
					t.Errorf("tokenize --json %q: exit %d %q %s", r.Text, code, out, errs)
				}
				ids := strings.ReplaceAll(joinIDs(r.IDs), " ", ", ")
				code, out, errs = tokRun(t, "["+ids+"]\n", "detokenize", "--tokenizer", path)
				if code != 0 || out != r.Decoded {
					t.Errorf("detokenize %v: exit %d %q %s, want %q", r.IDs, code, out, errs, r.Decoded)
				}
				code, out, errs = tokRun(t, joinIDs(r.IDs), "detokenize", "--tokenizer", path, "--skip-special")
				if code != 0 || out != r.DecodedSkipSpecial {
					t.Errorf("detokenize --skip-special %v: exit %d %q %s, want %q", r.IDs, code, out, errs, r.DecodedSkipSpecial)
				}
			}
		})
	}
}

func TestTokenizeCLIErrors(t *testing.T) {
	path := fixtures.Tokenizer(t, fixtures.Qwen3)
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(bad, []byte(`{"model":{"type":"Unigram","vocab":[]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		{"no tokenizer", "hi", []string{"tokenize"}, 2, "--tokenizer is required"},
		{"detok no tokenizer", "1", []string{"detokenize"}, 2, "--tokenizer is required"},
		{"stray argument", "hi", []string{"tokenize", "--tokenizer", path, "hello"}, 2, "unexpected argument"},
		{"bad flag", "hi", []string{"tokenize", "--tokenizer", path, "--json=maybe"}, 2, "json"},
		{"json and jsonl", "hi", []string{"tokenize", "--tokenizer", path, "--json", "--jsonl"}, 2, "exclusive"},
		{"missing file", "hi", []string{"tokenize", "--tokenizer", filepath.Join(t.TempDir(), "nope.json")}, 1, "nope.json"},
		{"unsupported model", "hi", []string{"tokenize", "--tokenizer", bad}, 1, `"Unigram"`},
		{"jsonl not a string", "\"ok\"\n{\"a\":1}\n", []string{"tokenize", "--tokenizer", path, "--jsonl"}, 1, "line 2"},
		{"not an id", "12 x3", []string{"detokenize", "--tokenizer", path}, 1, `"x3" is not a token id`},
		{"id out of range", "12 99999999", []string{"detokenize", "--tokenizer", path}, 1, "outside the vocabulary"},
		{"negative id", "-1", []string{"detokenize", "--tokenizer", path}, 1, "outside the vocabulary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := tokRun(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(errs, c.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, c.code, c.stderr)
			}
		})
	}
}

func TestTokenizeCLIEmptyAndRoundTrip(t *testing.T) {
	path := fixtures.Tokenizer(t, fixtures.Llama3)
	if code, out, errs := tokRun(t, "", "tokenize", "--tokenizer", path); code != 0 || out != "\n" {
		t.Errorf("empty input: exit %d %q %s", code, out, errs)
	}
	if code, out, errs := tokRun(t, "", "detokenize", "--tokenizer", path); code != 0 || out != "" {
		t.Errorf("empty ids: exit %d %q %s", code, out, errs)
	}
	text := "Grüße, 世界! 🙂\n\tcode := x*2 // done\n"
	_, ids, _ := tokRun(t, text, "tokenize", "--tokenizer", path)
	if code, out, errs := tokRun(t, ids, "detokenize", "--tokenizer", path); code != 0 || out != text {
		t.Errorf("round trip: exit %d %q %s, want %q", code, out, errs, text)
	}
}
