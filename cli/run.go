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
	numerics                                            numericsFlag
	maxNew, topK                                        int
	temperature, topP                                   float64
	seed                                                uint64
	interactive, warmup, ignoreEOS, asJSON              bool
	getenv                                              func(string) string // the library search's environment
	cache                                               cacheFlags
	structured                                          structuredFlags
}

// runRun generates from one prompt, like ExecuTorch's run_llm_hf: cache
// summary, memory lines, streamed text, then the stats report; or chats on
// stdin with --interactive.
func runRun(ctx context.Context, env *Env, args []string) error {
	o, err := parseRunFlags(env, args)
	if err != nil {
		return err
	}
	var ids []int
	if o.promptIDs != "" {
		if ids, err = parseIDs(o.promptIDs); err != nil {
			return err
		}
	}

	// Everything that can be wrong with the files is found before the
	// model is loaded.
	if err := o.structured.compile(); err != nil {
		return err
	}
	m, err := o.prepare(ids == nil || o.structured.set())
	if err != nil {
		return err
	}
	if o.interactive && m.Cache == nil {
		return fmt.Errorf("%s is an %s model; --interactive needs an off-graph KV cache (re-export with --use-offgraph-cache)", o.pte, m.Info.Kind)
	}
	if !o.interactive {
		if ids, err = o.promptTokens(m, ids); err != nil {
			return err
		}
	}

	if err := m.Open(ctx); err != nil {
		return err
	}
	defer m.Close()
	out := env.Stdout // the report; with --json it goes to stderr
	if o.asJSON {
		out = env.Stderr
	}
	o.printLoaded(out, m)

	gen := m.Generation(o.maxNew, sampler.Sampling{Temperature: o.temperature, TopK: o.topK, TopP: o.topP, Seed: o.seed})
	gen.IgnoreEOS = o.ignoreEOS
	if o.interactive {
		return o.interact(ctx, env, m, gen)
	}
	return o.oneShot(ctx, env, out, m, gen, ids)
}

// parseRunFlags reads etchat run's flags and checks them.
func parseRunFlags(env *Env, args []string) (*runOpts, error) {
	fs := newFlags(env, "run", runSynopsis)
	o := &runOpts{getenv: env.Getenv}
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
	o.numerics.register(fs, false)
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", false, "do not stop at end-of-sequence tokens: generate exactly --max-new-tokens")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object (prompt_ids, generated_ids, text, stats) instead of the report")
	fs.StringVar(&o.db, "db", "", "save the run's stats in this etchat database; with --interactive also the conversation, as the app keeps it")
	o.cache.register(fs)
	o.structured.register(fs)
	if err := parseFlags(fs, gflagsSpellings(fs, args)); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, Usagef("unexpected argument %q (flags only; the model is --pte)", fs.Arg(0))
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// promptTokens is the one-shot prompt: ids (--prompt-ids) as given, else
// --prompt as the chat template renders it; checked against the
// vocabulary and the capacity before the model loads.
func (o *runOpts) promptTokens(m *inference.Model, ids []int) ([]int, error) {
	if ids == nil {
		var err error
		if ids, err = m.Chat.Encode(o.prompt); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, Usagef("the prompt is empty")
	}
	for _, id := range ids {
		if m.Info.VocabSize > 0 && id >= m.Info.VocabSize {
			return nil, Usagef("invalid --prompt-ids: token %d is outside the model's vocabulary (%d)", id, m.Info.VocabSize)
		}
	}
	if capacity := m.Capacity(); capacity > 0 && len(ids)+1 > capacity {
		return nil, fmt.Errorf("%w: the prompt is %d tokens; with one generated token it does not fit the cache capacity %d", inference.ErrPromptTooLong, len(ids), capacity)
	}
	return ids, nil
}

// printLoaded is the report's head: the engine chosen, the cache and the
// memory after load.
func (o *runOpts) printLoaded(out io.Writer, m *inference.Model) {
	fmt.Fprintln(out, m.Engine.String())
	if m.Cache != nil {
		fmt.Fprintln(out)
		fmt.Fprintln(out, m.Cache.Summary())
	} else if !o.cache.isDefault() {
		fmt.Fprintf(out, "[cache] in-graph: the program keeps its own cache of %d tokens; the --kv-* flags do not apply\n", m.Capacity())
	}
	fmt.Fprintf(out, "[mem]   after load  : %s\n", mib(m.MemAfterLoad.ActiveBytes))
}

// interact is --interactive, saving the chat with --db.
func (o *runOpts) interact(ctx context.Context, env *Env, m *inference.Model, gen inference.Options) error {
	var log *chatLog
	if o.db != "" {
		var err error
		if log, err = openChatLog(ctx, env, o, m); err != nil {
			return fmt.Errorf("opening %s to save the chat: %w", o.db, err)
		}
		defer log.Close()
	}
	return interact(ctx, env, m, gen, log)
}

// oneShot generates from ids and reports the run: the footprint and stats
// on out, the --json document on stdout, the record with --db.
func (o *runOpts) oneShot(ctx context.Context, env *Env, out io.Writer, m *inference.Model, gen inference.Options, ids []int) error {
	gen.TurnEndIDs = nil // a one-shot run commits nothing after its reply
	smp, err := sampler.New(gen.Sampling)
	if err != nil {
		return Usagef("%v", err)
	}
	gen.Sampler = smp
	res, err := o.generate(ctx, env, out, m, gen, ids)
	if res == nil || err != nil {
		return err
	}
	st := &res.Stats
	m.StatsBase(st)
	fmt.Fprint(out, "\n\n")
	footprint(out, "after decode ", m.Session, m.MemAfterLoad)
	if res.Capped {
		fmt.Fprintf(out, "[generation capped by capacity: %d of %d tokens]\n", res.Budget, o.maxNew)
	}
	fmt.Fprintln(out)
	st.PrintReport(out)

	if o.asJSON {
		if err := writeRunDoc(env.Stdout, m, ids, res, smp.Seed()); err != nil {
			return err
		}
	}
	if o.db != "" {
		if err := o.save(ctx, env, m, st); err != nil {
			return fmt.Errorf("saving the run to %s: %w", o.db, err)
		}
	}
	return ctx.Err()
}

// generate runs the prompt, after one unmeasured run with --warmup. Only
// the measured run streams its text and reports the footprint after
// prefill. A run stopped by the context is a result, not an error.
func (o *runOpts) generate(ctx context.Context, env *Env, out io.Writer, m *inference.Model, gen inference.Options, ids []int) (*inference.Result, error) {
	var res *inference.Result
	for iter := 0; iter < 1+b2i(o.warmup); iter++ {
		if iter > 0 {
			if err := m.Session.Clear(); err != nil {
				return nil, err
			}
		}
		g := gen
		if iter == 1 || !o.warmup {
			o.measure(&g, env, out, m)
		}
		if err := o.structured.constrain(m, &g); err != nil {
			return nil, err
		}
		var err error
		res, err = inference.Generate(ctx, m.Session, ids, g)
		if res == nil || err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	return res, nil
}

// measure hooks the measured run: the footprint once the prompt is in,
// and the text streamed to stdout unless --json holds it.
func (o *runOpts) measure(g *inference.Options, env *Env, out io.Writer, m *inference.Model) {
	g.OnPrefill = func(done, total int) {
		if done == total {
			fmt.Fprintln(out)
			footprint(out, "after prefill", m.Session, m.MemAfterLoad)
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

// writeRunDoc writes etchat run --json's object.
func writeRunDoc(w io.Writer, m *inference.Model, ids []int, res *inference.Result, seed uint64) error {
	sel := m.Engine
	doc := runDoc{Engine: sel.Name, Device: sel.Device, Numerics: m.Numerics(), PromptIDs: ids, GeneratedIDs: res.GeneratedIDs, Text: res.Text,
		StopReason: res.StopReason, Capped: res.Capped, Seed: seed, Stats: res.Stats}
	if doc.GeneratedIDs == nil {
		doc.GeneratedIDs = []int{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// runDoc is etchat run --json's object.
type runDoc struct {
	Engine       string          `json:"engine"`
	Device       string          `json:"device"`
	Numerics     string          `json:"numerics"` // exact or fast (the CPU engine's mode)
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
	if err := o.structured.check(o); err != nil {
		return err
	}
	if _, err := o.numerics.mode(o.engine); err != nil {
		return err
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
	num, err := o.numerics.mode(o.engine)
	if err != nil {
		return nil, err
	}
	m, err := inference.Prepare(o.pte, inference.LoadOptions{Engine: o.engine, Getenv: o.getenv, Policy: o.cache.policy(), Tokenizer: o.tokenizer,
		NeedTokenizer: needTokenizer, Chat: o.chat, Numerics: num})
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
func (o *runOpts) save(ctx context.Context, env *Env, m *inference.Model, st *inference.Stats) error {
	sel := m.Engine
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
	run.AppVersion, run.Numerics = Version, m.Numerics()
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
	c := &chatSession{out: env.Stdout, conv: conv, log: log}
	fmt.Fprintln(c.out, "Multi-turn chat. /reset clears, /undo drops the last turn, /undo N drops N tokens, /quit exits.")
	in := bufio.NewScanner(env.Stdin)
	in.Buffer(make([]byte, 64*1024), 16<<20)
	for {
		fmt.Fprint(c.out, "\n> ")
		if !in.Scan() {
			fmt.Fprintln(c.out)
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
			err = c.reset(ctx)
		case line == "/undo" || strings.HasPrefix(line, "/undo "):
			err = c.undo(ctx, strings.TrimSpace(strings.TrimPrefix(line, "/undo")))
		case strings.TrimSpace(line) == "":
			continue
		default:
			err = c.send(ctx, line)
		}
		if err != nil {
			return err
		}
	}
}

// chatSession is --interactive's conversation, where it prints, and its
// log (nil without --db). An error from its commands ends the chat; what
// the user can fix is printed and the chat goes on.
type chatSession struct {
	out  io.Writer
	conv *inference.Conversation
	log  *chatLog
}

func (c *chatSession) reset(ctx context.Context) error {
	if err := c.conv.Reset(); err != nil {
		return err
	}
	c.log.save(ctx, c.conv)
	fmt.Fprintln(c.out, "[cleared]")
	return nil
}

// undo is /undo (arg "": the last turn) or /undo N (N tokens).
func (c *chatSession) undo(ctx context.Context, arg string) error {
	var u inference.UndoResult
	var err error
	if arg != "" {
		n, perr := strconv.Atoi(arg)
		if perr != nil || n < 0 {
			fmt.Fprintln(c.out, "[usage: /undo [n_tokens]]")
			return nil
		}
		u, err = c.conv.UndoTokens(ctx, n)
	} else {
		u, err = c.conv.UndoTurn(ctx)
	}
	switch {
	case err != nil && u.Dropped == 0 && !u.Reprefilled:
		fmt.Fprintf(c.out, "[%v]\n", err)
	case err != nil:
		return err
	default:
		note := ""
		if u.Reprefilled {
			note = ", re-prefilled: a sliding-window cache had dropped those cells"
		}
		fmt.Fprintf(c.out, "[rewound to %d%s]\n", u.Len, note)
		c.log.save(ctx, c.conv)
	}
	return nil
}

// send is a user message and its streamed reply, then the cache meter.
func (c *chatSession) send(ctx context.Context, line string) error {
	r, err := c.conv.Send(ctx, line, func(t inference.Token) error {
		_, err := io.WriteString(c.out, t.Text)
		return err
	})
	if errors.Is(err, inference.ErrPromptTooLong) {
		fmt.Fprintf(c.out, "[cache full: %d/%d, use /reset or /undo]\n", c.conv.Len(), c.conv.Capacity())
		return nil
	}
	if err != nil && r == nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(c.out, "[error: %v]\n", err)
		// Forget a turn that did not get its reply.
		if msgs := c.conv.Messages(); len(msgs) > 0 && msgs[len(msgs)-1].Role == inference.RoleUser {
			if _, uerr := c.conv.UndoTurn(context.Background()); uerr != nil {
				return uerr
			}
		}
		return nil
	}
	// A reply cut off (Ctrl-C) is kept too: the context may be done.
	c.log.save(context.WithoutCancel(ctx), c.conv)
	c.log.reply(context.WithoutCancel(ctx), r)
	note := ""
	if r.Capped {
		note = ", generation capped by capacity"
	}
	if r.Reprefilled {
		note += ", history re-prefilled"
	}
	fmt.Fprintf(c.out, "\n[%d/%d tokens%s]\n", c.conv.Len(), c.conv.Capacity(), note)
	return err
}
