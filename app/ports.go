package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"etchat/inference/kvcache"
	"etchat/inference/stats"
	"etchat/store"
)

// This file names what the view-models need from the packages below the app
// (model inspection, the conversation type, the store). The view-models talk
// only to these small interfaces; backend.go adapts the real packages to
// them, so the screen logic reads the same whichever engine or database sits
// underneath.

// ModelKind is how a .pte keeps its KV cache, as the library badge shows it.
type ModelKind int

const (
	// KindUnknown: the file has not been read (or could not be).
	KindUnknown ModelKind = iota
	// KindOffGraph: the cache lives outside the program; etchat builds it
	// from the file's published layout and the user's policy.
	KindOffGraph
	// KindInGraph: the program keeps its own cache (no capacity choice,
	// no rewind).
	KindInGraph
	// KindUnsupported: etchat cannot run the file; KindReason says why.
	KindUnsupported
)

// Badge is the short label of a kind.
func (k ModelKind) Badge() string {
	switch k {
	case KindOffGraph:
		return "off-graph"
	case KindInGraph:
		return "in-graph"
	case KindUnsupported:
		return "not runnable"
	}
	return "unreadable"
}

// ModelInfo is what the library shows about one .pte.
type ModelInfo struct {
	Path         string
	SizeBytes    int64
	SHA256       string
	Kind         ModelKind
	KindReason   string
	Layout       *kvcache.Layout // nil unless off-graph
	MaxCtxLen    int
	PrefillChunk int
	VocabSize    int
	WeightBytes  int64
	WeightDTypes []string
	Params       int64
	Methods      []string
	Delegates    []string
	// Companion files next to the .pte; "" when missing.
	Tokenizer       string
	TokenizerConfig string
	HasChatTemplate bool
	ModelType       string
	// BuildCache is the model's cache-config builder (modelinfo's, with
	// the model's own limits); nil means kvcache.Build on Layout.
	BuildCache func(kvcache.Policy) (*kvcache.Config, error) `json:"-"`
}

// CacheConfig builds the cache config for policy with the one builder the
// engines use.
func (m *ModelInfo) CacheConfig(p kvcache.Policy) (*kvcache.Config, error) {
	if m.BuildCache != nil {
		return m.BuildCache(p)
	}
	if m.Layout == nil {
		return nil, fmt.Errorf("%s keeps its cache inside the program; its cache cannot be configured", m.Kind.Badge())
	}
	return kvcache.Build(*m.Layout, p)
}

// Name is the label the library shows: the file name, or the folder's name
// when the file is the usual model.pte.
func (m *ModelInfo) Name() string { return ModelName(m.Path) }

// ModelName is the display name of a model path.
func ModelName(path string) string {
	base := filepath.Base(path)
	if strings.EqualFold(base, "model.pte") {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// Inspector reads a .pte file's metadata.
type Inspector interface {
	Inspect(ctx context.Context, path string) (*ModelInfo, error)
}

// LibraryStore persists the model library.
type LibraryStore interface {
	// SaveModel records path (and what was read of it) in the library.
	SaveModel(ctx context.Context, path string, info *ModelInfo) error
	// ListModels returns the library's paths, oldest first.
	ListModels(ctx context.Context) ([]string, error)
	// RemoveModel forgets path. It never touches the file.
	RemoveModel(ctx context.Context, path string) error
}

// Message is one turn of a transcript as the chat view shows it.
type Message struct {
	Role   string // "system", "user" or "assistant"
	Text   string
	Tokens []int  // the ids this message occupies in the cache (template included)
	Stats  *Reply // assistant replies only
	// Partial marks a reply saved while it streamed that never finished
	// (etchat stopped mid-reply); Tokens are what it had generated.
	Partial bool
}

// Reply is one generation's measurements.
type Reply struct {
	PromptTokens    int
	GeneratedTokens int
	PrefillTokPerS  float64
	DecodeTokPerS   float64
	TTFT            time.Duration
	StopReason      string
	// ExecuTorch's runner stats (timestamps in Unix milliseconds), for the
	// stored run; zero when unknown (a restored message).
	stats.Stats
}

// Progress reports long work: loading a model or prefilling a prompt.
type Progress struct {
	Stage string // "loading", "prefill", "rebuilding"
	Done  int    // chunks (or steps) done
	Total int    // chunks in all; 0 when unknown
}

// Session is an open conversation with a loaded model.
type Session interface {
	// Send appends a user turn and generates a reply, streaming text.
	Send(ctx context.Context, text string, stream func(delta string)) (Reply, error)
	// Regenerate replaces the last reply with a new one.
	Regenerate(ctx context.Context, stream func(delta string)) (Reply, error)
	// EditLast replaces the last user message and generates a new reply.
	EditLast(ctx context.Context, text string, stream func(delta string)) (Reply, error)
	// UndoTurn removes the last user turn and its reply.
	UndoTurn(ctx context.Context) error
	// UndoTokens removes the last n tokens of the conversation.
	UndoTokens(ctx context.Context, n int) error
	// Reset empties the conversation (keeping the system prompt).
	Reset(ctx context.Context) error
	// Messages is the transcript as the cache holds it now.
	Messages() []Message
	// Partial is the transcript with the reply being generated as its last
	// message (Partial set), for saving while it streams: the turn's prompt
	// tokens and the reply's tokens so far. Call it only from a stream
	// callback; nil when there is no consistent picture to save.
	Partial() []Message
	// Position is the number of tokens in the cache; Capacity the most it
	// admits.
	Position() int
	Capacity() int
	// UndoInstant reports whether undoing the last turn rewinds the cache
	// in place (true) or has to re-prefill the history (false).
	UndoInstant() bool
	// Engine names the engine that runs the session.
	Engine() string
	Close() error
}

// Opener loads a model and starts (or restores) a conversation on it.
// history, when not empty, is a stored transcript to continue: the session
// rebuilds its cache from the messages' token ids.
type Opener interface {
	Open(ctx context.Context, info *ModelInfo, s Settings, history []Message, progress func(Progress)) (Session, error)
}

// ConversationSummary is one row of the conversation list.
type ConversationSummary struct {
	ID        int64
	ModelPath string
	Title     string
	Updated   time.Time
}

// ChatStore persists conversations.
type ChatStore interface {
	ListConversations(ctx context.Context, modelPath string) ([]ConversationSummary, error)
	CreateConversation(ctx context.Context, modelPath, title string, s Settings) (int64, error)
	// SaveTranscript makes msgs the conversation's current path (earlier
	// branches stay in the store).
	SaveTranscript(ctx context.Context, id int64, msgs []Message) error
	SaveSettings(ctx context.Context, id int64, s Settings) error
	// RecordRun stores a reply's measurements as a chat run (the
	// Benchmarks tab lists them).
	RecordRun(ctx context.Context, id int64, model *ModelInfo, engine string, s Settings, r Reply) error
	LoadConversation(ctx context.Context, id int64) (ConversationSummary, Settings, []Message, error)
	DeleteConversation(ctx context.Context, id int64) error
}

// RunRow is one stored run for the Benchmarks table.
type RunRow struct {
	ID           int64
	Kind         string
	Model        string
	SHA256       string
	Engine       string
	Started      time.Time
	PromptTokens int
	GenTokens    int
	PrefillTokS  float64
	DecodeTokS   float64
	TTFT         time.Duration
	Error        string
}

// RunStore lists stored runs.
type RunStore interface {
	ListRuns(ctx context.Context, limit int) ([]RunRow, error)
}

// Backend is everything the app needs from below; New wires the real one.
type Backend struct {
	Inspector Inspector
	Library   LibraryStore
	Chats     ChatStore
	Runs      RunStore
	Opener    Opener
	// DB is the open database (nil when StoreErr is set), for views that
	// use the store directly (app/benchmarks).
	DB *store.DB
	// DBPath is shown in the preferences and the about box.
	DBPath string
	// StoreErr, when set, is why the database could not be opened; the app
	// runs without persistence and says so.
	StoreErr error
}
