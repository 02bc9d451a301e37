package cli

import (
	"bytes"
	"context"
	"flag"
	"reflect"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

func TestGflagsSpellings(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.String("prompt", "", "")
	fs.Int("max-new-tokens", 0, "")
	fs.Bool("ignore-eos", false, "")
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--max_new_tokens", "5", "-ignore_eos"}, []string{"--max-new-tokens", "5", "-ignore-eos"}},
		{[]string{"--max_new_tokens=5"}, []string{"--max-new-tokens=5"}},
		// A value is never rewritten, even one spelled like a flag.
		{[]string{"--prompt", "--max_new_tokens", "--ignore_eos"}, []string{"--prompt", "--max_new_tokens", "--ignore-eos"}},
		{[]string{"--prompt=a_b", "x", "--max_new_tokens", "1"}, []string{"--prompt=a_b", "x", "--max_new_tokens", "1"}},
		{[]string{"--", "--max_new_tokens"}, []string{"--", "--max_new_tokens"}},
		// Unknown names stay as they are, for the flag package to refuse.
		{[]string{"--no_such_flag"}, []string{"--no_such_flag"}},
	} {
		if got := gflagsSpellings(fs, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q → %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every flag of etchat run takes its gflags spelling too: the runner's own
// flag names (kv_max_capacity, max_new_tokens, …) are underscored. Each
// hyphenated flag of run's help is given underscored: the flag package
// must know it (a bad value or a missing --pte may still fail the run).
func TestRunAcceptsUnderscoreSpellings(t *testing.T) {
	var help bytes.Buffer
	if code := Run(context.Background(), &Env{Stdout: &help, Stderr: &help, Getenv: func(string) string { return "" }}, []string{"run", "-h"}); code != 0 {
		t.Fatalf("run -h: %d\n%s", code, help.String())
	}
	var names []string
	for _, line := range strings.Split(help.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") && strings.Contains(f[0], "-") {
			if n := strings.TrimLeft(f[0], "-"); strings.Contains(n, "-") {
				names = append(names, n)
			}
		}
	}
	if len(names) < 8 {
		t.Fatalf("only %d hyphenated flags in run's help: %v", len(names), names)
	}
	for _, n := range names {
		var out bytes.Buffer
		arg := "--" + strings.ReplaceAll(n, "-", "_") + "=1"
		Run(context.Background(), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}, []string{"run", arg})
		if strings.Contains(out.String(), "not defined") {
			t.Errorf("%s: %s", arg, out.String())
		}
	}
	// And it runs with them: the runner's README's own spellings.
	var out bytes.Buffer
	args := []string{"run", "--pte", fixtures.PTE(fixtures.Llama3), "--engine", "cpu", "--prompt_ids", "1,2,3",
		"--max_new_tokens", "2", "--kv_max_capacity", "64", "--kv_storage_dtype", "fp32", "--ignore_eos"}
	if code := Run(context.Background(), &Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}, args); code != 0 {
		t.Fatalf("etchat %s: %d\n%s", strings.Join(args, " "), code, out.String())
	}
	if !strings.Contains(out.String(), "64") {
		t.Errorf("the capacity did not reach the cache summary:\n%s", out.String())
	}
}
