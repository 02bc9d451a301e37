// Conversation's types, construction, accessors and the helpers every file of it shares.

package inference

import (
	"errors"
	"fmt"

	"etchat/inference/chattmpl"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/sampler"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // a tool's result, sent back by a client (the server's tool calls)
)

// Message is one turn of a conversation, as plain values the store can
// persist and Resume can restore.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text"`
	// IDs are the tokens this message holds in the cache now, at positions
	// Start … Start+len(IDs)-1; the messages' IDs concatenated are the
	// cache. A user message holds the prompt tokens its turn prefilled
	// (template markup included, and any tail of the previous reply that
	// re-tokenized differently); a reply holds its generated tokens and the
	// committed turn end. A message whose tokens a later turn replaced holds
	// none.
	IDs   []int `json:"ids,omitempty"`
	Start int   `json:"start"`
	// Generated are a reply's tokens as sampled (stop token excluded).
	Generated []int `json:"generated,omitempty"`
	// StopReason, Capped and Stats describe how a reply was generated.
	StopReason string `json:"stop_reason,omitempty"`
	Capped     bool   `json:"capped,omitempty"`
	Stats      *Stats `json:"stats,omitempty"`

	// Tool calls (the server's tools, issue 39): an assistant message's
	// calls, and a tool message's answer to the call ToolCallID; the
	// chat template renders both.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one call to a tool (chattmpl's type: the template renders
// it and its parser reads it from a reply).
type ToolCall = chattmpl.ToolCall

// End is the cache position after the message's tokens.
func (m *Message) End() int { return m.Start + len(m.IDs) }

// Tokenizer is what a conversation needs of a tokenizer.
type Tokenizer interface {
	Decoder
	Encode(text string, addSpecial bool) ([]int, error)
}

// Template renders a conversation into prompt text.
type Template interface {
	Render(messages []Message, addGenerationPrompt bool) (string, error)
}

// ConversationOptions configure a conversation.
type ConversationOptions struct {
	Tokenizer Tokenizer
	// Template renders the conversation; nil is raw text (the runner's
	// --chat 0): the messages' texts concatenated and encoded with the
	// tokenizer's special tokens.
	Template Template
	// System, when not empty, opens the conversation as a system message.
	System string
	// Generation: budget, sampling, stop and turn-end ids, prefill chunk.
	// OnToken is ignored (each call takes its own).
	Generation Options
	// Cache, when set, lets the conversation predict rewinds for sessions
	// that cannot say themselves (see CanUndoInstantly).
	Cache *kvcache.Config
}

// Conversation is a chat with one engine session: the messages, the
// tokens in the cache and which message each belongs to, and the
// operations on them. Every turn re-renders the whole conversation, keeps
// the longest cached prefix that agrees with it, and prefills the rest.
// Undo always succeeds: when the cache refuses a rewind (a sliding-window
// cache has overwritten the cells), it is cleared and the kept tokens are
// prefilled again. The CLI's --interactive, the GUI chat and the tests all
// use it. Not safe for concurrent use.
type Conversation struct {
	sess    engine.Session
	tracked *trackedSession
	tok     Tokenizer
	tmpl    Template
	gen     Options
	sampler *sampler.Sampler
	msgs    []Message
	cache   []int
	// flight is the turn being answered (nil between turns), for Pending.
	flight *flight
}

// flight is a turn in progress: the prompt as rendered, which message owns
// each of its tokens, and the reply's tokens so far.
type flight struct {
	full, bounds []int
	gen          []int
	// prior is the reply's tokens before this turn (Continue), which the
	// reply in flight extends.
	prior []int
}

// NewConversation starts an empty conversation on sess; the session's
// cache is cleared.
func NewConversation(sess engine.Session, opts ConversationOptions) (*Conversation, error) {
	if sess == nil {
		return nil, errors.New("no session")
	}
	if opts.Tokenizer == nil {
		return nil, errors.New("no tokenizer")
	}
	c := &Conversation{tok: opts.Tokenizer, tmpl: opts.Template}
	c.tracked = newTracked(sess, opts.Cache)
	c.sess = c.tracked
	if err := c.SetGeneration(opts.Generation); err != nil {
		return nil, err
	}
	if sess.Len() > 0 {
		if err := c.sess.Clear(); err != nil {
			return nil, fmt.Errorf("clearing the session: %w", err)
		}
	}
	if opts.System != "" {
		c.msgs = append(c.msgs, Message{Role: RoleSystem, Text: opts.System})
	}
	return c, nil
}

// SetGeneration replaces the generation options (budget, sampling, stop
// set); a new sampler starts from opts.Sampling.
func (c *Conversation) SetGeneration(opts Options) error {
	s, err := sampler.New(opts.Sampling)
	if err != nil {
		return err
	}
	opts.Sampler, opts.OnToken = nil, nil
	c.gen, c.sampler = opts, s
	return nil
}

// Session is the engine session the conversation drives.
func (c *Conversation) Session() engine.Session { return c.tracked.Session }

// Messages returns a copy of the messages.
func (c *Conversation) Messages() []Message { return cloneMessages(c.msgs) }

// CacheIDs returns a copy of the tokens in the cache.
func (c *Conversation) CacheIDs() []int { return append([]int(nil), c.cache...) }

// Len is the number of tokens in the cache.
func (c *Conversation) Len() int { return len(c.cache) }

// Capacity is the cache's capacity.
func (c *Conversation) Capacity() int { return c.sess.Capacity() }

func (c *Conversation) lastUser() int {
	for i := len(c.msgs) - 1; i >= 0; i-- {
		if c.msgs[i].Role == RoleUser {
			return i
		}
	}
	return -1
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func cloneMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.IDs = append([]int(nil), m.IDs...)
		m.Generated = append([]int(nil), m.Generated...)
		if len(m.IDs) == 0 {
			m.IDs = nil
		}
		if len(m.Generated) == 0 {
			m.Generated = nil
		}
		if m.Stats != nil {
			st := *m.Stats
			m.Stats = &st
		}
		out[i] = m
	}
	return out
}
