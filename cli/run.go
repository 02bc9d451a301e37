package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
	"etchat/internal/runlog"
	"etchat/store"
)

const runSynopsis = "--pte FILE.pte [--prompt TEXT | --prompt-ids 1,2,3 | --interactive] [flags]"

// runOpts are etchat run's flags: run_llm_hf.cpp's, plus the engine,
// sampling and output choices.
type runOpts struct {
	pte, tokenizer, prompt, promptIDs, chat, engine, db string
	maxNew, topK                                        int
	temperature, topP                                   float64
	seed                                                uint64
	interactive, warmup, ignoreEOS, asJSON              bool
	getenv                                              func(string) string // the library search's environment
	cache                                               cacheFlags
}

// runRun generates from one prompt, like ExecuTorch's run_llm_hf: cache
// summary, memory lines, streamed text, then the stats report; or chats on
// stdin with --interactive.
func runRun(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "run", runSynopsis)
	var o runOpts
	fs.StringVar(&o.pte, "pte", "", "model .pte file (required)")
	fs.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer.json (default: the one next to the .pte)")
	fs.StringVar(&o.prompt, "prompt", "The quick brown fox", "prompt to generate from")
	fs.StringVar(&o.promptIDs, "prompt-ids", "", "comma-separated token ids to feed as the prompt (no tokenizing, no template)")
	fs.IntVar(&o.maxNew, "max-new-tokens", 50, "tokens to generate, excluding the prompt")
	fs.Float64Var(&o.temperature, "temperature", 0, "sampling temperature; 0 is greedy argmax, which makes two runs comparable")
	fs.IntVar(&o.topK, "top-k", 0, "sample from the K most likely tokens (0 = all)")
	fs.Float64Var(&o.topP, "top-p", sampler.DefaultTopP, "nucleus sampling mass when --temperature > 0 (0 or 1 = off)")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed for sampling (0 = from the clock)")
	fs.StringVar(&o.chat, "chat", "auto", "chat template: auto (the model's own, else by model_type), llama3, gemma, gemma4, chatml, or 0 for raw text")
	fs.BoolVar(&o.interactive, "interactive", false, "multi-turn chat on stdin (/reset, /undo, /undo N, /quit); off-graph models only")
	fs.BoolVar(&o.warmup, "warmup", false, "run once before measuring, to absorb pool growth")
	fs.StringVar(&o.engine, "engine", engine.Auto, "engine: "+engine.Help())
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", false, "do not stop at end-of-sequence tokens: generate exactly --max-new-tokens")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object (prompt_ids, generated_ids, text, stats) instead of the report")
	fs.StringVar(&o.db, "db", "", "save the run's stats in this etchat database; with --interactive also the conversation, as the app keeps it")
	o.cache.register(fs)
	if err := parseFlags(fs, gflagsSpellings(fs, args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only; the model is --pte)", fs.Arg(0))
	}
	if err := o.validate(); err != nil {
		return err
	}
	var ids []int
	if o.promptIDs != "" {
		var err error
		if ids, err = parseIDs(o.promptIDs); err != nil {
			return err
		}
	}

	// Everything that can be wrong with the files is found before the
	// model is loaded.
	o.getenv = env.Getenv
	m, err := o.prepare(ids == nil)
	if err != nil {
		return err
	}
	info, cfg, chat := m.Info, m.Cache, m.Chat
	if o.interactive && cfg == nil {
		return fmt.Errorf("%s is an %s model; --interactive needs an off-graph KV cache (re-export with --use-offgraph-cache)", o.pte, info.Kind)
	}
	capacity := m.Capacity()

	out := env.Stdout // the report; with --json it goes to stderr
	if o.asJSON {
		out = env.Stderr
	}
	if !o.interactive {
		if ids == nil {
			if ids, err = chat.Encode(o.prompt); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return Usagef("the prompt is empty")
		}
		for _, id := range ids {
			if info.VocabSize > 0 && id >= info.VocabSize {
				return Usagef("invalid --prompt-ids: token %d is outside the model's vocabulary (%d)", id, info.VocabSize)
			}
		}
		if capacity > 0 && len(ids)+1 > capacity {
			return fmt.Errorf("%w: the prompt is %d tokens; with one generated token it does not fit the cache capacity %d", inference.ErrPromptTooLong, len(ids), capacity)
		}
	}

	if err := m.Open(ctx); err != nil {
		return err
	}
	defer m.Close()
	sel, sess, memLoad := m.Engine, m.Session, m.MemAfterLoad
	fmt.Fprintln(out, sel.String())
	if cfg != nil {
		fmt.Fprintln(out)
		fmt.Fprintln(out, cfg.Summary())
	} else if !o.cache.isDefault() {
		fmt.Fprintf(out, "[cache] in-graph: the program keeps its own cache of %d tokens; the --kv-* flags do not apply\n", capacity)
	}
	fmt.Fprintf(out, "[mem]   after load  : %s\n", mib(memLoad.ActiveBytes))

	gen := m.Generation(o.maxNew, sampler.Sampling{Temperature: o.temperature, TopK: o.topK, TopP: o.topP, Seed: o.seed})
	gen.IgnoreEOS = o.ignoreEOS
	if o.interactive {
		var log *chatLog
		if o.db != "" {
			if log, err = openChatLog(ctx, env, &o, m); err != nil {
				return fmt.Errorf("opening %s to save the chat: %w", o.db, err)
			}
			defer log.Close()
		}
		return interact(ctx, env, m, gen, log)
	}
	gen.TurnEndIDs = nil // a one-shot run commits nothing after its reply
	sampler, err := sampler.New(gen.Sampling)
	if err != nil {
		return Usagef("%v", err)
	}
	gen.Sampler = sampler

	var res *inference.Result
	for iter := 0; iter < 1+b2i(o.warmup); iter++ {
		measured := iter == 1 || !o.warmup
		if iter > 0 {
			if err := sess.Clear(); err != nil {
				return err
			}
		}
		g := gen
		if measured {
			g.OnPrefill = func(done, total int) {
				if done == total {
					fmt.Fprintln(out)
					footprint(out, "after prefill", sess, memLoad)
					fmt.Fprintln(out)
				}
			}
			if !o.asJSON {
				g.OnToken = func(t inference.Token) error {
					_, err := io.WriteString(env.Stdout, t.Text)
					return err
				}
			}
		}
		var genErr error
		res, genErr = inference.Generate(ctx, sess, ids, g)
		if res == nil {
			return genErr
		}
		if genErr != nil && !errors.Is(genErr, context.Canceled) {
			return genErr
		}
	}
	st := &res.Stats
	m.StatsBase(st)
	fmt.Fprint(out, "\n\n")
	footprint(out, "after decode ", sess, memLoad)
	if res.Capped {
		fmt.Fprintf(out, "[generation capped by capacity: %d of %d tokens]\n", res.Budget, o.maxNew)
	}
	fmt.Fprintln(out)
	st.PrintReport(out)

	if o.asJSON {
		doc := runDoc{Engine: sel.Name, Device: sel.Device, PromptIDs: ids, GeneratedIDs: res.GeneratedIDs, Text: res.Text,
			StopReason: res.StopReason, Capped: res.Capped, Seed: sampler.Seed(), Stats: *st}
		if doc.GeneratedIDs == nil {
			doc.GeneratedIDs = []int{}
		}
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(doc); err != nil {
			return err
		}
	}
	if o.db != "" {
		if err := o.save(ctx, env, sel, st); err != nil {
			return fmt.Errorf("saving the run to %s: %w", o.db, err)
		}
	}
	return ctx.Err()
}

// runDoc is etchat run --json's object.
type runDoc struct {
	Engine       string          `json:"engine"`
	Device       string          `json:"device"`
	PromptIDs    []int           `json:"prompt_ids"`
	GeneratedIDs []int           `json:"generated_ids"`
	Text         string          `json:"text"`
	StopReason   string          `json:"stop_reason"`
	Capped       bool            `json:"capped"`
	Seed         uint64          `json:"seed"`
	Stats        inference.Stats `json:"stats"`
}

func (o *runOpts) validate() error {
	switch {
	case o.pte == "":
		return Usagef("--pte is required")
	case o.maxNew < 0:
		return Usagef("invalid value %d for flag -max-new-tokens: must be ≥ 0", o.maxNew)
	case o.temperature < 0 || math.IsNaN(o.temperature) || math.IsInf(o.temperature, 0):
		return Usagef("invalid value %v for flag -temperature: must be a finite number ≥ 0", o.temperature)
	case o.topK < 0:
		return Usagef("invalid value %d for flag -top-k: must be ≥ 0", o.topK)
	case o.topP < 0 || o.topP > 1 || math.IsNaN(o.topP):
		return Usagef("invalid value %v for flag -top-p: must be in [0, 1]", o.topP)
	case o.interactive && o.promptIDs != "":
		return Usagef("--prompt-ids and --interactive do not go together")
	}
	if _, err := engine.Canonical(o.engine); err != nil {
		return Usagef("invalid value %q for flag -engine: %v", o.engine, err)
	}
	return o.cache.check()
}

func parseIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		id, err := strconv.Atoi(f)
		if err != nil || id < 0 {
			return nil, Usagef("invalid value %q for flag -prompt-ids: %q is not a token id", s, f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// prepare is the loader's first half for these flags; needTokenizer is
// false when --prompt-ids makes text optional. A bad --chat is a usage
// error.
func (o *runOpts) prepare(needTokenizer bool) (*inference.Model, error) {
	m, err := inference.Prepare(o.pte, inference.LoadOptions{Engine: o.engine, Getenv: o.getenv, Policy: o.cache.policy(), Tokenizer: o.tokenizer,
		NeedTokenizer: needTokenizer, Chat: o.chat})
	var te *inference.TemplateError
	if errors.As(err, &te) {
		return nil, Usagef("invalid value %q for flag -chat: %v", o.chat, err)
	}
	return m, err
}

func footprint(w io.Writer, when string, sess engine.Session, load engine.Memory) {
	n, c := sess.Len(), sess.Capacity()
	pct := 0.0
	if c > 0 {
		pct = 100 * float64(n) / float64(c)
	}
	m := sess.Memory()
	fmt.Fprintf(w, "[cache] %s: %d / %d tokens (%.1f%%)\n", when, n, c, pct)
	fmt.Fprintf(w, "[mem]   %s: %s (+%s since load)\n", when, mib(m.ActiveBytes), mib(m.ActiveBytes-load.ActiveBytes))
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// save records the run in the store.
func (o *runOpts) save(ctx context.Context, env *Env, sel inference.Selection, st *inference.Stats) error {
	path, err := store.ResolvePath(o.db, env.Getenv)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	sum, err := modelinfo.HashFile(o.pte)
	if err != nil {
		return err
	}
	run := runlog.Run(store.RunChat, runlog.Model{Path: o.pte, SHA256: sum}, sel.Name, *st)
	run.AppVersion = Version
	run.Config, _ = json.Marshal(map[string]any{
		"max_new_tokens": o.maxNew, "temperature": o.temperature, "top_k": o.topK, "top_p": o.topP, "seed": o.seed,
		"device": sel.Device, "engine_reason": sel.Reason, "chat": o.chat, "ignore_eos": o.ignoreEOS, "warmup": o.warmup, "prompt_ids": o.promptIDs != "",
		"kv_max_capacity": o.cache.capacity, "kv_storage_dtype": o.cache.dtype, "kv_initial_capacity": o.cache.initial, "kv_windows": o.cache.windows,
	})
	_, err = db.InsertRun(ctx, run, nil)
	return err
}

// interact is --interactive: a Conversation on stdin, with the runner's
// commands. With log (--db), every change is saved as it happens.
func interact(ctx context.Context, env *Env, m *inference.Model, gen inference.Options, log *chatLog) error {
	conv, err := m.NewConversation("", gen)
	if err != nil {
		return err
	}
	out := env.Stdout
	fmt.Fprintln(out, "Multi-turn chat. /reset clears, /undo drops the last turn, /undo N drops N tokens, /quit exits.")
	in := bufio.NewScanner(env.Stdin)
	in.Buffer(make([]byte, 64*1024), 16<<20)
	for {
		fmt.Fprint(out, "\n> ")
		if !in.Scan() {
			fmt.Fprintln(out)
			return in.Err()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		line := strings.TrimRight(in.Text(), "\r")
		switch {
		case line == "/quit":
			return nil
		case line == "/reset":
			if err := conv.Reset(); err != nil {
				return err
			}
			log.save(ctx, conv)
			fmt.Fprintln(out, "[cleared]")
			continue
		case line == "/undo" || strings.HasPrefix(line, "/undo "):
			var u inference.UndoResult
			var err error
			if arg := strings.TrimSpace(strings.TrimPrefix(line, "/undo")); arg != "" {
				n, perr := strconv.Atoi(arg)
				if perr != nil || n < 0 {
					fmt.Fprintln(out, "[usage: /undo [n_tokens]]")
					continue
				}
				u, err = conv.UndoTokens(ctx, n)
			} else {
				u, err = conv.UndoTurn(ctx)
			}
			switch {
			case err != nil && u.Dropped == 0 && !u.Reprefilled:
				fmt.Fprintf(out, "[%v]\n", err)
			case err != nil:
				return err
			default:
				note := ""
				if u.Reprefilled {
					note = ", re-prefilled: a sliding-window layer had dropped those cells"
				}
				fmt.Fprintf(out, "[rewound to %d%s]\n", u.Len, note)
				log.save(ctx, conv)
			}
			continue
		case strings.TrimSpace(line) == "":
			continue
		}
		r, err := conv.Send(ctx, line, func(t inference.Token) error {
			_, err := io.WriteString(out, t.Text)
			return err
		})
		if errors.Is(err, inference.ErrPromptTooLong) {
			fmt.Fprintf(out, "[cache full: %d/%d, use /reset or /undo]\n", conv.Len(), conv.Capacity())
			continue
		}
		if err != nil && r == nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(out, "[error: %v]\n", err)
			// Forget a turn that did not get its reply.
			if msgs := conv.Messages(); len(msgs) > 0 && msgs[len(msgs)-1].Role == inference.RoleUser {
				if _, uerr := conv.UndoTurn(context.Background()); uerr != nil {
					return uerr
				}
			}
			continue
		}
		// A reply cut off (Ctrl-C) is kept too: the context may be done.
		log.save(context.WithoutCancel(ctx), conv)
		log.reply(context.WithoutCancel(ctx), r)
		note := ""
		if r.Capped {
			note = ", generation capped by capacity"
		}
		if r.Reprefilled {
			note += ", history re-prefilled"
		}
		fmt.Fprintf(out, "\n[%d/%d tokens%s]\n", conv.Len(), conv.Capacity(), note)
		if err != nil {
			return err
		}
	}
}
