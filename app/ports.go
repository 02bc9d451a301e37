package app

import (
	"context"
	"fmt"
	"time"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/modelinfo"
	"etchat/internal/runlog"
	"etchat/store"
)

// This file names what the view-models need from the packages below the app
// (model inspection, the conversation type, the store). The view-models talk
// only to these small interfaces; backend.go adapts the real packages to
// them, so the screen logic reads the same whichever engine or database sits
// underneath.

// ModelInfo is what the library shows about one .pte: modelinfo's answer
// itself (kind, cache layout, limits, weights and quantization,
// companions), so the app has no copy of it to drift.
type ModelInfo = modelinfo.Info

// kindBadge is the library's short label of a kind.
func kindBadge(k modelinfo.Kind) string { return runlog.KindLabel(k) }

// ModelName is the display name of a model path.
func ModelName(path string) string { return modelinfo.DisplayName(path) }

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

// Message is one turn of a transcript: the conversation's own type (role,
// text, the token ids it holds in the cache, a reply's stop reason and
// stats), so the app keeps no copy of it.
type Message = inference.Message

// Reply is one generation's outcome (the new message, stats, stop reason).
type Reply = inference.Reply

// StopIncomplete is the stop reason of a reply that etchat saved while it
// streamed and never finished (stored with the partial flag).
const StopIncomplete = runlog.StopIncomplete

// IsPartial reports whether m is such a reply.
func IsPartial(m Message) bool { return runlog.IsPartial(m) }

// Progress reports long work: loading a model or prefilling a prompt.
type Progress struct {
	Stage string // "loading", "prefill", "rebuilding"
	Done  int    // chunks (or steps) done
	Total int    // chunks in all; 0 when unknown
}

// Session is an open conversation with a loaded model. The transcript it
// returns is what the cache holds: each message's Tokens are its tokens in
// the cache, in order, and a reply's text is its tokens decoded.
type Session interface {
	// Send appends a user turn and generates a reply, streaming text. When
	// no reply comes (an error before the first token, Stop while reading
	// the prompt) the turn is taken back whole.
	Send(ctx context.Context, text string, stream func(delta string)) (*Reply, error)
	// Regenerate replaces the last reply with a new one.
	Regenerate(ctx context.Context, stream func(delta string)) (*Reply, error)
	// EditLast replaces the last user message and generates a new reply.
	EditLast(ctx context.Context, text string, stream func(delta string)) (*Reply, error)
	// Continue generates more of the last reply, which stopped before its
	// turn ended, appending to it; CanContinue says whether that applies.
	Continue(ctx context.Context, stream func(delta string)) (*Reply, error)
	CanContinue() bool
	// SetSystem replaces the system prompt: the cache is emptied, the
	// messages stay and the next turn reads them again.
	SetSystem(ctx context.Context, text string) error
	// UndoTurn removes the last user turn and its reply.
	UndoTurn(ctx context.Context) error
	// UndoTokens removes the last n tokens shown (or the whole user turn
	// they reach into).
	UndoTokens(ctx context.Context, n int) error
	// Reset empties the conversation (keeping the system prompt).
	Reset(ctx context.Context) error
	// Switch makes msgs (another branch, as the store holds it) the
	// conversation; the cache keeps the prefix they share.
	Switch(ctx context.Context, msgs []Message) error
	// SetSampling changes temperature, top-k, top-p, seed and the reply
	// budget without reloading.
	SetSampling(s Settings) error
	// DraftTokens is how many tokens sending text would add and the
	// prompt's length then; ok is false while an action runs.
	DraftTokens(text string) (added, total int, ok bool)
	// Messages is the transcript as the cache holds it now.
	Messages() []Message
	// Pending is the transcript with the reply being generated as its last
	// message (IsPartial) and the tokens that makes. Call it only from a
	// stream or progress callback; ok is false between turns.
	Pending() (msgs []Message, tokens int, ok bool)
	// Position is the number of tokens in the cache; Capacity the most it
	// admits.
	Position() int
	Capacity() int
	// UndoInstant reports whether undoing the last turn rewinds the cache
	// in place (true) or has to re-prefill the history (false).
	UndoInstant() bool
	// Engine says which engine runs the session, on what, and why.
	Engine() EngineInfo
	Close() error
}

// EngineInfo is the engine a session runs on: its name, its device, and
// why it was chosen (Fallback: auto wanted the native engine and fell back
// to the CPU engine, Reason says why).
type EngineInfo struct {
	Name, Device, Reason string
	Fallback             bool
	Numerics             string // the CPU engine's mode: "fast", or "" for exact
}

// String is the chat header's engine part: "cpu on cpu".
func (e EngineInfo) String() string {
	if e.Name == "" {
		return ""
	}
	if e.Numerics == engine.NumericsFast {
		return e.Name + " on " + e.Device + ", numerics fast"
	}
	return e.Name + " on " + e.Device
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
	// ModelName is the model's name as the conversation recorded it (it
	// outlives the model's place in the library); Snippet, from a search,
	// is an excerpt of the message text that matched.
	ModelName, Snippet string
	// Seen is the revision LoadConversation read the transcript at: the
	// view-model's writes carry it (Revision).
	Seen Revision
	// Pinned conversations list first (conversations_backup.go).
	Pinned bool
}

// Revision is where a window last saw a conversation (the store's
// revision and current leaf). Every write of the transcript carries it, and
// the store refuses one whose revision another window has moved past
// (*store.StaleError) instead of storing a turn twice.
type Revision = store.Revision

// ChatStore persists conversations.
type ChatStore interface {
	ListConversations(ctx context.Context, modelPath string) ([]ConversationSummary, error)
	CreateConversation(ctx context.Context, modelPath, title string, s Settings) (int64, error)
	// SaveTranscript makes msgs the conversation's current path at
	// revision at (earlier branches stay in the store; with discard, what
	// the transcript took back is deleted) and returns the revision after
	// it. A stale at is refused (*store.StaleError) unless the write only
	// updates the window's own messages in place.
	SaveTranscript(ctx context.Context, id int64, at Revision, discard bool, msgs []Message) (Revision, error)
	SaveSettings(ctx context.Context, id int64, s Settings) error
	// RecordRun stores a reply's measurements as a chat run (the
	// Benchmarks tab lists them).
	RecordRun(ctx context.Context, id int64, model *ModelInfo, engine string, s Settings, st inference.Stats) error
	LoadConversation(ctx context.Context, id int64) (ConversationSummary, Settings, []Message, error)
	DeleteConversation(ctx context.Context, id int64) error
	// Branches says, for each message of the current path, where it stands
	// among its alternatives (regenerations, edits).
	Branches(ctx context.Context, id int64) ([]Branch, error)
	// SwitchBranch moves message index of the current path to its sibling
	// step places away (−1: the previous) and continues down that branch's
	// latest messages; it returns the new current path and revision. A
	// stale at is refused.
	SwitchBranch(ctx context.Context, id int64, at Revision, index, step int) ([]Message, Revision, error)
}

// Branch is a message's place among its alternatives: the K-th of N
// (1-based); N ≤ 1 when it has none.
type Branch struct{ K, N int }

// Label is "‹ 2/3 ›", or "" without alternatives.
func (b Branch) Label() string {
	if b.N <= 1 {
		return ""
	}
	return fmt.Sprintf("‹ %d/%d ›", b.K, b.N)
}

// Backend is everything the app needs from below; New wires the real one.
type Backend struct {
	Inspector Inspector
	Library   LibraryStore
	Chats     ChatStore
	Opener    Opener
	// DB is the open database (nil when StoreErr is set); the Benchmarks
	// tab's run history is served from it (benchstore.Runs).
	DB *store.DB
	// OpenEngine opens an engine by choice for benchmarks; nil: the
	// window's opener (engine registry, runner library preference).
	OpenEngine func(kind string) (engine.Engine, error)
	// DBPath is shown in the preferences and the about box.
	DBPath string
	// StoreErr, when set, is why the database could not be opened; the app
	// runs without persistence and says so.
	StoreErr error
}
