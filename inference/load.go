package inference

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/sampler"
)

// LoadOptions say how Load loads a model. The zero value is: engine auto,
// the default cache policy, the tokenizer beside the .pte if there is one,
// the chat template chosen automatically.
type LoadOptions struct {
	// Engine is an engine choice (engine.Choices: auto, cpu, mlx; aliases
	// such as metal are accepted). "" is auto.
	Engine string
	// Library is the native runner library to load; "" = the usual search.
	Library string
	// Getenv is the environment the library search reads ($ETCHAT_RUNNER);
	// nil = the process's. The CLI passes its own, so tests are not at the
	// mercy of the machine's.
	Getenv func(string) string
	// Policy is the off-graph cache policy; the zero value is
	// kvcache.DefaultPolicy(). In-graph models ignore it.
	Policy kvcache.Policy
	// Tokenizer is a tokenizer.json; "" = the one beside the .pte.
	Tokenizer string
	// NeedTokenizer makes a missing tokenizer an error (*TokenizerError);
	// without it a model without one loads with Chat nil (ids only).
	NeedTokenizer bool
	// Chat is the chat template: "" or "auto", a built-in name (llama3,
	// gemma, gemma4, chatml), or "0"/"none" for raw text.
	Chat string
	// Hash computes the file's sha256 into Info.SHA256 (reads the file).
	Hash bool
	// Progress, when set, is told each step of the load.
	Progress func(LoadStep)

	// Numerics is the CPU engine's numerics mode (engine.NumericsExact or
	// NumericsFast; "" = exact, the reference: the zero value keeps every
	// comparison with a reference exact). The front ends default to fast.
	// An explicit mode with the native engine asked for is a
	// *engine.NumericsError.
	Numerics string
}

// LoadStep is one step of a load, for a progress display.
type LoadStep struct {
	Stage       string // one of the Stage constants
	Done, Total int    // steps done of all
}

// Load stages, in order.
const (
	StageModel     = "reading the model"
	StageTokenizer = "loading the tokenizer"
	StageEngine    = "choosing the engine"
	StageProgram   = "loading the program"
	StageReady     = "ready"
)

// Model is a loaded model with everything a chat, a run or a benchmark
// needs: what the file is, the cache configuration, the engine chosen and
// why, its session, and the tokenizer, template and stop set (Chat is nil
// when no tokenizer was found and none was needed).
type Model struct {
	Path  string
	Info  *modelinfo.Info
	Cache *kvcache.Config // nil for in-graph models
	Chat  *Chat
	// StopIDs end a reply: the .pte's get_eos_ids, generation_config.json's
	// EOS, the tokenizer's EOS and the template's turn end (Chat.StopIDs);
	// without a tokenizer the .pte's and generation_config.json's.
	StopIDs []int

	// Set by Open.
	Engine       Selection
	Session      engine.Session
	LoadStart    time.Time
	LoadEnd      time.Time
	MemAfterLoad engine.Memory

	opts LoadOptions
}

// Load is the one way a model is loaded (CLI, app and benchmark): it reads
// the .pte at path, builds its cache configuration from o.Policy, loads
// the tokenizer and chat template and checks that the tokenizer belongs to
// the model (Prepare), then picks the engine and opens a session (Open).
//
// Engine choice: an explicit engine is that engine or its full error; auto
// is the native engine (ExecuTorch + MLX) when its library loads and runs
// on a GPU, else the CPU engine; and when auto chose the native engine but
// it cannot open the program or its first forward fails (no device, no
// metallib, the backend refuses the program), Load falls back to the CPU
// engine and Model.Engine.Reason says why. Problems with the files are
// reported before any engine loads.
//
// Errors a user fixes are typed: *UnsupportedModelError, *CacheConfigError,
// *modelinfo.MetadataError,
// *TokenizerError, *TemplateError, *VocabMismatchError, *engine.UnknownError,
// *engine.LibraryError (wrapped with engine.ErrNotAvailable).
func Load(ctx context.Context, path string, o LoadOptions) (*Model, error) {
	m, err := Prepare(path, o)
	if err != nil {
		return nil, err
	}
	if err := m.Open(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

const loadSteps = 4

func (o *LoadOptions) step(stage string, done int) {
	if o.Progress != nil {
		o.Progress(LoadStep{Stage: stage, Done: done, Total: loadSteps})
	}
}

// Prepare is Load's first half: everything but the engine. The Model it
// returns has no session until Open.
func Prepare(path string, o LoadOptions) (*Model, error) {
	name, err := engine.Canonical(o.Engine)
	if err != nil {
		return nil, err
	}
	if err := checkNumerics(o.Numerics, name); err != nil {
		return nil, err
	}
	o.step(StageModel, 0)
	info, err := modelinfo.Load(path, modelinfo.Options{Hash: o.Hash})
	if err != nil {
		return nil, err
	}
	if info.Kind != modelinfo.OffGraph && info.Kind != modelinfo.InGraph {
		return nil, &UnsupportedModelError{Path: path, Reason: info.KindReason, Newer: info.NewerExport}
	}
	m := &Model{Path: path, Info: info, opts: o}
	if err := m.configure(o.Policy); err != nil {
		return nil, err
	}
	o.step(StageTokenizer, 1)
	tokPath := o.Tokenizer
	if tokPath == "" {
		tokPath = filepath.Join(filepath.Dir(path), modelinfo.TokenizerFile)
	}
	if _, err := os.Stat(tokPath); err != nil {
		if o.Tokenizer != "" || o.NeedTokenizer {
			return nil, &TokenizerError{Path: tokPath, Given: o.Tokenizer != "", Err: err}
		}
		tokPath = ""
	}
	if tokPath == "" {
		m.StopIDs = appendNew(appendNew(nil, info.EOSIDs...), info.Companion.GenerationEOS...)
		return m, nil
	}
	if m.Chat, err = LoadChat(tokPath, ChatDir(path, o.Tokenizer), o.Chat, info.EOSIDs); err != nil {
		return nil, err
	}
	if info.VocabSize > 0 && m.Chat.HF.VocabSize() > info.VocabSize {
		return nil, &VocabMismatchError{Tokenizer: tokPath, TokenizerVocab: m.Chat.HF.VocabSize(), Model: path, ModelVocab: info.VocabSize}
	}
	m.StopIDs = m.Chat.StopIDs
	return m, nil
}

// configure builds the cache configuration for p.
func (m *Model) configure(p kvcache.Policy) error {
	m.Cache = nil
	if m.Info.Kind != modelinfo.OffGraph {
		return nil
	}
	if p == (kvcache.Policy{}) {
		p = kvcache.DefaultPolicy()
	}
	cfg, err := m.Info.CacheConfig(p)
	if err != nil {
		e := &CacheConfigError{Err: err}
		if fes := kvcache.FieldErrors(err); len(fes) > 0 {
			e.Field = fes[0].Field
		}
		return e
	}
	m.Cache = cfg
	return nil
}

// WithPolicy is a copy of a prepared model with another cache policy (a
// benchmark tests several); it shares the tokenizer and has no session.
func (m *Model) WithPolicy(p kvcache.Policy) (*Model, error) {
	c := &Model{Path: m.Path, Info: m.Info, Chat: m.Chat, StopIDs: m.StopIDs, opts: m.opts}
	c.opts.Policy = p
	if err := c.configure(p); err != nil {
		return nil, err
	}
	return c, nil
}

// WithNumerics is a copy of a prepared model with another numerics mode
// (a benchmark sweeps them); it shares the tokenizer and has no session.
func (m *Model) WithNumerics(n string) (*Model, error) {
	if name, _ := engine.Canonical(m.opts.Engine); checkNumerics(n, name) != nil {
		return nil, checkNumerics(n, name)
	}
	c := *m
	c.Session, c.opts.Numerics = nil, n
	return &c, nil
}

// checkNumerics refuses an unknown mode, and any mode asked of the native
// engine (canonical name), which has none.
func checkNumerics(n, name string) error {
	if _, err := engine.ParseNumerics(n); err != nil {
		return err
	}
	if n != "" && name == engine.MLX {
		return &engine.NumericsError{Value: n, Engine: name}
	}
	return nil
}

// Open is Load's second half: it picks the engine (see Load) and opens a
// session on it.
func (m *Model) Open(ctx context.Context) error {
	m.opts.step(StageEngine, 2)
	sel, err := SelectEngine(m.opts.Engine, engine.Config{Library: m.opts.Library, Getenv: m.opts.Getenv, Numerics: m.opts.Numerics})
	if err != nil {
		return err
	}
	return m.OpenOn(ctx, sel)
}

// OpenOn opens a session on an engine already chosen. When sel is auto's
// native choice and the program does not open or its first forward fails,
// it falls back to the CPU engine (saying why in m.Engine.Reason); any
// other failure is returned whole.
func (m *Model) OpenOn(ctx context.Context, sel Selection) error {
	if m.Session != nil {
		return errors.New("model already open")
	}
	m.opts.step(StageProgram, 3)
	m.LoadStart = time.Now()
	sess, err := m.openProbed(ctx, sel)
	if err != nil && sel.Auto && !sel.Fallback && ctx.Err() == nil {
		why := fmt.Sprintf("%s on %s failed (%s)", sel.Name, sel.Device, oneLine(err))
		if sel, err = cpuFallback(why, engine.Config{Library: m.opts.Library, Getenv: m.opts.Getenv, Numerics: m.opts.Numerics}); err != nil {
			return err
		}
		sess, err = m.openProbed(ctx, sel)
	}
	if err != nil {
		return err
	}
	m.LoadEnd = time.Now()
	m.Engine, m.Session = sel, sess
	if m.Numerics() == engine.NumericsFast {
		m.Engine.Numerics = engine.NumericsFast
	}
	m.MemAfterLoad = sess.Memory()
	if m.Chat != nil && m.Chat.HF.VocabSize() > sess.Vocab() {
		sess.Close()
		m.Session = nil
		return &VocabMismatchError{Tokenizer: m.Chat.Path, TokenizerVocab: m.Chat.HF.VocabSize(), Model: m.Path, ModelVocab: sess.Vocab()}
	}
	m.opts.step(StageReady, loadSteps)
	return nil
}

// probeTokens is the most tokens auto's probe runs: enough for what only a
// multi-token prefill reaches (its masks, a kernel compiled on first use),
// few enough to stay cheap.
const probeTokens = 4

// openProbed opens a session; for auto's native choice it also runs a
// small prefill of min(prefill chunk, probeTokens) tokens (then rewinds it,
// or reopens an in-graph program, which cannot rewind), so that a backend
// that loads but cannot execute is found here, where auto can still fall
// back.
func (m *Model) openProbed(ctx context.Context, sel Selection) (engine.Session, error) {
	sess, err := sel.Engine.Open(ctx, m.Path, m.Cache)
	if err != nil {
		return nil, fmt.Errorf("loading %s on %s: %w", m.Path, sel.Name, err)
	}
	if !sel.Auto || sel.Fallback {
		return sess, nil
	}
	n := min(max(m.PrefillChunk(), 1), probeTokens)
	if c := sess.Capacity(); c > 0 {
		n = min(n, c)
	}
	ids, pos := make([]int64, n), make([]int64, n)
	for i := range pos {
		pos[i] = int64(i)
	}
	if _, err := sess.Forward(ctx, ids, pos); err != nil {
		sess.Close()
		return nil, fmt.Errorf("first forward (%d tokens) of %s on %s: %w", n, m.Path, sel.Name, err)
	}
	if m.Cache != nil {
		if err := sess.Rewind(0); err != nil {
			sess.Close()
			return nil, fmt.Errorf("rewinding the probe of %s on %s: %w", m.Path, sel.Name, err)
		}
		return sess, nil
	}
	sess.Close()
	if sess, err = sel.Engine.Open(ctx, m.Path, m.Cache); err != nil {
		return nil, fmt.Errorf("loading %s on %s: %w", m.Path, sel.Name, err)
	}
	return sess, nil
}

func appendNew(dst []int, ids ...int) []int {
	for _, id := range ids {
		dup := false
		for _, d := range dst {
			dup = dup || d == id
		}
		if id >= 0 && !dup {
			dst = append(dst, id)
		}
	}
	return dst
}

// ChatDir is the folder whose tokenizer_config.json (chat template, EOS)
// and generation_config.json go with a model: the explicitly given
// tokenizer's folder when it has a tokenizer_config.json (the tokenizer's
// own settings), else the .pte's.
func ChatDir(ptePath, tokenizerPath string) string {
	if tokenizerPath != "" {
		d := filepath.Dir(tokenizerPath)
		if _, err := os.Stat(filepath.Join(d, modelinfo.TokenizerConfigFile)); err == nil {
			return d
		}
	}
	return filepath.Dir(ptePath)
}

// Numerics is the numerics mode the open session computes in: the CPU
// engine's (fast only where the model has quantized matrices it runs
// that way), exact for engines without modes.
func (m *Model) Numerics() string {
	if n, ok := m.Session.(interface{ Numerics() string }); ok {
		return n.Numerics()
	}
	return engine.NumericsExact
}

// PrefillChunk is the largest forward step: the cache's max_write for
// off-graph models, the program's chunk for in-graph ones.
func (m *Model) PrefillChunk() int {
	if m.Cache != nil {
		return m.Cache.MaxWrite
	}
	return m.Info.PrefillChunk
}

// Capacity is the most tokens the cache admits: the configuration's
// capacity, or the in-graph program's max context.
func (m *Model) Capacity() int {
	if m.Cache != nil {
		return m.Cache.Capacity
	}
	return m.Info.MaxCtxLen
}

// Generation is generation options for this model: its stop set, turn
// end, prefill chunk and decoder, with the given budget and sampling.
func (m *Model) Generation(maxNew int, s sampler.Sampling) Options {
	o := Options{MaxNewTokens: maxNew, Sampling: s, PrefillChunk: m.PrefillChunk(), StopIDs: m.StopIDs}
	if m.Chat != nil {
		o.TurnEndIDs, o.Decoder = m.Chat.TurnEndIDs, m.Chat.Tokenizer
	}
	return o
}

// NewConversation starts a conversation on the model's session (clearing
// it). system, when not empty, is the system prompt.
func (m *Model) NewConversation(system string, gen Options) (*Conversation, error) {
	if m.Chat == nil {
		return nil, &TokenizerError{Path: filepath.Join(filepath.Dir(m.Path), modelinfo.TokenizerFile), Err: os.ErrNotExist}
	}
	return NewConversation(m.Session, ConversationOptions{Tokenizer: m.Chat.Tokenizer, Template: m.Chat.Template,
		System: system, Generation: gen, Cache: m.Cache})
}

// ResumeConversation restores stored messages on the model's session.
func (m *Model) ResumeConversation(ctx context.Context, msgs []Message, gen Options) (*Conversation, error) {
	if m.Chat == nil {
		return nil, &TokenizerError{Path: filepath.Join(filepath.Dir(m.Path), modelinfo.TokenizerFile), Err: os.ErrNotExist}
	}
	return Resume(ctx, m.Session, ConversationOptions{Tokenizer: m.Chat.Tokenizer, Template: m.Chat.Template,
		Generation: gen, Cache: m.Cache}, msgs)
}

// StatsBase fills in a Stats' load interval and memory after load.
func (m *Model) StatsBase(st *Stats) {
	st.SetLoad(m.LoadStart, m.LoadEnd)
	st.MemAfterLoad = m.MemAfterLoad
	st.PeakBytes = max(st.PeakBytes, m.MemAfterLoad.PeakBytes)
}

// Close releases the session.
func (m *Model) Close() error {
	if m.Session == nil {
		return nil
	}
	return m.Session.Close()
}
