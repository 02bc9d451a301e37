package inference

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"etchat/inference/engine"
	"etchat/inference/modelinfo"
)

// Warm reads a restored conversation's history into its cache after the
// conversation is already usable, so that opening one costs no wait and
// the first turn prefills only what is new. Resume prefills the whole
// history before it returns; ResumeCold returns at once with an empty
// cache and a Warm that does the prefill, a chunk at a time, typically on
// another goroutine while nothing else uses the conversation.
//
// Between chunks the conversation is consistent (its messages own exactly
// the tokens the cache holds, as after an undo), so a warm stopped
// half-way needs no repair: the next turn re-renders the conversation and
// prefills whatever the cache is missing, as it always does.
type Warm struct {
	c      *Conversation
	msgs   []Message // the history as restored, with its stored tokens
	ids    []int     // their tokens, in order
	bounds []int     // bounds[i]: the end of message i's tokens in ids
}

// ResumeCold restores a stored conversation as Resume does, but prefills
// nothing: the cache starts empty and the returned Warm reads the
// history into it. Until it has, the conversation behaves as one whose
// messages are kept as text (the next turn prefills them). msgs is not
// changed.
func ResumeCold(sess engine.Session, opts ConversationOptions, msgs []Message) (*Conversation, *Warm, error) {
	opts.System = ""
	c, err := NewConversation(sess, opts)
	if err != nil {
		return nil, nil, err
	}
	ids, err := historyIDs(sess, msgs)
	if err != nil {
		return nil, nil, err
	}
	c.msgs = cloneMessages(msgs)
	w := &Warm{c: c}
	// A history the cache cannot take is kept as text, as Resume does.
	if len(ids) > 0 && sess.CanExtend(len(ids)+1) {
		w.msgs, w.ids = cloneMessages(msgs), ids
		w.bounds = make([]int, len(msgs))
		end := 0
		for i, m := range msgs {
			end += len(m.IDs)
			w.bounds[i] = end
		}
	}
	for i := range c.msgs {
		c.msgs[i].IDs = nil
	}
	c.fixStarts()
	return c, w, nil
}

// ResumeCold restores stored messages on the model's session without
// prefilling them; the Warm does (see ResumeCold).
func (m *Model) ResumeCold(msgs []Message, gen Options) (*Conversation, *Warm, error) {
	if m.Chat == nil {
		return nil, nil, &TokenizerError{Path: filepath.Join(filepath.Dir(m.Path), modelinfo.TokenizerFile), Err: os.ErrNotExist}
	}
	return ResumeCold(m.Session, ConversationOptions{Tokenizer: m.Chat.Tokenizer, Template: m.Chat.Template,
		Generation: gen, Cache: m.Cache}, msgs)
}

// historyIDs checks stored messages (roles, token ids inside the
// vocabulary) and returns their tokens in order.
func historyIDs(sess engine.Session, msgs []Message) ([]int, error) {
	var ids []int
	vocab := sess.Vocab()
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		for _, id := range m.IDs {
			if id < 0 || (vocab > 0 && id >= vocab) {
				return nil, fmt.Errorf("message %d: token %d outside the vocabulary (%d)", i, id, vocab)
			}
		}
		ids = append(ids, m.IDs...)
	}
	return ids, nil
}

// Remaining is how many tokens the cache holds and how many it will hold
// once the warm has run; they are equal when there is nothing (left) to
// read: the history was read, or the conversation has moved on from it
// (a turn, an edit, a reset).
func (w *Warm) Remaining() (held, total int) {
	held = len(w.c.cache)
	return held, max(held, w.target())
}

// Run reads the rest of the history into the cache, a prefill chunk at a
// time, calling progress(held, total) after each. It stops between chunks
// when ctx is done and returns ctx's error; the conversation is then
// consistent, and a later Run goes on from there. It does nothing when
// there is nothing left to read.
func (w *Warm) Run(ctx context.Context, progress func(held, total int)) error {
	c := w.c
	end := w.target()
	chunk := c.gen.PrefillChunk
	if chunk <= 0 {
		chunk = end
	}
	for n := len(c.cache); n < end; n = len(c.cache) {
		if err := ctx.Err(); err != nil {
			return err
		}
		step := min(chunk, end-n)
		_, err := prefill(ctx, c.sess, w.ids[n:n+step], step, nil, &Stats{})
		// After a failure the cache holds what the engine kept.
		w.assign(min(c.sess.Len(), n+step))
		if err != nil {
			return fmt.Errorf("reading the history into the cache: %w", err)
		}
		if progress != nil {
			progress(len(c.cache), end)
		}
	}
	return nil
}

// Messages is the conversation's messages, those still waiting to be read
// holding their stored tokens (what a save should keep), rather than the
// part of them the cache holds so far.
func (w *Warm) Messages() []Message {
	msgs := w.c.Messages()
	k := w.kept()
	if w.target() == 0 {
		return msgs
	}
	pos := 0
	for i := range msgs {
		if i < k {
			msgs[i].IDs = append([]int(nil), w.msgs[i].IDs...)
		}
		msgs[i].Start = pos
		pos += len(msgs[i].IDs)
	}
	return msgs
}

// kept is how many of the restored messages the conversation still starts
// with, unchanged.
func (w *Warm) kept() int {
	c := w.c
	k := 0
	for k < len(w.msgs) && k < len(c.msgs) && sameStored(c.msgs[k], w.msgs[k]) {
		k++
	}
	return k
}

// sameStored: m is still the restored message r (an undo that shortens a
// reply keeps its text when only its turn end goes, but marks it).
func sameStored(m, r Message) bool {
	return m.Role == r.Role && m.Text == r.Text && m.StopReason == r.StopReason
}

// target is how many of the stored tokens the cache should hold: those of
// the restored messages the conversation still starts with. It is 0 when
// the cache is already past them or holds anything else, or when the
// messages do not own exactly what Run gave them: the conversation has
// moved on, and the warm is over for good.
func (w *Warm) target() int {
	if end := w.want(); end > 0 {
		return end
	}
	w.msgs, w.ids, w.bounds = nil, nil, nil
	return 0
}

func (w *Warm) want() int {
	c := w.c
	k := w.kept()
	if k == 0 {
		return 0
	}
	end, n := w.bounds[k-1], len(c.cache)
	if n >= end || c.sess.Len() != n || commonPrefix(c.cache, w.ids) != n {
		return 0
	}
	lo := 0
	for i := range c.msgs {
		var want []int
		if i < k {
			want = w.ids[min(lo, n):min(w.bounds[i], n)]
			lo = w.bounds[i]
		}
		if !slices.Equal(c.msgs[i].IDs, want) {
			return 0
		}
	}
	return end
}

// assign records the first n stored tokens as the cache, each restored
// message owning its part of them.
func (w *Warm) assign(n int) {
	c := w.c
	c.cache = append(c.cache[:0:0], w.ids[:n]...)
	lo := 0
	for i := range c.msgs {
		c.msgs[i].IDs = nil
		if i < len(w.bounds) {
			if hi := min(w.bounds[i], n); hi > lo {
				c.msgs[i].IDs = append([]int(nil), w.ids[lo:hi]...)
			}
			lo = max(lo, w.bounds[i])
		}
	}
	c.fixStarts()
}
