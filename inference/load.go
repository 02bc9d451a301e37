package inference

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
)

// LoadOptions choose how OpenModel loads a model.
type LoadOptions struct {
	Engine    string         // auto (default), cpu or metal
	Policy    kvcache.Policy // off-graph cache policy; the zero value is kvcache.DefaultPolicy()
	Tokenizer string         // tokenizer.json; "" = the one next to the .pte (optional then)
	Chat      string         // chat template choice; "" = auto
}

// Model is a loaded model with everything a chat or a run needs: what the
// file is, the cache configuration, the engine and its session, and the
// tokenizer/template/stop set (Chat is nil when no tokenizer was found).
type Model struct {
	Info         *modelinfo.Info
	Cache        *kvcache.Config // nil for in-graph models
	Engine       Selection
	Session      Session
	Chat         *Chat
	LoadStart    time.Time
	LoadEnd      time.Time
	MemAfterLoad Memory
}

// OpenModel reads the .pte at path, builds its cache configuration,
// loads the tokenizer and chat template, picks the engine and opens a
// session. Problems with the files are reported before the engine loads
// the program.
func OpenModel(ctx context.Context, path string, o LoadOptions) (*Model, error) {
	info, err := modelinfo.Load(path, modelinfo.Options{})
	if err != nil {
		return nil, err
	}
	if info.Kind == modelinfo.Unsupported {
		return nil, fmt.Errorf("%s: etchat cannot run this program: %s", path, info.KindReason)
	}
	m := &Model{Info: info}
	if info.Kind == modelinfo.OffGraph {
		p := o.Policy
		if p == (kvcache.Policy{}) {
			p = kvcache.DefaultPolicy()
		}
		if m.Cache, err = info.CacheConfig(p); err != nil {
			return nil, fmt.Errorf("cache config: %w", err)
		}
	}
	tokPath := o.Tokenizer
	if tokPath == "" {
		tokPath = filepath.Join(filepath.Dir(path), modelinfo.TokenizerFile)
		if _, err := os.Stat(tokPath); err != nil {
			tokPath = ""
		}
	}
	if tokPath != "" {
		chat := o.Chat
		if chat == "" {
			chat = "auto"
		}
		if m.Chat, err = LoadChat(tokPath, ChatDir(path, o.Tokenizer), chat, info.EOSIDs); err != nil {
			return nil, err
		}
		if info.VocabSize > 0 && m.Chat.HF.VocabSize() > info.VocabSize {
			return nil, fmt.Errorf("the tokenizer %s has %d tokens but the model's vocabulary is %d: it does not belong to %s", tokPath, m.Chat.HF.VocabSize(), info.VocabSize, path)
		}
	}
	if m.Engine, err = OpenEngine(o.Engine); err != nil {
		return nil, err
	}
	m.LoadStart = time.Now()
	if m.Session, err = m.Engine.Engine.Open(ctx, path, m.Cache); err != nil {
		return nil, fmt.Errorf("loading %s on %s: %w", path, m.Engine.Name, err)
	}
	m.LoadEnd = time.Now()
	m.MemAfterLoad = m.Session.Memory()
	if m.Chat != nil && m.Chat.HF.VocabSize() > m.Session.Vocab() {
		m.Session.Close()
		return nil, fmt.Errorf("the tokenizer has %d tokens but the model's logits cover %d", m.Chat.HF.VocabSize(), m.Session.Vocab())
	}
	return m, nil
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

// PrefillChunk is the largest forward step: the cache's max_write for
// off-graph models, the program's chunk for in-graph ones.
func (m *Model) PrefillChunk() int {
	if m.Cache != nil {
		return m.Cache.MaxWrite
	}
	return m.Info.PrefillChunk
}

// Generation is generation options for this model: its stop set, turn
// end, prefill chunk and decoder, with the given budget and sampling.
func (m *Model) Generation(maxNew int, s Sampling) Options {
	o := Options{MaxNewTokens: maxNew, Sampling: s, PrefillChunk: m.PrefillChunk()}
	if m.Chat != nil {
		o.StopIDs, o.TurnEndIDs, o.Decoder = m.Chat.StopIDs, m.Chat.TurnEndIDs, m.Chat.Tokenizer
	} else {
		o.StopIDs = append(append([]int(nil), m.Info.EOSIDs...), m.Info.Companion.GenerationEOS...)
	}
	return o
}

// NewConversation starts a conversation on the model's session (clearing
// it). system, when not empty, is the system prompt.
func (m *Model) NewConversation(system string, gen Options) (*Conversation, error) {
	if m.Chat == nil {
		return nil, errors.New("a conversation needs a tokenizer: none was found next to the model")
	}
	return NewConversation(m.Session, ConversationOptions{Tokenizer: m.Chat.Tokenizer, Template: m.Chat.Template,
		System: system, Generation: gen, Cache: m.Cache})
}

// ResumeConversation restores stored messages on the model's session.
func (m *Model) ResumeConversation(ctx context.Context, msgs []Message, gen Options) (*Conversation, error) {
	if m.Chat == nil {
		return nil, errors.New("a conversation needs a tokenizer: none was found next to the model")
	}
	return Resume(ctx, m.Session, ConversationOptions{Tokenizer: m.Chat.Tokenizer, Template: m.Chat.Template,
		Generation: gen, Cache: m.Cache}, msgs)
}

// StatsBase is a Stats with the load interval and memory filled in, for
// Generate's result to start from.
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
