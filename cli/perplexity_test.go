package cli_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// TestPerplexityCommand: etchat perplexity scores the bundled text (md
// with its progress and saved run), saves a base, compares against it
// (json: KLD 0, same top 100%), stores every run as kind quality (listed
// by history), and refuses a base over other tokens with a hint.
func TestPerplexityCommand(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Qwen3)
	pte := filepath.Join(dir, "model.pte")
	db := filepath.Join(t.TempDir(), "etchat.db")
	base := filepath.Join(t.TempDir(), "base.etl")
	text := filepath.Join(t.TempDir(), "text.txt")
	os.WriteFile(text, []byte(strings.Repeat("The light of the sun is refracted by the prism into colours. ", 40)), 0o644)

	r := runCLI(t, nil, "", "perplexity", "--pte", pte, "--engine", "cpu", "--ctx", "64", "--db", db, "--text", text,
		"--save-logits", base, "--top-k", "8")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"| qwen3-tiny-offgraph | cpu | 64 |", "PPL", "second half of each window"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, want := range []string{"engine: cpu", "windows", "saved as run 1", "logits saved to " + base} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runCLI(t, nil, "", "perplexity", "--pte", pte, "--engine", "cpu", "--db", db, "--text", text, "--kl-base", base, "-o", "json", "-q")
	var res []struct {
		PPL    float64 `json:"ppl"`
		Scored int     `json:"scored"`
		Ctx    int     `json:"ctx"`
		KLD    *struct {
			Mean    float64 `json:"kld_mean"`
			SameTop float64 `json:"same_top_pct"`
			Agree   []int   `json:"top1_agree"`
			Base    struct {
				TopK int `json:"top_k"`
			} `json:"base"`
		} `json:"kld"`
	}
	if r.code != 0 || r.stderr != "" || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res) != 1 || res[0].KLD == nil {
		t.Fatalf("exit %d, stderr %q, stdout %s", r.code, r.stderr, r.stdout)
	}
	k := res[0].KLD
	if res[0].Ctx != 64 || k.Mean > 1e-9 || k.SameTop != 100 || len(k.Agree) != res[0].Scored || k.Base.TopK != 8 || res[0].PPL <= 1 {
		t.Errorf("against itself: %+v, %+v", res[0], *k)
	}

	r = runCLI(t, nil, "", "history", "--runs", "--kind", "quality", "--db", db)
	if r.code != 0 || strings.Count(r.stdout, "quality") != 2 || !strings.Contains(r.stdout, ", same top 100.0%") {
		t.Errorf("history: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Another text against that base: refused, with what to do.
	r = runCLI(t, nil, "", "perplexity", "--pte", pte, "--engine", "cpu", "--no-save", "--kl-base", base, "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "the base scored other tokens") || !strings.Contains(r.stderr, "hint: make the base with --save-logits") {
		t.Errorf("other text: exit %d, %q", r.code, r.stderr)
	}
}

// TestPerplexityIDsCSV: --ids scores a model without a tokenizer; csv has
// a header and one row whose figures are the json's.
func TestPerplexityIDsCSV(t *testing.T) {
	ids := make([]string, 160)
	for i := range ids {
		ids[i] = strconv.Itoa(3 + (i*7919)%16000)
	}
	f := filepath.Join(t.TempDir(), "ids.txt")
	os.WriteFile(f, []byte(strings.Join(ids[:80], " ")+"\n"+strings.Join(ids[80:], ",")), 0o644)
	args := []string{"perplexity", "--pte", fixtures.PTE(fixtures.BenchQ4), "--engine", "cpu", "--ids", f, "--ctx", "80", "--no-save", "-q"}
	r := runCLI(t, nil, "", append(args, "-o", "csv")...)
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if r.code != 0 || err != nil || len(rows) != 2 || rows[0][0] != "model" {
		t.Fatalf("exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	col := map[string]string{}
	for i, h := range rows[0] {
		col[h] = rows[1][i]
	}
	if col["model"] != "llama-bench-q4" || col["windows"] != "2" || col["scored"] != "78" || col["tokens"] != "160" || col["kld_mean"] != "" {
		t.Errorf("csv row %v", col)
	}
	r = runCLI(t, nil, "", append(args, "-o", "jsonl")...)
	var one struct {
		PPL float64 `json:"ppl"`
	}
	if json.Unmarshal([]byte(r.stdout), &one) != nil || strconv.FormatFloat(one.PPL, 'g', -1, 64) != col["ppl"] {
		t.Errorf("jsonl %q, csv ppl %s", r.stdout, col["ppl"])
	}
}

func TestPerplexityBadFlags(t *testing.T) {
	pte := fixtures.PTE(fixtures.Llama3)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--text", "a", "--ids", "b"}, "exclude each other"},
		{[]string{"--random-ids", "-3"}, "flag -random-ids"},
		{[]string{"--ctx", "2"}, "flag -ctx"},
		{[]string{"--top-k", "5"}, "flag -top-k"},
		{[]string{"--save-logits", "x", "--kl-base", "x"}, "same file"},
		{[]string{"-o", "sql"}, "flag -o"},
		{[]string{"--engine", "gpu"}, "flag -engine"},
		{[]string{"--kv-storage-dtype", "int4"}, "flag -kv-storage-dtype"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		r := runCLI(t, nil, "", append([]string{"perplexity", "--pte", pte, "--no-save"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, r.code, r.stderr)
		}
	}
	if r := runCLI(t, nil, "", "perplexity"); r.code != 2 || !strings.Contains(r.stderr, "-pte is required") {
		t.Errorf("no --pte: exit %d %q", r.code, r.stderr)
	}
	r := runCLI(t, nil, "", "perplexity", "--pte", filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte"), "--engine", "cpu",
		"--no-save", "--ctx", "4096")
	if r.code != 1 || !strings.Contains(r.stderr, "does not fit the model's cache") || !strings.Contains(r.stderr, "hint: give --ctx 128 or less") {
		t.Errorf("too wide a window: exit %d %q", r.code, r.stderr)
	}
}

// TestPerplexityNumerics: --numerics fast against an exact run's saved
// logits is what the fast mode costs (issue 38): recorded as the run's
// mode, engaged (KL > 0), and close (the fixture bounds of
// inference/cpu's TestFastNumericsQuality); an unknown mode is a usage
// error and --engine mlx refuses a mode with what to do.
func TestPerplexityNumerics(t *testing.T) {
	pte := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3Q4), "model.pte")
	base := filepath.Join(t.TempDir(), "exact.etl")
	r := runCLI(t, nil, "", "perplexity", "--pte", pte, "--engine", "cpu", "--ctx", "64", "--numerics", "exact", "--no-save",
		"--save-logits", base, "-q")
	if r.code != 0 {
		t.Fatalf("exact: exit %d: %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "", "perplexity", "--pte", pte, "--engine", "cpu", "--numerics", "fast", "--no-save", "--kl-base", base, "-o", "json", "-q")
	var res []struct {
		Mode string `json:"mode"`
		KLD  *struct {
			Mean    float64 `json:"kld_mean"`
			SameTop float64 `json:"same_top_pct"`
			Base    struct {
				Mode string `json:"mode"`
			} `json:"base"`
		} `json:"kld"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res) != 1 || res[0].KLD == nil {
		t.Fatalf("fast: exit %d, stderr %q, stdout %s", r.code, r.stderr, r.stdout)
	}
	k := res[0].KLD
	if res[0].Mode != "fast" || k.Base.Mode != "exact" || k.Mean <= 0 || k.Mean > 0.06 || k.SameTop < 85 {
		t.Errorf("fast against exact: mode %q (base %q), KLD %g, same top %.1f%%", res[0].Mode, k.Base.Mode, k.Mean, k.SameTop)
	}
	if r := runCLI(t, nil, "", "perplexity", "--pte", pte, "--no-save", "--numerics", "int8"); r.code != 2 || !strings.Contains(r.stderr, "flag -numerics") {
		t.Errorf("--numerics int8: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, nil, "", "perplexity", "--pte", pte, "--no-save", "--engine", "mlx", "--numerics", "fast", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "hint: leave --numerics out with --engine mlx") {
		t.Errorf("--engine mlx --numerics fast: exit %d %q", r.code, r.stderr)
	}
}
