package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"etchat/app/advice"
	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/internal/runlog"
	"etchat/store"
)

// ChatState is everything the chat view draws, copied out of the
// view-model at one instant.
type ChatState struct {
	Model         *ModelInfo
	Conversations []ConversationSummary
	ConvID        int64 // 0: none open
	Title         string
	Settings      Settings
	Messages      []Message // the committed transcript
	Branches      []Branch  // per message: its place among its alternatives (may be shorter)
	PendingUser   string    // the user text of the turn being generated
	Streaming     string    // the reply so far, while generating
	Busy          bool
	Activity      string   // what the busy work is: "Loading model…", "Generating…"
	Progress      Progress // loading / prefill chunks, decode tokens; Total 0 = indeterminate
	Position      int      // tokens in the cache, or that it is filling with while a reply streams
	Capacity      int
	UndoInstant   bool
	Engine        EngineInfo
	Loaded        bool // a session is open
	Err           string
	// Warming: the reopened conversation's history is being read into the
	// cache in the background (Progress says how far; Position grows with
	// it). Unlike Busy, actions are allowed: they stop it.
	Warming bool
	// Stored is the tokens of a history kept as text, not in the cache
	// (a reopened conversation that fills the cache: its next token cannot
	// fit, so it is not read in); 0 when the cache holds the conversation.
	Stored int
	// Draft is the message box's text as the view-model knows it, and
	// DraftNote its token count and the room the reply would have then
	// ("12 tokens · 83 left").
	Draft, DraftNote string
	// Restore is text to put back into the message box (a send that got
	// no reply); RestoreSeq counts such requests so each is applied once.
	Restore    string
	RestoreSeq int
	// Redo is how many undos Redo can bring back.
	Redo int
	// Live numbers and Continue (chat_continue.go): the streaming reply's
	// stats line, a few times a second; whether the last reply stopped
	// before its turn ended (see CanContinue).
	LiveStats   string
	Continuable bool
}

// Meter is the context meter's text: "37 / 128 tokens · undo is instant".
func (s ChatState) Meter() string {
	switch {
	case !s.Loaded && s.Busy:
		return "loading the model…"
	case !s.Loaded && s.Model == nil:
		return "no model chosen"
	case !s.Loaded:
		return "no conversation open: the model loads when you send"
	case s.Busy && s.Streaming != "":
		return fmt.Sprintf("%d / %d tokens · generating", s.Position, s.Capacity)
	case s.Warming:
		return fmt.Sprintf("%d / %d tokens · reading the history (%d)", s.Position, s.Capacity, s.Progress.Total)
	case s.Full():
		return fmt.Sprintf("%d / %d tokens · full: undo a turn, or raise the capacity in Settings", s.shown(), s.Capacity)
	case !s.CanUndo():
		return fmt.Sprintf("%d / %d tokens · nothing to undo yet", s.shown(), s.Capacity)
	}
	undo := "undo re-prefills the history"
	if s.UndoInstant {
		undo = "undo is instant"
	}
	return fmt.Sprintf("%d / %d tokens · %s", s.shown(), s.Capacity, undo)
}

// shown is the count the meter shows: what the conversation holds, or,
// while the cache fills (a warm, a prompt read), how far it has.
func (s ChatState) shown() int {
	if s.Busy || s.Warming {
		return s.Position
	}
	return s.Held()
}

// Full reports whether the conversation leaves no room for another token:
// every send fails until a turn is undone or the capacity raised.
func (s ChatState) Full() bool {
	return s.Loaded && !s.Busy && s.Capacity > 0 && s.Held() >= s.Capacity
}

// MeterFraction is the meter's count over Capacity, in 0..1.
func (s ChatState) MeterFraction() float64 {
	if s.Capacity <= 0 {
		return 0
	}
	return min(1, float64(s.shown())/float64(s.Capacity))
}

// CanUndo reports whether there is a turn to undo.
func (s ChatState) CanUndo() bool { return !s.Busy && s.Loaded && lastUser(s.Messages) >= 0 }

// CanUndoTokens reports whether there are tokens to take back.
// A history kept as text has none in the cache to take back: undo a turn.
func (s ChatState) CanUndoTokens() bool { return !s.Busy && s.Loaded && s.Stored == 0 && s.Held() > 0 }

// Held is the tokens the conversation holds: while its history is being
// read into the cache, all of them, not only those read so far.
func (s ChatState) Held() int {
	if s.Warming {
		return max(s.Position, s.Progress.Total)
	}
	return max(s.Position, s.Stored)
}

// CanRedo reports whether Redo would bring back something undone.
func (s ChatState) CanRedo() bool { return !s.Busy && s.Loaded && s.Redo > 0 }

// CanRegenerate reports whether there is a reply to regenerate.
func (s ChatState) CanRegenerate() bool {
	return !s.Busy && s.Loaded && slices.ContainsFunc(s.Messages, func(m Message) bool { return m.Role == "assistant" })
}

// CanReset reports whether there is anything to reset.
func (s ChatState) CanReset() bool {
	return !s.Busy && s.Loaded && slices.ContainsFunc(s.Messages, func(m Message) bool { return m.Role != "system" })
}

// Greedy reports whether the conversation samples greedily.
func (s ChatState) Greedy() bool { return s.Settings.Temperature == 0 }

// BranchOf is message i's place among its alternatives.
func (s ChatState) BranchOf(i int) Branch {
	if i < len(s.Branches) {
		return s.Branches[i]
	}
	return Branch{}
}

// CanEditLast reports whether there is a user message to edit.
func (s ChatState) CanEditLast() bool { return lastUser(s.Messages) >= 0 }

// LastUserText is the text of the last user message ("" if none).
func (s ChatState) LastUserText() string {
	if i := lastUser(s.Messages); i >= 0 {
		return s.Messages[i].Text
	}
	return ""
}

func lastUser(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return i
		}
	}
	return -1
}

// StatsLine is a reply's measurements as the transcript shows them. The
// prompt tokens are those the turn read anew (the history already in the
// cache is not read again).
func StatsLine(r *inference.Stats, stop string) string {
	if r == nil {
		return ""
	}
	s := fmt.Sprintf("prefill %.1f tok/s · decode %.1f tok/s · TTFT %d ms · %d new prompt + %d generated tokens",
		r.PrefillRate, r.DecodeRate, int64(r.TTFTSeconds*1000), r.NumPromptTokens, r.NumGeneratedTokens)
	if stop != "" {
		s += " · " + stop
	}
	return s
}

// IncompleteNote is what the transcript says under a reply that etchat
// saved while it streamed and never finished.
func IncompleteNote() string {
	return "incomplete: etchat stopped before this reply finished · Regenerate (" + modKey() + "+R) redoes it, or just go on"
}

// MessageNote is the line under a message: a reply's measurements, or
// IncompleteNote.
func MessageNote(m Message) string {
	if IsPartial(m) {
		return IncompleteNote()
	}
	return StatsLine(m.Stats, m.StopReason)
}

// Chat is the chat view-model: the conversations of one model, the open
// session and the actions on it. Actions that load or generate run on their
// own goroutine and return at once; Wait blocks until the current one ends
// (tests use it). Only one runs at a time; Stop cancels it. OnChange is
// called after every change of ChatState, OnError with each failure (both
// from whichever goroutine made it).
type Chat struct {
	opener Opener
	store  ChatStore

	mu      sync.Mutex
	st      ChatState
	sess    Session
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	defEng  string
	stopped bool
	list    ListFilter // what the conversation list shows

	// partialEvery is how often a streaming reply is saved (so a crash
	// loses at most that much of it); now is the clock it is measured by.
	partialEvery time.Duration
	now          func() time.Time
	// live is the session while an action generates on it, for the
	// progress callback's meter.
	live Session
	// warm reads a reopened conversation into the cache (chat_warm.go).
	warm *warmRun
	// restored is the stored history the open conversation was reopened
	// with (nil for a new one): the tokens of a history kept as text.
	restored []Message
	// seen is the store's revision of the open conversation as this
	// window last read or wrote it; every write carries it (Revision).
	seen Revision
	// redo holds the transcripts undo took back, the latest last: Redo
	// brings the last one back. In memory only, until the next send,
	// regeneration, edit or branch switch, or another window's change.
	redo [][]Message
	// liveStat measures the streaming reply's live numbers.
	liveStat liveStats
	// presets are the models' presets New starts from (presets.go).
	presets *Presets

	OnChange func()
	OnError  func(error)
}

// NewChat makes a chat view-model. store may be nil (nothing persists).
// engine is the default engine of new conversations.
func NewChat(opener Opener, store ChatStore, engine string) *Chat {
	c := &Chat{opener: opener, store: store, defEng: engine, partialEvery: PartialSaveInterval, now: time.Now, presets: presetsOf(store)}
	c.st.Settings = DefaultSettings(engine)
	return c
}

// PartialSaveInterval is how often a reply is saved while it streams.
const PartialSaveInterval = 500 * time.Millisecond

// SetDefaultEngine changes the engine new conversations start with.
func (c *Chat) SetDefaultEngine(engine string) {
	c.mu.Lock()
	c.defEng = engine
	c.mu.Unlock()
}

// State returns a copy of the state.
func (c *Chat) State() ChatState {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Messages = append([]Message(nil), c.st.Messages...)
	s.Conversations = append([]ConversationSummary(nil), c.st.Conversations...)
	return s
}

func (c *Chat) changed() {
	if f := c.OnChange; f != nil {
		f()
	}
}

func (c *Chat) fail(err error) {
	c.mu.Lock()
	c.st.Err = err.Error()
	c.mu.Unlock()
	c.changed()
	if f := c.OnError; f != nil {
		f(err)
	}
}

// ErrBusy: an action was asked for while another one runs.
var ErrBusy = errors.New("etchat is still working on the previous action; wait for it or press Stop (Esc)")

// Wait blocks until the running action (if any) has finished.
func (c *Chat) Wait() { c.wg.Wait() }

// Stop cancels the running action: generation stops after the current
// token and keeps what was generated; a load is abandoned; reading a
// reopened history stops after its chunk.
func (c *Chat) Stop() {
	c.mu.Lock()
	c.cancelWarmLocked()
	if c.cancel != nil {
		c.cancel()
		c.stopped = true
	}
	c.mu.Unlock()
}

// start runs work on its own goroutine as the one running action. It
// returns ErrBusy when another runs.
func (c *Chat) start(activity string, work func(ctx context.Context) error) error {
	c.mu.Lock()
	if c.st.Busy {
		c.mu.Unlock()
		return ErrBusy
	}
	c.cancelWarmLocked() // the action waits for its chunk in progress
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.stopped = false
	c.st.Busy, c.st.Activity, c.st.Progress, c.st.Err = true, activity, Progress{}, ""
	c.wg.Add(1)
	c.mu.Unlock()
	c.changed()
	go func() {
		defer c.wg.Done()
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil { // an engine bug must not take the window down
					err = fmt.Errorf("internal error while %s: %v — the conversation may be inconsistent: start a new one, and please report this", strings.TrimSuffix(strings.ToLower(activity), "…"), r)
				}
			}()
			return work(ctx)
		}()
		c.mu.Lock()
		stopped := c.stopped
		cancel()
		c.cancel = nil
		c.st.Busy, c.st.Activity, c.st.Progress = false, "", Progress{}
		c.st.PendingUser, c.st.Streaming, c.st.LiveStats = "", "", ""
		c.refreshLocked()
		c.warmLocked() // a reopened history, or what an action left of it
		c.mu.Unlock()
		c.recountDraft()
		if err != nil && !(stopped && errors.Is(err, context.Canceled)) {
			c.fail(err)
			return
		}
		c.changed()
	}()
	return nil
}

// refreshLocked copies the session's view into the state.
func (c *Chat) refreshLocked() {
	if c.sess == nil {
		c.st.Loaded, c.st.Messages, c.st.Position, c.st.Capacity, c.st.Engine = false, nil, 0, 0, EngineInfo{}
		c.st.Stored, c.st.Continuable = 0, false
		return
	}
	c.st.Loaded = true
	c.st.Messages = c.sess.Messages()
	c.st.Position = c.sess.Position()
	c.st.Stored = keptAsText(c.sess, c.st.Messages, c.restored)
	c.st.Capacity = c.sess.Capacity()
	c.st.UndoInstant = c.sess.UndoInstant()
	c.st.Continuable = c.sess.CanContinue()
	c.st.Engine = c.sess.Engine()
}

// keptAsText is the tokens of the messages sess keeps as text, not in its
// cache (a reopened history the cache cannot take; the next send reads it
// again); 0 when the cache holds every message. While they are the
// restored messages it is their stored tokens, the count the meter showed
// before the conversation was closed (rendered again, a closed reply
// gains its turn end and the count can exceed the capacity); otherwise
// the history as the next send renders it.
func keptAsText(sess Session, msgs, restored []Message) int {
	if !slices.ContainsFunc(msgs, func(m Message) bool { return m.Role != "system" && len(m.IDs) == 0 && m.Text != "" }) {
		return 0
	}
	if n, ok := storedTokens(msgs, restored); ok {
		return n
	}
	added, total, ok := sess.DraftTokens("")
	if !ok {
		return 0
	}
	return total - added
}

// storedTokens is the stored tokens of msgs when they are restored's first
// messages, each with its stored tokens.
func storedTokens(msgs, restored []Message) (int, bool) {
	if len(msgs) > len(restored) {
		return 0, false
	}
	n := 0
	for i, m := range msgs {
		r := restored[i]
		if m.Role != r.Role || m.Text != r.Text || len(r.IDs) == 0 && m.Text != "" {
			return 0, false
		}
		n += len(r.IDs)
	}
	return n, true
}

func (c *Chat) progress(p Progress) {
	c.mu.Lock()
	c.st.Progress = p
	if c.live != nil && p.Stage == "prefill" {
		if _, n, ok := c.live.Pending(); ok {
			c.st.Position = n // what the cache fills with
		}
	}
	switch p.Stage {
	case "loading":
		c.st.Activity = "Loading model…"
	case "rebuilding":
		c.st.Activity = "Rebuilding the cache from the stored conversation…"
	case "prefill":
		c.st.Activity = "Reading the prompt…"
	case "decode":
		c.st.Activity = "Generating…"
	case "waiting": // the Serve switch's server is generating on the program (app/serve.go)
		c.st.Activity = "Waiting for the server's reply…"
	}
	c.mu.Unlock()
	c.changed()
}

// SetModel switches the chat to model (closing any open session) and lists
// its conversations. model nil clears the chat.
func (c *Chat) SetModel(ctx context.Context, model *ModelInfo) error {
	c.mu.Lock()
	if c.st.Busy {
		c.mu.Unlock()
		return ErrBusy
	}
	c.unloadLocked()
	c.st = ChatState{Model: model, Settings: c.presets.Defaults(ctx, model, c.defEng), Draft: c.st.Draft}
	c.mu.Unlock()
	err := c.ReloadConversations(ctx)
	c.changed()
	return err
}

func (c *Chat) closeLocked() {
	c.cancelWarmLocked() // Close waits for its chunk in progress
	if c.sess != nil {
		_ = c.sess.Close()
		c.sess = nil
	}
	c.refreshLocked()
}

// unloadLocked closes the session and what its engine keeps for reuse:
// the model is no longer wanted (another model, the window closing).
func (c *Chat) unloadLocked() {
	old := c.sess
	c.closeLocked()
	releaseIdle(old)
}

// replaceLocked makes next the open session, closing the old one; when the
// engine changes, what the old engine keeps for reuse is released too.
func (c *Chat) replaceLocked(next Session) {
	old := c.sess
	c.closeLocked()
	if old != nil && old.Engine().Name != next.Engine().Name {
		releaseIdle(old)
	}
	c.sess = next
	c.restored = nil
	c.setRedoLocked(nil)
}

// releaseIdle has s's engine close the sessions it parks for reuse (the
// native engine keeps the last one of each model and cache config, with
// its method and cache, until told).
func releaseIdle(s Session) {
	if r, ok := s.(interface{ CloseIdle() error }); ok {
		_ = r.CloseIdle()
	}
}

// Close releases the session.
func (c *Chat) Close() {
	c.Stop()
	c.Wait()
	c.mu.Lock()
	c.unloadLocked()
	c.mu.Unlock()
}

// ReloadConversations reads the model's conversation list from the store.
func (c *Chat) ReloadConversations(ctx context.Context) error {
	c.mu.Lock()
	model, f := c.st.Model, c.list
	c.mu.Unlock()
	if c.store == nil || (model == nil && !f.All) {
		return nil
	}
	list, err := c.listConversations(ctx, model, f) // conversations.go: the search and the All models switch
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.list == f { // a later filter's answer wins
		c.st.Conversations = list
	}
	c.mu.Unlock()
	c.changed()
	return nil
}

func (c *Chat) checkModel() (*ModelInfo, error) {
	c.mu.Lock()
	m := c.st.Model
	c.mu.Unlock()
	switch {
	case m == nil:
		return nil, errors.New("no model chosen: pick one in the Models tab (or add a .pte there) and press Chat")
	case m.Kind == modelinfo.Unsupported || m.Kind == modelinfo.Kind(""):
		reason := m.KindReason
		if reason == "" {
			reason = "etchat cannot run this file"
		}
		return nil, fmt.Errorf("%s cannot be opened: %s", ModelName(m.Path), reason)
	case m.Companion.Tokenizer == "":
		return nil, fmt.Errorf("%s has no tokenizer: put its tokenizer.json (and tokenizer_config.json) next to the .pte, then Rescan in the Models tab", ModelName(m.Path))
	}
	return m, nil
}

// NewConversation starts a conversation with settings s (validated by the
// settings sheet) and loads the model.
func (c *Chat) NewConversation(s Settings) error {
	m, err := c.checkModel()
	if err != nil {
		return err
	}
	return c.start("Loading model…", func(ctx context.Context) error {
		_, err := c.newConversation(ctx, m, s)
		return err
	})
}

// newConversation loads the model and stores a new conversation (on the
// action's goroutine).
func (c *Chat) newConversation(ctx context.Context, m *ModelInfo, s Settings) (Session, error) {
	sess, err := c.opener.Open(ctx, m, s, nil, c.progress)
	if err != nil {
		return nil, loadError(m, s, err)
	}
	var id int64
	if c.store != nil {
		id, err = c.store.CreateConversation(ctx, m.Path, store.DefaultTitle, s)
		if err != nil {
			sess.Close()
			return nil, fmt.Errorf("the conversation could not be saved: %w", err)
		}
	}
	c.mu.Lock()
	c.replaceLocked(sess)
	c.st.ConvID, c.st.Title, c.st.Settings = id, store.DefaultTitle, s
	c.seen = Revision{} // a new conversation: no message, revision 0
	c.mu.Unlock()
	return sess, c.ReloadConversations(ctx)
}

// OpenConversation reopens a stored conversation: the model is loaded and
// the cache rebuilt from the stored token ids.
func (c *Chat) OpenConversation(id int64) error {
	m, err := c.checkModel()
	if err != nil {
		return err
	}
	if c.store == nil {
		return errors.New("conversations cannot be reopened: the database is not open")
	}
	return c.start("Loading model…", func(ctx context.Context) error {
		sum, s, msgs, err := c.store.LoadConversation(ctx, id)
		if err != nil {
			return fmt.Errorf("could not read the conversation: %w", err)
		}
		sess, err := c.opener.Open(ctx, m, s, msgs, c.progress)
		if err != nil {
			return loadError(m, s, err)
		}
		c.mu.Lock()
		c.replaceLocked(sess)
		c.restored = msgs
		c.st.ConvID, c.st.Title, c.st.Settings = id, sum.Title, s
		c.seen = sum.Seen
		c.mu.Unlock()
		c.loadBranches(ctx, id)
		return nil
	})
}

// ApplySettings changes the open conversation's settings: the model is
// reloaded with them and the history re-prefilled into the new cache.
func (c *Chat) ApplySettings(s Settings) error {
	m, err := c.checkModel()
	if err != nil {
		return err
	}
	c.mu.Lock()
	sess, id, stored, restored := c.sess, c.st.ConvID, c.st.Stored, c.restored
	c.mu.Unlock()
	if sess == nil {
		c.mu.Lock()
		c.st.Settings = s
		c.mu.Unlock()
		c.changed()
		return nil
	}
	return c.start("Loading model…", func(ctx context.Context) error {
		history := sess.Messages()
		if _, ok := storedTokens(history, restored); ok && stored > 0 {
			// Kept as text, the messages have no tokens: the new cache
			// reads the stored ones, as when the conversation was opened.
			history = restored[:len(history)]
		}
		holds := max(held(sess), stored) // a full history kept as text holds its tokens too
		next, err := c.opener.Open(ctx, m, s, history, c.progress)
		if err != nil {
			return loadError(m, s, err) // the old session stays open
		}
		if got := held(next); got < holds {
			// The new cache did not take the history (it resumes empty and
			// every send would fail): keep the old session.
			next.Close()
			return &CapacityTooSmallError{Holds: holds, Capacity: next.Capacity()}
		}
		if c.store != nil && id != 0 {
			if err := c.store.SaveSettings(ctx, id, s); err != nil {
				next.Close()
				return fmt.Errorf("the settings could not be saved: %w", err)
			}
		}
		c.mu.Lock()
		restored := c.restored // the same conversation
		c.replaceLocked(next)
		c.restored = restored
		c.st.Settings = s
		c.mu.Unlock()
		return nil
	})
}

// CapacityTooSmallError: settings whose cache cannot hold the open
// conversation were refused; the old session stays.
type CapacityTooSmallError struct{ Holds, Capacity int }

func (e *CapacityTooSmallError) Error() string {
	return fmt.Sprintf("the settings were not applied: a capacity of %d cannot hold this conversation's %d tokens — set the capacity to at least %d, or undo turns first",
		e.Capacity, e.Holds, e.Holds+1)
}

// LoadError: the model did not load for a conversation. The red line
// under the meter says it, once (no dialog on top); a message being sent
// goes back into the box.
type LoadError struct {
	Model, Engine string // the model's display name, the engine asked for
	Err           error
	Next          string // what to do
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("could not load %s on the %s engine: %v — %s", e.Model, e.Engine, e.Err, e.Next)
}

func (e *LoadError) Unwrap() error { return e.Err }

// loadError says what to do about a model that did not load, from the
// loader's typed errors.
func loadError(m *ModelInfo, s Settings, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	next := advice.For(err, "the settings sheet")
	if next == "" {
		next = "check the settings sheet, or pick another engine"
	}
	return &LoadError{Model: ModelName(m.Path), Engine: s.Engine, Err: err, Next: next}
}

// session returns the open session or an error saying what to do.
func (c *Chat) session() (Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return nil, errors.New("no conversation is open: press New conversation or pick one from the list")
	}
	return c.sess, nil
}

// generate runs one generating action with streaming into the state.
// With startNew, a conversation is started first (Send with none open).
//
// pendingUser is the text of the user turn being answered ("" for a
// regeneration): it goes back into the message box when the turn cannot
// be made (the model does not load, another window changed the
// conversation meanwhile).
func (c *Chat) generate(pendingUser string, startNew bool, do func(ctx context.Context, sess Session, stream func(string)) (*Reply, error)) error {
	var sess Session
	var model *ModelInfo
	var set Settings
	if startNew {
		m, err := c.checkModel()
		if err != nil {
			return err
		}
		c.mu.Lock()
		model, set = m, c.st.Settings
		c.mu.Unlock()
	} else {
		var err error
		if sess, err = c.session(); err != nil {
			return err
		}
	}
	activity := "Reading the prompt…"
	if startNew {
		activity = "Loading model…"
	}
	return c.start(activity, func(ctx context.Context) error {
		if startNew {
			var err error
			if sess, err = c.newConversation(ctx, model, set); err != nil {
				if pendingUser != "" {
					c.restore(pendingUser) // nothing typed is lost
				}
				return err
			}
		}
		c.mu.Lock()
		c.setRedoLocked(nil) // a new turn: what was undone stays undone
		c.st.PendingUser = pendingUser
		c.st.Loaded, c.st.Capacity = true, sess.Capacity()
		id, budget := c.st.ConvID, c.st.Settings.MaxNewTokens
		c.live = sess
		c.liveStat = liveStats{}
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.live = nil
			c.mu.Unlock()
		}()
		reply, err := do(ctx, sess, c.streamer(ctx, sess, id, budget))
		if err != nil {
			err = c.explainTurn(err)
		}
		bg := context.WithoutCancel(ctx)
		serr := c.save(bg, sess, false)
		if isStale(serr) {
			return c.rebase(bg, sess, id, pendingUser, serr)
		}
		if serr != nil && err == nil {
			err = serr
		}
		if reply != nil && reply.Result != nil && reply.Stats.NumGeneratedTokens > 0 && c.store != nil {
			c.mu.Lock()
			id, model, set := c.st.ConvID, c.st.Model, c.st.Settings
			c.mu.Unlock()
			set.Numerics = sess.Engine().Numerics // the mode that ran ("" = exact)
			if rerr := c.store.RecordRun(bg, id, model, sess.Engine().Name, set, reply.Stats); rerr != nil && err == nil {
				err = fmt.Errorf("the reply's measurements could not be saved: %w", rerr)
			}
		}
		return err
	})
}

// streamer is the stream callback of a generation on sess into
// conversation id: the reply so far into the state, the meter and the bar
// following it. The reply in progress is saved at its first token and then
// at most every partialEvery, so a crash loses at most that much of it. A
// failed save here is not fatal: the final save reports. A save refused as
// stale (another window extended the conversation first) stops the
// generation: its turn cannot be stored.
func (c *Chat) streamer(ctx context.Context, sess Session, id int64, budget int) func(string) {
	var lastSave time.Time
	stale := false
	return func(delta string) {
		msgs, n, ok := sess.Pending()
		now := c.now() // one reading per streamed piece, for the live numbers and the saves
		c.mu.Lock()
		c.st.Streaming += delta
		c.st.Activity = "Generating…"
		if ok {
			c.st.Position = n
			gen := len(msgs[len(msgs)-1].IDs)
			c.st.Progress = Progress{Stage: "decode", Done: gen, Total: max(budget, gen)}
			c.liveLocked(gen, now)
		}
		c.mu.Unlock()
		c.changed()
		if c.store == nil || id == 0 || !ok || stale {
			return
		}
		if lastSave.IsZero() || now.Sub(lastSave) >= c.partialEvery {
			if err := c.write(context.WithoutCancel(ctx), id, false, msgs); isStale(err) {
				stale = true
				c.cancelAction()
			}
			lastSave = now
		}
	}
}

// save writes the transcript, naming the conversation after its first
// user message; with discard, what it took back is deleted (an undo).
func (c *Chat) save(ctx context.Context, sess Session, discard bool) error {
	c.mu.Lock()
	id, title := c.st.ConvID, c.st.Title
	c.mu.Unlock()
	if c.store == nil || id == 0 {
		return nil
	}
	msgs := sess.Messages()
	if err := c.write(ctx, id, discard, msgs); err != nil {
		return fmt.Errorf("the conversation could not be saved: %w", err)
	}
	if title == store.DefaultTitle {
		if i := firstUser(msgs); i >= 0 {
			c.mu.Lock()
			c.st.Title = Title(msgs[i].Text)
			c.mu.Unlock()
		}
	}
	c.loadBranches(ctx, id)
	return c.ReloadConversations(ctx)
}

// loadBranches reads where each message stands among its alternatives.
func (c *Chat) loadBranches(ctx context.Context, id int64) {
	if c.store == nil || id == 0 {
		return
	}
	br, err := c.store.Branches(ctx, id)
	if err != nil {
		br = nil // the arrows are not shown; the chat goes on
	}
	c.mu.Lock()
	if c.st.ConvID == id {
		c.st.Branches = br
	}
	c.mu.Unlock()
}

func firstUser(msgs []Message) int {
	for i, m := range msgs {
		if m.Role == "user" {
			return i
		}
	}
	return -1
}

// Title shortens a first message to a conversation title.
func Title(text string) string { return runlog.ShortTitle(text) }

// Send sends text as the next user turn and streams the reply. With no
// conversation open it starts one (with the chat's current settings).
func (c *Chat) Send(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("type a message first")
	}
	c.mu.Lock()
	startNew := c.sess == nil && c.st.Model != nil
	c.st.Draft, c.st.DraftNote = "", ""
	c.mu.Unlock()
	err := c.generate(text, startNew, func(ctx context.Context, s Session, stream func(string)) (*Reply, error) {
		r, err := s.Send(ctx, text, stream)
		if err != nil && (r == nil || r.Result == nil || r.Stats.NumGeneratedTokens == 0) {
			c.restore(text) // no reply: the text goes back into the box
		}
		return r, err
	})
	if err != nil {
		c.restore(text)
	}
	return err
}

// restore asks the view to put text back into the message box.
func (c *Chat) restore(text string) {
	c.mu.Lock()
	c.st.Restore, c.st.Draft = text, text
	c.st.RestoreSeq++
	c.mu.Unlock()
	c.changed()
}

// advisedError is err said once, with what to do: the cause's own text
// repeated the same numbers in other words.
type advisedError struct {
	msg string
	err error
}

func (e *advisedError) Error() string { return e.msg }
func (e *advisedError) Unwrap() error { return e.err }

// explainTurn says what to do about a turn that failed.
func (c *Chat) explainTurn(err error) error {
	var long *inference.PromptTooLongError
	if errors.As(err, &long) {
		c.mu.Lock()
		m, held := c.st.Model, max(c.st.Position, c.st.Stored) // as the turn found it: a prompt too long is not read
		c.mu.Unlock()
		if long.Alone+1 > long.Capacity {
			more := "raise the capacity in the conversation settings"
			if m != nil && m.MaxCtxLen > 0 && long.Capacity >= m.MaxCtxLen {
				more = fmt.Sprintf("this model reads at most %d tokens", m.MaxCtxLen)
			}
			return &advisedError{fmt.Sprintf("your message alone is %d tokens, and this conversation holds %d: shorten it (%s); your text is back in the message box",
				long.Alone, long.Capacity, more), err}
		}
		if held >= long.Capacity {
			// What the meter says: the history alone leaves no room.
			more := fmt.Sprintf("raise the capacity in Settings to at least %d", long.Tokens+1)
			if m != nil && m.MaxCtxLen > 0 && long.Tokens+1 > m.MaxCtxLen {
				more = fmt.Sprintf("start a new conversation (this model reads at most %d tokens)", m.MaxCtxLen)
			}
			return &advisedError{fmt.Sprintf("this conversation is full (%d of %d tokens): undo a turn, or %s; your text is back in the message box",
				held, long.Capacity, more), err}
		}
		return &advisedError{fmt.Sprintf("with the history, this turn would be %d tokens, and the conversation holds %d: undo earlier turns, reset, or start a new conversation; your text is back in the message box",
			long.Tokens, long.Capacity), err}
	}
	return err
}

// SetDraft records the message box's text and counts its tokens against
// the room left.
func (c *Chat) SetDraft(text string) {
	note := c.countDraft(text)
	c.mu.Lock()
	changed := c.st.Draft != text || c.st.DraftNote != note
	c.st.Draft, c.st.DraftNote = text, note
	c.mu.Unlock()
	if changed {
		c.changed()
	}
}

// recountDraft counts the message box's text again once whatever held the
// session (an action, a warm) has let it go, so the note is not left at
// the count from before, or at none.
func (c *Chat) recountDraft() {
	c.mu.Lock()
	text := c.st.Draft
	c.mu.Unlock()
	note := c.countDraft(text)
	c.mu.Lock()
	changed := c.st.Draft == text && c.st.DraftNote != note // the box may have changed meanwhile: its own count stands
	if changed {
		c.st.DraftNote = note
	}
	c.mu.Unlock()
	if changed {
		c.changed()
	}
}

// countDraft is the draft note for text: its tokens and the room left.
func (c *Chat) countDraft(text string) string {
	c.mu.Lock()
	sess, capacity := c.sess, c.st.Capacity
	c.mu.Unlock()
	if sess == nil || strings.TrimSpace(text) == "" {
		return ""
	}
	added, total, ok := sess.DraftTokens(text)
	switch {
	case !ok:
		// Busy: keep the last count while the text is the one it counted;
		// the count is made again when the session is free.
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.st.Draft == text {
			return c.st.DraftNote
		}
		return "counted when the chat is free"
	case total+1 > capacity:
		return fmt.Sprintf("%d tokens · too long: %d of %d", added, total, capacity)
	}
	return fmt.Sprintf("%d tokens · %d left", added, capacity-total)
}

// SetGreedy switches the open conversation (and new ones) between greedy
// decoding and the model's sampling defaults, without reloading.
func (c *Chat) SetGreedy(on bool) error {
	c.mu.Lock()
	if c.st.Busy {
		c.mu.Unlock()
		return ErrBusy
	}
	s, model, sess, id := c.st.Settings, c.st.Model, c.sess, c.st.ConvID
	c.mu.Unlock()
	if on {
		s.Temperature, s.TopK, s.TopP = 0, 0, 1
	} else {
		d := c.presets.Defaults(context.Background(), model, s.Engine) // the preset's sampling, else the model's
		s.Temperature, s.TopK, s.TopP = d.Temperature, d.TopK, d.TopP
	}
	if sess != nil {
		c.mu.Lock()
		c.cancelWarmLocked() // SetSampling waits for its chunk in progress
		c.mu.Unlock()
		err := sess.SetSampling(s)
		c.mu.Lock()
		if c.sess == sess && !c.st.Busy {
			c.warmLocked() // goes on with the rest
		}
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.st.Settings = s
	c.mu.Unlock()
	if c.store != nil && id != 0 {
		if err := c.store.SaveSettings(context.Background(), id, s); err != nil {
			return fmt.Errorf("the settings could not be saved: %w", err)
		}
	}
	c.changed()
	return nil
}

// SwitchBranch shows message index's alternative step places away (−1 the
// previous, +1 the next) and continues from that branch; the cache keeps
// the prefix the two branches share.
func (c *Chat) SwitchBranch(index, step int) error {
	return c.switchVia(func(ctx context.Context, id int64, at Revision) ([]Message, Revision, error) {
		return c.store.SwitchBranch(ctx, id, at, index, step)
	})
}

// switchVia switches the open conversation to the branch move returns (a
// store switch at the revision this window saw).
func (c *Chat) switchVia(move func(ctx context.Context, id int64, at Revision) ([]Message, Revision, error)) error {
	sess, err := c.session()
	if err != nil {
		return err
	}
	if c.store == nil {
		return errors.New("branches are kept in the database, which is not open")
	}
	c.mu.Lock()
	id := c.st.ConvID
	c.mu.Unlock()
	return c.start("Switching branch…", func(ctx context.Context) error {
		c.mu.Lock()
		at := c.seen
		c.setRedoLocked(nil)
		c.mu.Unlock()
		msgs, rev, err := move(ctx, id, at)
		if isStale(err) {
			return c.rebase(ctx, sess, id, "", err)
		}
		if err != nil {
			return fmt.Errorf("could not switch branch: %w", err)
		}
		c.setSeen(id, rev)
		if err := sess.Switch(ctx, msgs); err != nil {
			return fmt.Errorf("could not switch branch: %w", err)
		}
		c.loadBranches(ctx, id)
		return nil
	})
}

// Regenerate replaces the last reply.
func (c *Chat) Regenerate() error {
	if !c.hasReply() {
		return errors.New("there is no reply to regenerate yet")
	}
	return c.generate("", false, func(ctx context.Context, s Session, stream func(string)) (*Reply, error) {
		return s.Regenerate(ctx, stream)
	})
}

func (c *Chat) hasReply() bool {
	st := c.State()
	for _, m := range st.Messages {
		if m.Role == "assistant" {
			return true
		}
	}
	return false
}

// EditLast replaces the last user message with text and generates anew.
// When no reply comes, the edited text goes into the message box.
func (c *Chat) EditLast(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("the edited message is empty")
	}
	if !c.State().CanEditLast() {
		return errors.New("there is no message to edit yet")
	}
	err := c.generate(text, false, func(ctx context.Context, s Session, stream func(string)) (*Reply, error) {
		r, err := s.EditLast(ctx, text, stream)
		if err != nil && (r == nil || r.Result == nil || r.Stats.NumGeneratedTokens == 0) {
			c.restore(text) // the edited text is not lost: it goes into the message box
		}
		return r, err
	})
	if err != nil {
		c.restore(text)
	}
	return err
}

// UndoTurn removes the last exchange.
func (c *Chat) UndoTurn() error {
	if !c.State().CanEditLast() {
		return errors.New("there is nothing to undo")
	}
	return c.edit("Undoing…", func(ctx context.Context, s Session) error { return s.UndoTurn(ctx) })
}

// UndoTokens removes the last n tokens.
func (c *Chat) UndoTokens(n int) error {
	if n <= 0 {
		return fmt.Errorf("undo %d tokens: give a positive number", n)
	}
	if pos := c.State().Held(); n > pos {
		return fmt.Errorf("cannot undo %d tokens: the conversation holds %d", n, pos)
	}
	return c.edit("Undoing…", func(ctx context.Context, s Session) error { return s.UndoTokens(ctx, n) })
}

// Reset empties the conversation.
func (c *Chat) Reset() error {
	return c.edit("Resetting…", func(ctx context.Context, s Session) error { return s.Reset(ctx) })
}

// edit runs an undo or a reset: what it takes back leaves the store
// (save with discard) and is kept in memory for Redo.
func (c *Chat) edit(activity string, do func(ctx context.Context, s Session) error) error {
	sess, err := c.session()
	if err != nil {
		return err
	}
	return c.start(activity, func(ctx context.Context) error {
		before := sess.Messages()
		err := do(ctx, sess)
		if after := sess.Messages(); !sameTranscript(before, after) {
			c.mu.Lock()
			c.setRedoLocked(append(c.redo, before))
			c.mu.Unlock()
		}
		bg := context.WithoutCancel(ctx)
		serr := c.save(bg, sess, true)
		if isStale(serr) {
			return c.rebase(bg, sess, c.State().ConvID, "", serr)
		}
		if serr != nil && err == nil {
			err = serr
		}
		return err
	})
}

// DeleteConversation removes a stored conversation (closing it if open).
func (c *Chat) DeleteConversation(ctx context.Context, id int64) error {
	if c.store == nil {
		return nil
	}
	c.mu.Lock()
	if c.st.Busy {
		c.mu.Unlock()
		return ErrBusy
	}
	if c.st.ConvID == id {
		c.closeLocked()
		c.st.ConvID, c.st.Title = 0, ""
	}
	c.mu.Unlock()
	if err := c.store.DeleteConversation(ctx, id); err != nil {
		return fmt.Errorf("could not delete the conversation: %w", err)
	}
	return c.ReloadConversations(ctx)
}
