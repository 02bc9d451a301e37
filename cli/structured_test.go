package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// etchat run --json-schema: the random-weight fixture's reply is JSON of
// the schema's shape; --grammar: a GBNF grammar's sentence. Greedy, so the
// text is the same on every run.
func TestRunStructured(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	pte := filepath.Join(dir, "model.pte")
	tmp := t.TempDir()
	schema := filepath.Join(tmp, "schema.json")
	os.WriteFile(schema, []byte(`{"type":"object","properties":{"city":{"type":"string","maxLength":12},
		"population":{"type":"integer","minimum":0,"maximum":99999999}},"required":["city","population"],"additionalProperties":false}`), 0o644)
	code, out, errs := runRunCLI(t, "", "--pte", pte, "--prompt", "Name a city.", "--json-schema", schema, "--max-new-tokens", "120",
		"--json", "--engine", "cpu")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var v struct {
		City       *string
		Population *int
	}
	d := json.NewDecoder(strings.NewReader(doc.Text))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil || v.City == nil || v.Population == nil || *v.Population < 0 || doc.StopReason != "eos" {
		t.Errorf("reply %q (stop %s) does not match the schema: %v", doc.Text, doc.StopReason, err)
	}

	gbnf := filepath.Join(tmp, "yesno.gbnf")
	os.WriteFile(gbnf, []byte("root ::= (\"yes\" | \"no\") \", because \" [a-z ]{3,20} \".\"\n"), 0o644)
	code, out, errs = runRunCLI(t, "", "--pte", pte, "--prompt", "Is it?", "--grammar", gbnf, "--max-new-tokens", "60", "--engine", "cpu")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	re := regexp.MustCompile(`\n(yes|no), because [a-z ]{3,20}\.\n`)
	if !re.MatchString(out) {
		t.Errorf("stdout has no sentence of the grammar:\n%s", out)
	}
}

func TestRunStructuredBadInput(t *testing.T) {
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	pte := filepath.Join(dir, "model.pte")
	tmp := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	bad := write("bad.gbnf", "root ::= \"a\"\nx ::= (")
	unsup := write("unsup.json", `{"type":"string","contentMediaType":"text/html"}`)
	good := write("ok.gbnf", `root ::= "a"`)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"grammar syntax", []string{"--grammar", bad}, 1, "bad.gbnf: grammar: line 2"},
		{"grammar syntax: hint", []string{"--grammar", bad}, 1, "hint: fix the grammar at that line"},
		{"schema keyword", []string{"--json-schema", unsup}, 1, `"contentMediaType" at the root: not supported`},
		{"schema keyword: hint", []string{"--json-schema", unsup}, 1, "hint: docs/serve.md#structured-output lists"},
		{"missing file", []string{"--json-schema", filepath.Join(tmp, "none.json")}, 1, "none.json"},
		{"both", []string{"--json-schema", unsup, "--grammar", good}, 2, "do not go together"},
		{"interactive", []string{"--grammar", good, "--interactive"}, 2, "--interactive"},
		{"ignore-eos", []string{"--grammar", good, "--ignore-eos"}, 2, "--ignore-eos"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runRunCLI(t, "", append([]string{"--pte", pte, "--engine", "cpu"}, c.args...)...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, c.code, errs, c.want)
			}
			if strings.Contains(errs, "PyTorchObserver") || strings.Contains(errs, "panic") {
				t.Errorf("work was done or it panicked: %s", errs)
			}
		})
	}
}
