package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/engine"
	"etchat/inference/quality"
	"etchat/internal/qualitystore"
	"etchat/store"
)

var perplexitySynopsis = `--pte FILE [--text FILE | --ids FILE | --random-ids N] [--ctx N]
       [--save-logits FILE [--top-k K]] [--kl-base FILE] [--engine ` + strings.Join(engine.Choices(), "|") + `] [--numerics exact|fast]
       [--kv-storage-dtype bf16|fp16|fp32] [-o md|csv|json|jsonl] [--db PATH] [--no-save] [-q]

Perplexity of the model over a text (default: a bundled 12 KB excerpt of Newton's
Opticks, public domain), tokenized with the model's tokenizer, scored as llama-perplexity
scores it: windows of --ctx tokens (default the model's context), each from an empty
cache, the second half of each scored; PPL ± its standard error. --save-logits keeps
every scored token's distribution; --kl-base compares against such a file from another
export (or engine) over the same tokens: KL divergence, same top token, Δp. A program
that returns only the last row of logits is scored one token per step (said in the
output), or refused with --no-stepwise. Runs are stored (kind quality) unless --no-save.`

// perplexityOpts are the command's flags.
type perplexityOpts struct {
	pte, tokenizer, text, ids, save, base, eng, out, dbPath string
	numerics                                                string // "" = exact, this command's reference
	random, ctx, topK                                       int
	seed                                                    uint64
	noSave, noStep, quiet                                   bool
	cache                                                   cacheFlags
}

func (o *perplexityOpts) register(fs *flag.FlagSet) {
	fs.StringVar(&o.pte, "pte", "", "the .pte model to score (required)")
	fs.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer.json (default: next to the .pte)")
	fs.StringVar(&o.text, "text", "", "text file to score (default: the bundled Opticks excerpt)")
	fs.StringVar(&o.ids, "ids", "", "file of token ids to score instead of a text (spaces, commas or newlines between them)")
	fs.IntVar(&o.random, "random-ids", 0, "score N synthetic ids (seeded, ordinary vocabulary ids) instead of a text: models without a tokenizer")
	fs.Uint64Var(&o.seed, "seed", bench.DefaultSeed, "seed of --random-ids")
	fs.IntVar(&o.ctx, "ctx", 0, "tokens per window (default: the --kl-base's window, else the model's context)")
	fs.StringVar(&o.save, "save-logits", "", "write every scored token's distribution to FILE, a base for --kl-base")
	fs.IntVar(&o.topK, "top-k", 0, "with --save-logits: keep only each row's K most likely tokens (0: all; see docs/perplexity.md)")
	fs.StringVar(&o.base, "kl-base", "", "a --save-logits file of another export over the same tokens: report the KL divergence from it")
	fs.BoolVar(&o.noStep, "no-stepwise", false, "refuse a program that returns only the last row of logits instead of scoring it a token per step")
	fs.StringVar(&o.eng, "engine", engine.Auto, "engine: "+engine.Help())
	fs.StringVar(&o.numerics, "numerics", "", "numerics of quantized matmuls on the CPU engine: exact (fp32, the reference; the default here) or fast (8-bit activations), recorded with the run: a fast run's --kl-base of an exact run's logits is what fast costs (not with --engine mlx)")
	fs.StringVar(&o.out, "o", "md", "output format: md, csv, json or jsonl")
	fs.StringVar(&o.dbPath, "db", "", "database file (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	fs.BoolVar(&o.noSave, "no-save", false, "do not store the run")
	fs.BoolVar(&o.quiet, "q", false, "no progress on stderr")
	o.cache.register(fs)
}

// check is the flags' own check, before anything loads.
func (o *perplexityOpts) check() error {
	n := 0
	for _, set := range []bool{o.text != "", o.ids != "", o.random > 0} {
		if set {
			n++
		}
	}
	switch {
	case o.pte == "":
		return Usagef("flag -pte is required: the .pte model to score")
	case n > 1:
		return Usagef("flags -text, -ids and -random-ids exclude each other: give one")
	case o.random < 0:
		return Usagef("invalid value %d for flag -random-ids: a count of ids", o.random)
	case o.ctx != 0 && o.ctx < 4:
		return Usagef("invalid value %d for flag -ctx: at least 4 tokens", o.ctx)
	case o.topK < 0 || (o.topK > 0 && o.save == ""):
		return Usagef("invalid value %d for flag -top-k: a count of tokens, with -save-logits", o.topK)
	case o.save != "" && o.save == o.base:
		return Usagef("flags -save-logits and -kl-base name the same file")
	case !slices.Contains(quality.Formats, o.out):
		return Usagef("invalid value %q for flag -o: want %s", o.out, strings.Join(quality.Formats, ", "))
	}
	if err := o.checkEngine(); err != nil {
		return err
	}
	return o.cache.check()
}

// checkEngine checks --engine and --numerics (whether the engine takes
// the mode is the loader's to say).
func (o *perplexityOpts) checkEngine() error {
	if _, err := engine.Canonical(o.eng); err != nil {
		return Usagef("invalid value %q for flag -engine: %v", o.eng, err)
	}
	if _, err := engine.ParseNumerics(o.numerics); err != nil {
		return Usagef("invalid value %q for flag -numerics: want %s", o.numerics, strings.Join(engine.NumericsModes(), ", "))
	}
	return nil
}

// options are the scoring's options from the flags, reading the text or
// ids file.
func (o *perplexityOpts) options(env *Env) (quality.Options, error) {
	q := quality.Options{PTE: o.pte, Load: inference.LoadOptions{Engine: o.eng, Getenv: env.Getenv, Policy: o.cache.policy(),
		Tokenizer: o.tokenizer}, Ctx: o.ctx, SaveLogits: o.save, TopK: o.topK, KLBase: o.base, NoStepwise: o.noStep,
		RandomIDs: o.random, Seed: o.seed}
	// the mode is recorded only where asked for: a run without the flag
	// reads as before (exact, the reference)
	q.Load.Numerics, q.Mode = o.numerics, o.numerics
	switch {
	case o.random > 0:
		q.TextSource = fmt.Sprintf("%d synthetic ids (seed %d)", o.random, o.seed)
	case o.ids != "":
		b, err := os.ReadFile(o.ids)
		if err != nil {
			return q, err
		}
		if q.IDs, err = idsOf(string(b)); err != nil {
			return q, fmt.Errorf("%s: %w", o.ids, err)
		}
		q.TextSource = "ids from " + o.ids
	case o.text != "":
		b, err := os.ReadFile(o.text)
		if err != nil {
			return q, err
		}
		q.Text, q.TextSource = string(b), o.text
	default:
		q.Text, q.TextSource = quality.DefaultText, quality.DefaultTextSource
	}
	return q, nil
}

// idsOf reads token ids separated by spaces, commas or newlines.
func idsOf(s string) ([]int, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
	if len(f) == 0 {
		return nil, fmt.Errorf("no token ids")
	}
	ids := make([]int, len(f))
	for i, v := range f {
		id, err := strconv.Atoi(v)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q (number %d) is not a token id", v, i+1)
		}
		ids[i] = id
	}
	return ids, nil
}

// runPerplexity scores a model over a text, and against a base.
func runPerplexity(ctx context.Context, env *Env, args []string) error {
	var o perplexityOpts
	fs := newFlags(env, "perplexity", perplexitySynopsis)
	o.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (the model is given with --pte)", fs.Arg(0))
	}
	if err := o.check(); err != nil {
		return err
	}
	q, err := o.options(env)
	if err != nil {
		return err
	}
	var db *store.DB
	if !o.noSave {
		if db, err = openStore(ctx, env, o.dbPath); err != nil {
			return err
		}
		defer db.Close()
	}
	if !o.quiet {
		q.Selected = func(sel inference.Selection) { fmt.Fprintln(env.Stderr, "perplexity:", sel) }
		q.Progress = progressLine(env)
	}
	r, runErr := quality.Run(ctx, q)
	if r == nil {
		return runErr
	}
	return reportPerplexity(ctx, env, &o, db, r, runErr)
}

// reportPerplexity writes the result, stores it and says what happened;
// runErr is the run's error when it stopped early with figures.
func reportPerplexity(ctx context.Context, env *Env, o *perplexityOpts, db *store.DB, r *quality.Result, runErr error) error {
	if err := quality.Write(env.Stdout, o.out, []*quality.Result{r}); err != nil {
		return err
	}
	if db != nil {
		run, err := qualitystore.Save(ctx, db, r, Version)
		if err != nil {
			return fmt.Errorf("run not saved: %w", storeError(err))
		}
		if !o.quiet {
			fmt.Fprintf(env.Stderr, "perplexity: saved as run %d in %s\n", run.ID, db.File())
		}
	}
	if runErr != nil {
		return fmt.Errorf("stopped after %d of %d windows: %w", r.Scored/max(r.Ctx-1-r.First, 1), r.Windows, runErr)
	}
	if r.SavedLogits != "" && !o.quiet {
		fmt.Fprintln(env.Stderr, "perplexity: logits saved to", r.SavedLogits)
	}
	return nil
}

// progressLine is the progress display: a bar redrawn in place on a
// terminal, else a line per tenth of the windows.
func progressLine(env *Env) func(quality.Progress) {
	tty := isTerminal(env.Stderr)
	last := -1
	return func(p quality.Progress) {
		eta := time.Duration(0)
		if p.Window > 0 {
			eta = p.Elapsed / time.Duration(p.Window) * time.Duration(p.Windows-p.Window)
		}
		if tty {
			const width = 30
			done := width * p.Window / max(p.Windows, 1)
			fmt.Fprintf(env.Stderr, "\rperplexity: [%s%s] %d/%d windows, PPL %.4f, %s left ", strings.Repeat("#", done),
				strings.Repeat(".", width-done), p.Window, p.Windows, p.PPL, eta.Round(time.Second))
			if p.Window == p.Windows {
				fmt.Fprintln(env.Stderr)
			}
			return
		}
		if tenth := 10 * p.Window / max(p.Windows, 1); tenth != last {
			last = tenth
			fmt.Fprintf(env.Stderr, "perplexity: %d/%d windows, %d tokens scored, PPL so far %.4f\n", p.Window, p.Windows, p.Scored, p.PPL)
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
