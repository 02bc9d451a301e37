package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"etchat/internal/fixtures"
	"etchat/store"
)

func runRunCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code = Run(context.Background(), env, append([]string{"run"}, args...))
	return code, out.String(), errb.String()
}

type runRef struct {
	Cases []struct {
		Kind       string `json:"kind"`
		Prompt     string `json:"prompt"`
		InputIDs   []int  `json:"input_ids"`
		GreedyIDs  []int  `json:"greedy_ids"`
		GreedyText string `json:"greedy_text"`
	} `json:"cases"`
	Multiturn struct {
		Turn1 struct {
			Messages []struct{ Content string } `json:"messages"`
			Text     string                     `json:"generated_text"`
		} `json:"turn1"`
	} `json:"multiturn"`
}

func commaIDs(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

func TestRunPromptIDsJSONMatchesReference(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	var ref runRef
	fixtures.Reference(t, fixtures.Llama3, &ref)
	c := ref.Cases[0]
	code, out, errs := runRunCLI(t, "", "--pte", filepath.Join(dir, "model.pte"), "--prompt-ids", commaIDs(c.InputIDs),
		"--max-new-tokens", strconv.Itoa(len(c.GreedyIDs)), "--ignore-eos", "--json", "--engine", "cpu", "--kv-storage-dtype", "fp32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		PromptIDs    []int  `json:"prompt_ids"`
		GeneratedIDs []int  `json:"generated_ids"`
		Text         string `json:"text"`
		Engine       string `json:"engine"`
		Stats        struct {
			NumPromptTokens    int     `json:"num_prompt_tokens"`
			NumGeneratedTokens int     `json:"num_generated_tokens"`
			DecodeTokS         float64 `json:"decode_tok_s"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if commaIDs(doc.GeneratedIDs) != commaIDs(c.GreedyIDs) || commaIDs(doc.PromptIDs) != commaIDs(c.InputIDs) {
		t.Errorf("generated %v, want %v", doc.GeneratedIDs, c.GreedyIDs)
	}
	if doc.Text != c.GreedyText || doc.Engine != "cpu" || doc.Stats.NumPromptTokens != len(c.InputIDs) || doc.Stats.NumGeneratedTokens != 16 || doc.Stats.DecodeTokS <= 0 {
		t.Errorf("doc %+v", doc)
	}
	// The report went to stderr.
	for _, want := range []string{"[cache] off-graph seq | capacity=128", "PyTorchObserver {", "Generated 16 tokens:"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestRunPromptStreamsTextAndReport(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	var ref runRef
	fixtures.Reference(t, fixtures.Llama3, &ref)
	c := ref.Cases[0]
	code, out, errs := runRunCLI(t, "", "--pte", filepath.Join(dir, "model.pte"), "--prompt", c.Prompt,
		"--max-new-tokens", "16", "--ignore-eos", "--engine", "cpu", "--kv-storage-dtype", "fp32", "--warmup")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, c.GreedyText) {
		t.Errorf("stdout lacks the reference text %q:\n%s", c.GreedyText, out)
	}
	if strings.Count(out, c.GreedyText) != 1 {
		t.Errorf("the warmup run printed too")
	}
	for _, want := range []string{"engine: cpu", "2 layers: 2 flat", "[mem]   after load", "[cache] after prefill: 17 / 128 tokens", "[cache] after decode : 33 / 128 tokens",
		"Prompt Tokens: 17    Generated Tokens: 16", "Time to first generated token:"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
}

func TestRunCapsGenerationToCapacity(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	code, out, errs := runRunCLI(t, "", "--pte", filepath.Join(dir, "model.pte"), "--prompt-ids", "791,4062,14198",
		"--max-new-tokens", "50", "--ignore-eos", "--kv-max-capacity", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		GeneratedIDs []int `json:"generated_ids"`
		Capped       bool  `json:"capped"`
	}
	json.Unmarshal([]byte(out), &doc)
	if len(doc.GeneratedIDs) != 7 || !doc.Capped || !strings.Contains(errs, "generation capped by capacity: 7 of 50") {
		t.Errorf("capacity 10, prompt 3: %d generated, capped %v\n%s", len(doc.GeneratedIDs), doc.Capped, errs)
	}
}

func TestRunInteractiveMultiturn(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	var ref runRef
	fixtures.Reference(t, fixtures.Llama3, &ref)
	in := ref.Multiturn.Turn1.Messages[0].Content + "\n/undo\n/undo x\n" + ref.Multiturn.Turn1.Messages[0].Content + "\n/reset\n/undo\n/quit\nnever read\n"
	code, out, errs := runRunCLI(t, in, "--pte", filepath.Join(dir, "model.pte"), "--interactive", "--max-new-tokens", "8",
		"--ignore-eos", "--kv-storage-dtype", "fp32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Count(out, ref.Multiturn.Turn1.Text) != 2 {
		t.Errorf("turn-1 text %q should appear twice (before and after /undo):\n%s", ref.Multiturn.Turn1.Text, out)
	}
	for _, want := range []string{"[29/128 tokens]", "[rewound to 0]", "[usage: /undo [n_tokens]]", "[cleared]", "[nothing to undo]"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func TestRunBadInput(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	pte := filepath.Join(dir, "model.pte")
	ingraph := fixtures.PTE(fixtures.InGraph)
	notPTE := filepath.Join(t.TempDir(), "x.pte")
	os.WriteFile(notPTE, []byte("not a program"), 0o644)
	otherTok := fixtures.Tokenizer(t, fixtures.Qwen3) // 151669 tokens for llama3's 128256 logits
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"malformed number", []string{"--pte", pte, "--max-new-tokens", "abc"}, 2, "max-new-tokens"},
		{"negative budget", []string{"--pte", pte, "--max-new-tokens", "-3"}, 2, "max-new-tokens"},
		{"bad top-p", []string{"--pte", pte, "--top-p", "1.5"}, 2, "top-p"},
		{"bad engine", []string{"--pte", pte, "--engine", "gpu"}, 2, "engine"},
		{"bad ids", []string{"--pte", pte, "--prompt-ids", "1,x"}, 2, "prompt-ids"},
		{"id beyond vocab", []string{"--pte", pte, "--prompt-ids", "1,999999"}, 2, "vocabulary"},
		{"bad dtype", []string{"--pte", pte, "--kv-storage-dtype", "int4"}, 2, "kv-storage-dtype"},
		{"every bad cache flag", []string{"--pte", pte, "--kv-storage-dtype", "int4", "--kv-windows", "8,x", "--kv-initial-capacity", "-2"}, 2,
			"flag -kv-storage-dtype: storage dtype \"int4\" is unknown: choose bf16, fp16 or fp32\ninvalid value for flag -kv-windows"},
		// The app refuses a capacity above the model's context (128 tokens); so does the CLI.
		{"capacity above the context", []string{"--pte", pte, "--kv-max-capacity", "129"}, 1, "capacity 129 is more than the model's context: at most 128"},
		{"capacity above the context: hint", []string{"--pte", pte, "--kv-max-capacity", "4096"}, 1, "hint: check --kv-max-capacity against"},
		{"no pte", []string{"--prompt", "x"}, 2, "--pte"},
		{"bad chat", []string{"--pte", pte, "--chat", "nosuch"}, 2, "chat"},
		{"missing file", []string{"--pte", filepath.Join(dir, "nope.pte")}, 1, "nope.pte"},
		{"not a pte", []string{"--pte", notPTE, "--tokenizer", otherTok}, 1, "x.pte"},
		{"prompt too long", []string{"--pte", pte, "--prompt-ids", commaIDs(make([]int, 128))}, 1, "capacity 128"},
		{"in-graph interactive", []string{"--pte", ingraph, "--tokenizer", fixtures.Tokenizer(t, fixtures.Llama3), "--interactive"}, 1, "off-graph"},
		{"tokenizer of another model", []string{"--pte", pte, "--tokenizer", otherTok}, 1, "does not belong"},
		{"native unavailable (alias metal)", []string{"--pte", pte, "--engine", "metal"}, 1, "the mlx engine is not available"},
		{"native unavailable: hint", []string{"--pte", pte, "--engine", "mlx"}, 1, "hint: build the native library with scripts/build-native"},
		{"prompt too long: hint", []string{"--pte", pte, "--prompt-ids", commaIDs(make([]int, 128))}, 1, "hint: raise --kv-max-capacity"},
		{"tokenizer of another model: hint", []string{"--pte", pte, "--tokenizer", otherTok}, 1, "hint: give the tokenizer.json exported with this model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runRunCLI(t, "", c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d (want %d), stderr %q (want it to name %q)", code, c.code, errs, c.want)
			}
			if strings.Contains(errs, "panic") || strings.Contains(errs, "PyTorchObserver") {
				t.Errorf("work was done or it panicked: %s", errs)
			}
		})
	}
}

func TestRunSavesStatsToDB(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	code, _, errs := runRunCLI(t, "", "--pte", filepath.Join(dir, "model.pte"), "--prompt-ids", "791,4062", "--max-new-tokens", "4",
		"--ignore-eos", "--db", dbPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	db, err := store.Open(context.Background(), dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.ListRuns(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Engine != "cpu" || runs[0].Stats.NumGeneratedTokens != 4 || runs[0].Stats.NumPromptTokens != 2 || runs[0].ModelSHA256 == "" {
		t.Errorf("stored runs %+v", runs)
	}
}

// gemma4-tiny through `etchat run --chat gemma4`: the reference's text, and
// the runner's [cache] summary counts 10 layers on 6 caches and names the
// shared ones.
func TestRunGemma4CacheSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("gemma4-tiny's 262k-row lm head is slow under -short's budget")
	}
	dir := fixtures.Unpacked(t, fixtures.Gemma4)
	var ref runRef
	fixtures.Reference(t, fixtures.Gemma4, &ref)
	c := ref.Cases[2]
	code, out, errs := runRunCLI(t, "", "--pte", filepath.Join(dir, "model.pte"), "--prompt", c.Prompt, "--chat", "gemma4",
		"--max-new-tokens", "4", "--ignore-eos", "--engine", "cpu", "--kv-storage-dtype", "fp32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"[cache] off-graph seq | capacity=128 initial=512 kv_dtype=Float(fp32) max_write=8\n" +
			"        10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)\n" +
			"        shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9",
		fmt.Sprintf("Prompt Tokens: %d    Generated Tokens: 4", len(c.InputIDs)),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
