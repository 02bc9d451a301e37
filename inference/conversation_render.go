// Prompt rendering: the template's text, the tokens each message owns in it, and DraftTokens.

package inference

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// renderText is the conversation's prompt text up to and with msgs.
func (c *Conversation) renderText(msgs []Message, addGen bool) (string, error) {
	if c.tmpl == nil {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString(m.Text)
		}
		return b.String(), nil
	}
	text, err := c.tmpl.Render(msgs, addGen)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return text, nil
}

func (c *Conversation) encode(text string) ([]int, error) {
	return c.tok.Encode(text, c.tmpl == nil) // raw text: the tokenizer's own specials (BOS)
}

// render is the prompt for the conversation so far, with the generation
// prompt, as the template renders it, and bounds[i], the end of
// message i's tokens in it. A reply generated here keeps the ids it was
// generated as (see replySplices); a history given as text (typed,
// imported, a message without generated ids) is tokenized as Hugging Face
// does. Each message owns the tokens that render it:
// a user message its text, its turn end and the reply's header (the
// generation prompt); a reply its text and its turn end. So what the
// transcript shows and what the cache holds are one thing. Where the
// template's output cannot be mapped back to the messages, they keep the
// tokens the cache agrees on.
func (c *Conversation) render() (full, bounds []int, err error) { return c.renderFrom(0) }

// renderFrom is render that maps only the messages from index first on
// back to their tokens (the earlier ones keep the tokens the cache agrees
// on): DraftTokens needs only the last boundary, on every keystroke.
func (c *Conversation) renderFrom(first int) (full, bounds []int, err error) {
	text, err := c.renderText(c.msgs, true)
	if err != nil {
		return nil, nil, err
	}
	if full, err = c.encode(text); err != nil {
		return nil, nil, err
	}
	n := len(c.msgs)
	bounds = make([]int, n)
	starts, ends := c.contentSpans(text)
	turnEnd := idSet(c.gen.TurnEndIDs)
	// tokensTo is the number of tokens of text[:off], when they are a
	// prefix of full (a boundary the tokenizer does not merge across).
	tokensTo := func(off int) int {
		ids, err := c.encode(text[:off])
		if err != nil || commonPrefix(ids, full) != len(ids) {
			return -1
		}
		return len(ids)
	}
	splices := c.replySplices(text, full, starts, ends, tokensTo)
	for i := 0; i < n-1; i++ {
		bounds[i] = -1
		if starts == nil || i < first {
			continue
		}
		if c.msgs[i].Role != RoleAssistant && c.msgs[i+1].Role == RoleAssistant {
			bounds[i] = tokensTo(starts[i+1]) // up to the reply's text
			continue
		}
		k := tokensTo(ends[i])
		if k >= 0 && k < len(full) && turnEnd[full[k]] {
			for k++; k < len(full) && strings.TrimSpace(c.tok.Decode(full[k:k+1], false)) == ""; k++ {
			}
		}
		bounds[i] = k
	}
	full, bounds = applySplices(full, bounds, splices)
	agree := commonPrefix(c.cache, full)
	for i := 0; i < n-1; i++ {
		if bounds[i] < 0 {
			bounds[i] = min(c.msgs[i].End(), agree)
		}
		if i > 0 {
			bounds[i] = max(bounds[i], bounds[i-1])
		}
	}
	if n > 0 {
		bounds[n-1] = len(full)
	}
	return full, bounds, nil
}

// Marks around each message's text while the template renders, to find
// where each text lands in the prompt.
const markStart, markEnd = "\uE000", "\uE001"

// contentSpans are the byte offsets in text (the unmarked rendering) where
// each message's text starts and ends; nil when the template's output
// cannot be mapped (it rewrites the texts beyond trimming them).
func (c *Conversation) contentSpans(text string) (starts, ends []int) {
	for _, trim := range []bool{false, true} {
		msgs := make([]Message, len(c.msgs))
		for i, m := range c.msgs {
			t := m.Text
			if trim {
				t = strings.TrimSpace(t)
			}
			msgs[i] = Message{Role: m.Role, Text: markStart + t + markEnd}
		}
		marked, err := c.renderText(msgs, true)
		if err != nil {
			return nil, nil
		}
		var b strings.Builder
		starts, ends = starts[:0], ends[:0]
		for i := 0; i < len(marked); {
			switch {
			case strings.HasPrefix(marked[i:], markStart):
				starts = append(starts, b.Len())
				i += len(markStart)
			case strings.HasPrefix(marked[i:], markEnd):
				ends = append(ends, b.Len())
				i += len(markEnd)
			default:
				b.WriteByte(marked[i])
				i++
			}
		}
		if b.String() == text && len(starts) == len(c.msgs) && len(ends) == len(c.msgs) {
			return starts, ends
		}
	}
	return nil, nil
}

// DraftTokens is how many tokens a message of text would hold if sent now
// (its turn's markup and the reply's header included), and the tokens the
// prompt would then hold in all.
func (c *Conversation) DraftTokens(text string) (own, total int, err error) {
	if n := len(c.msgs); n > 0 && c.msgs[n-1].Role == RoleUser {
		return 0, 0, errors.New("the last message has no reply yet")
	}
	saved := c.msgs
	c.msgs = append(cloneMessages(saved), Message{Role: RoleUser, Text: text})
	full, bounds, err := c.renderFrom(len(saved) - 1)
	c.msgs = saved
	if err != nil {
		return 0, 0, err
	}
	start := 0
	if n := len(bounds); n > 1 {
		start = bounds[n-2]
	}
	return len(full) - start, len(full), nil
}

// splice replaces full[from:to] (the tokens of a reply's text as the
// rendering encodes them) with ids.
type splice struct {
	from, to int
	ids      []int
}

// replySplices are the replies whose text should keep the ids they were
// generated as: an assistant message with Generated ids that decode to its
// text, rendered by the template as it is or trimmed, at token boundaries
// of full.
// That is the ExecuTorch runner's multi-turn semantics (the cache holds
// what was generated; it never re-tokenizes history): a reply cut at max
// tokens, whose text would re-encode to other ids, keeps its cache cells
// and its count. In order of position.
func (c *Conversation) replySplices(text string, full, starts, ends []int, tokensTo func(int) int) []splice {
	if starts == nil {
		return nil
	}
	var out []splice
	for i, m := range c.msgs {
		// A template that trims the texts (llama3's) renders the reply's
		// text without its edge whitespace: the generated ids, which hold
		// it, take the trimmed text's place, as they did in the cache.
		if span := text[starts[i]:ends[i]]; m.Role != RoleAssistant || len(m.Generated) == 0 ||
			(span != m.Text && span != strings.TrimSpace(m.Text)) || c.tok.Decode(m.Generated, true) != m.Text {
			continue
		}
		from, to := tokensTo(starts[i]), tokensTo(ends[i])
		if from < 0 || to < from || slices.Equal(full[from:to], m.Generated) {
			continue
		}
		out = append(out, splice{from: from, to: to, ids: m.Generated})
	}
	return out
}

// applySplices returns full with the splices made and bounds moved with
// the tokens they pointed after (a bound of -1 stays).
func applySplices(full, bounds []int, splices []splice) ([]int, []int) {
	if len(splices) == 0 {
		return full, bounds
	}
	out := make([]int, 0, len(full))
	prev := 0
	for _, s := range splices {
		out = append(append(out, full[prev:s.from]...), s.ids...)
		prev = s.to
	}
	out = append(out, full[prev:]...)
	moved := make([]int, len(bounds))
	for i, b := range bounds {
		moved[i] = b
		if b < 0 {
			continue
		}
		for _, s := range splices {
			if b >= s.to {
				moved[i] += len(s.ids) - (s.to - s.from)
			}
		}
	}
	return out, moved
}
