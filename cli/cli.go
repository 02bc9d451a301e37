// Package cli is etchat's command line: one subcommand per file, each
// parsing its own flags (the standard flag package, which accepts the
// --kv-max-capacity spelling of ExecuTorch's runner) and putting the
// inference and store packages together. A malformed flag value is a usage
// error (exit 2) naming the flag, never a crash.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Env is what a command may touch of the outside world.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// OSEnv is the process's own environment.
func OSEnv() *Env {
	return &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands is the table of subcommands; each lives in its own file.
var commands = map[string]command{
	"inspect":    {"read .pte files: methods, cache layout, KV memory, companions", runInspect},
	"run":        {"generate from a prompt, or chat with --interactive", runRun},
	"tokenize":   {"text on stdin to token ids", runTokenize},
	"detokenize": {"token ids on stdin to text", runDetokenize},
	"template":   {"render a chat template over messages", runTemplate},
	"history":    {"list stored conversations and runs", runHistory},
	"bench":      {"measure prefill and decode speed (llama-bench style) and store the results", runBench},
	"compare":    {"compare two stored benchmark runs", runCompare},
	"perplexity": {"perplexity over a text, and KL divergence against another export's saved logits", runPerplexity},
	"serve":      {"an OpenAI-compatible server on localhost over your models", runServe},
	"doctor":     {"the facts a bug report needs: platform, native engine and device, database, model folders", runDoctor},
}

// UsageError is a bad command line; it exits with status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// IsCommand reports whether args start with a known subcommand (or a help
// request); otherwise main opens the GUI.
func IsCommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if _, ok := commands[args[0]]; ok {
		return true
	}
	switch args[0] {
	case "help", "-h", "-help", "--help", "version", "--version":
		return true
	}
	return !strings.HasPrefix(args[0], "-")
}

// Version is the app's version, set by main.
var Version = "dev"

// Run executes one subcommand and returns the process exit status.
func Run(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(env.Stdout)
		return 0
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(env.Stdout, "etchat", Version)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "etchat: unknown command %q\n\n", args[0])
		usage(env.Stderr)
		return 2
	}
	err := cmd.run(ctx, env, args[1:])
	var ue *UsageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "etchat %s: %s\n", args[0], ue.Msg)
		fmt.Fprintf(env.Stderr, "run 'etchat %s -h' for usage\n", args[0])
		return 2
	case errors.Is(err, errSilentFailure):
		return 1
	default:
		fmt.Fprintf(env.Stderr, "etchat %s: %v\n", args[0], err)
		if h := hint(err); h != "" {
			fmt.Fprintf(env.Stderr, "hint: %s\n", h)
		}
		return 1
	}
}

// errSilentFailure means the command already reported what failed.
var errSilentFailure = errors.New("failed")

func usage(w io.Writer) {
	fmt.Fprintln(w, "etchat — chat with and measure ExecuTorch MLX .pte models")
	fmt.Fprintln(w, "\nUsage:\n  etchat [--db PATH]          open the desktop app\n  etchat COMMAND [flags]")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'etchat COMMAND -h' for a command's flags.")
}

// newFlags makes a flag set whose parse errors become usage errors.
func newFlags(env *Env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	// Usage writes through fs.Output so that parseFlags can silence the
	// flag package's own call and print it exactly once, for -h.
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: etchat %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, turning a malformed value into a UsageError that
// names the flag. -h returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
		}
		return err
	}
	return &UsageError{err.Error()}
}
