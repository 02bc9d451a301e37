package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/bench/plot"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/benchstore"
	"etchat/store"
)

var benchSynopsis = `--pte FILE [--tokenizer FILE] [-p 512,1024] [-n 128] [-d 0,4096] [-r 5] [--no-warmup]
       [--kv-storage-dtype bf16,fp16] [--kv-max-capacity N,...] [--kv-windows 'SPEC;SPEC'] [--engine ` + strings.Join(engine.Choices(), "|") + `]
       [--numerics fast,exact] [-o md|csv|json|jsonl|sql] [--db PATH] [--no-save] [--plot FILE.png] [-q]

Every listed value combines with every other (llama-bench style): each -p size is a
prefill test "ppN", each -n size a decode test "tgN", each at every -d depth ("@ dD",
D tokens prefilled untimed first), every cache configuration and every --numerics mode. Prompt ids are
synthetic (seeded, ordinary vocabulary ids, no special tokens). t/s is mean ± sample
standard deviation over the -r repetitions, each from a cleared cache after one untimed
warmup. A test that does not fit the cache (depth + prompt + generated > capacity) stops
the command before anything runs, naming every such test. Results are stored (see
'etchat history --runs', 'etchat compare') unless --no-save.`

// runBench measures prefill and decode speed and stores the results.
func runBench(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "bench", benchSynopsis)
	pte := fs.String("pte", "", "the .pte model to measure (required)")
	tok := fs.String("tokenizer", "", "tokenizer.json whose special/added ids the prompts avoid (default: next to the .pte, if any)")
	prompts := fs.String("p", "512", "prompt sizes, comma list; each is a prefill test ppN (0: none)")
	gens := fs.String("n", "128", "generation sizes, comma list; each is a decode test tgN (0: none)")
	depths := fs.String("d", "0", "depths, comma list: tokens already in the cache before each test")
	reps := fs.Int("r", 5, "repetitions of each test")
	noWarm := fs.Bool("no-warmup", false, "skip the untimed warmup before each test")
	def := kvcache.DefaultPolicy() // the same defaults as run's and inspect's flags
	// A benchmark names its dtypes (its results compare them): bf16 unless
	// given, whatever the model's activation dtype.
	dtypes := fs.String(cacheFlag[kvcache.FieldStorageDType], kvcache.DefaultStorageDType.Flag(), "off-graph: KV storage dtypes, comma list of bf16|fp16|fp32")
	caps := fs.String(cacheFlag[kvcache.FieldCapacity], strconv.Itoa(def.Capacity), "off-graph: cache capacities in tokens, comma list (0 = the model's get_max_ctx_len)")
	windows := fs.String(cacheFlag[kvcache.FieldWindows], def.Windows, "off-graph: attention patterns, ';'-separated list of window specs (each a comma list repeated over the caches, 0 = flat; empty = the model's own)")
	eng := fs.String("engine", engine.Auto, "engine: "+engine.Help())
	var num numericsFlag
	num.register(fs, true)
	out := fs.String("o", "md", "output format: md, csv, json, jsonl or sql")
	dbPath := fs.String("db", "", "database file (default $"+store.EnvVar+", else the user config folder's etchat/etchat.db)")
	noSave := fs.Bool("no-save", false, "do not store the results")
	plotFile := fs.String("plot", "", "also draw the results as a bar chart (t/s ± sd per test) to this PNG file")
	seed := fs.Uint64("seed", bench.DefaultSeed, "seed of the synthetic prompt ids")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (the model is given with --pte)", fs.Arg(0))
	}
	if *pte == "" {
		return Usagef("flag -pte is required: the .pte model to measure")
	}
	o := bench.Options{PTE: *pte, Tokenizer: *tok, Reps: *reps, NoWarmup: *noWarm, Seed: *seed, AppVersion: Version,
		BuildCommit: buildCommit(env.Getenv), Getenv: env.Getenv}
	var err error
	if o.Prompts, err = intList("p", *prompts); err != nil {
		return err
	}
	if o.Gens, err = intList("n", *gens); err != nil {
		return err
	}
	if o.Depths, err = intList("d", *depths); err != nil {
		return err
	}
	if !slices.ContainsFunc(append(slices.Clone(o.Prompts), o.Gens...), func(n int) bool { return n > 0 }) {
		return Usagef("invalid values for flags -p and -n: no test left (every size is 0)")
	}
	if *reps < 1 {
		return Usagef("invalid value %d for flag -r: at least 1 repetition", *reps)
	}
	if !slices.Contains(bench.Formats, *out) {
		return Usagef("invalid value %q for flag -o: want %s", *out, strings.Join(bench.Formats, ", "))
	}
	if o.EngineChoice, o.Numerics, err = benchEngine(*eng, num); err != nil {
		return err
	}
	if *plotFile != "" && !strings.HasSuffix(strings.ToLower(*plotFile), ".png") {
		return Usagef("invalid value %q for flag -plot: want a .png file name", *plotFile)
	}
	if o.Caches, err = cacheSpecs(*dtypes, *caps, *windows); err != nil {
		return err
	}

	// Check every test fits before loading anything heavy.
	if _, err := bench.Prepare(o); err != nil {
		return err
	}

	var db *store.DB
	if !*noSave {
		var err error
		if db, err = openStore(ctx, env, *dbPath); err != nil {
			return err
		}
		defer db.Close()
	}
	if !*quiet {
		var said string
		o.Selected = func(sel inference.Selection) {
			if line := sel.String(); line != said {
				fmt.Fprintln(env.Stderr, "bench:", line)
				said = line
			}
		}
		o.Progress = func(p bench.Progress) { fmt.Fprintln(env.Stderr, "bench:", p) }
	}
	var saveErr error
	o.Result = func(r *bench.Result) {
		if db != nil && saveErr == nil {
			saveErr = benchstore.Save(ctx, db, []*bench.Result{r})
		}
	}
	results, runErr := bench.Run(ctx, o)
	if len(results) > 0 {
		if err := bench.Write(env.Stdout, *out, results); err != nil {
			return err
		}
	}
	if runErr != nil {
		if len(results) > 0 {
			return fmt.Errorf("stopped after %d tests: %w", len(results), runErr)
		}
		return runErr
	}
	if saveErr != nil {
		return fmt.Errorf("results not saved: %w", saveErr)
	}
	if db != nil && !*quiet {
		ids := make([]string, len(results))
		for i, r := range results {
			ids[i] = strconv.FormatInt(r.RunID, 10)
		}
		fmt.Fprintf(env.Stderr, "bench: saved as runs %s (batch %s) in %s\n", strings.Join(ids, ","), results[0].Batch, db.File())
	}
	if *plotFile != "" {
		png, err := plot.BarsPNG(results, nil, plot.Size{})
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		if err := os.WriteFile(*plotFile, png, 0o644); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		if !*quiet {
			fmt.Fprintln(env.Stderr, "bench: chart written to", *plotFile)
		}
	}
	return nil
}

// benchEngine checks --engine and --numerics: the engine choice and the
// numerics modes to sweep.
func benchEngine(eng string, num numericsFlag) (string, []string, error) {
	if _, err := engine.Canonical(eng); err != nil {
		return "", nil, Usagef("invalid value %q for flag -engine: %v", eng, err)
	}
	modes, err := num.modes(eng)
	return eng, modes, err
}

// intList reads a comma list of sizes for flag name.
func intList(name, s string) ([]int, error) {
	v, err := bench.ParseSizes(s)
	if err != nil {
		return nil, Usagef("invalid value %q for flag -%s: %v", s, name, err)
	}
	return v, nil
}

// cacheSpecs is the product of the kv flags' lists.
func cacheSpecs(dtypes, caps, windows string) ([]bench.CacheSpec, error) {
	specs, err := bench.ParseCacheSpecs(dtypes, caps, windows)
	var le *bench.CacheListError
	if errors.As(err, &le) {
		flag, val := map[string]string{"dtype": "kv-storage-dtype", "capacity": "kv-max-capacity", "windows": "kv-windows"}[le.List],
			map[string]string{"dtype": dtypes, "capacity": caps, "windows": windows}[le.List]
		return nil, Usagef("invalid value %q for flag -%s: %v", val, flag, le.Err)
	}
	return specs, err
}

// BuildCommitEnv overrides the build_commit bench records.
const BuildCommitEnv = "ETCHAT_BUILD_COMMIT"

// buildCommit is llama-bench's build_commit for this binary: $ETCHAT_BUILD_COMMIT when
// set, else Version, except that a "dev" build names the VCS revision it
// was built from (its first 7 hex digits, as llama-bench's), when Go
// recorded one.
func buildCommit(getenv func(string) string) string {
	if c := getenv(BuildCommitEnv); c != "" {
		return c
	}
	if Version != "dev" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 7 {
				return s.Value[:7]
			}
		}
	}
	return Version
}
