package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"etchat/inference"
)

// Two models side by side on one prompt (issue 40 item 6). The two run
// one after the other, never together: each loads, answers and closes
// before the other loads, so each speed is its model's alone on this
// machine (run together on one machine, each would be slowed by the
// other by an amount that says nothing about either). Both use the same
// settings; with temperature 0 (the default here) a difference is the
// models', not the sampler's. The first token where the replies differ is
// marked: by token id when the two share a tokenizer, else by text.

// CompareOrder says how the two replies were run, as the view shows it.
const CompareOrder = "Run one after the other: each model loads, answers and is closed before the next loads, so each speed is its own, not shared."

// CompareSide is one model's reply.
type CompareSide struct {
	Model     string // the model's name
	Text      string
	Generated []int            // its token ids, as sampled
	Stats     *inference.Stats // nil until done
	Done      bool
	Err       string
	// at[i] is the reply's text after its first at[i].tokens tokens, as
	// streamed: where a divergence by token falls in the text.
	at []textAt
}

type textAt struct{ tokens, bytes int }

// Speed is the side's numbers in one line ("" until done).
func (s CompareSide) Speed() string {
	if s.Stats == nil {
		return ""
	}
	return fmt.Sprintf("%d tokens · %.1f tok/s decode · %.1f tok/s prefill · TTFT %.0f ms",
		s.Stats.NumGeneratedTokens, s.Stats.DecodeTokPerSec(), s.Stats.PrefillTokPerSec(), s.Stats.TTFTMs())
}

// CompareState is the comparison as the view shows it.
type CompareState struct {
	Prompt  string
	Sides   [2]CompareSide
	Running int // the side generating now, -1 when none
	// Diverge is where the replies first differ once both are done: a
	// token index when ByTokens, else a byte offset of the text; -1
	// when they are the same (or not both done).
	Diverge  int
	ByTokens bool
	Status   string
	Err      string
}

// Split is side i's text before the divergence and from it ("" and the
// whole text while there is none).
func (st CompareState) Split(i int) (same, differs string) {
	s := st.Sides[i]
	if st.Diverge < 0 {
		return s.Text, ""
	}
	cut := st.Diverge
	if st.ByTokens {
		cut = 0
		for _, a := range s.at {
			if a.tokens <= st.Diverge {
				cut = a.bytes
			}
		}
	}
	cut = min(cut, len(s.Text))
	return s.Text[:cut], s.Text[cut:]
}

// DivergeNote says where the replies part, or that they do not.
func (st CompareState) DivergeNote() string {
	a, b := st.Sides[0], st.Sides[1]
	switch {
	case !a.Done || !b.Done || a.Err != "" || b.Err != "":
		return ""
	case st.Diverge < 0:
		return "The two replies are the same, token for token."
	case st.ByTokens:
		return fmt.Sprintf("The replies part at token %d (of %d and %d): marked in both.", st.Diverge+1, len(a.Generated), len(b.Generated))
	}
	return fmt.Sprintf("The models have different tokenizers: the replies part at character %d of the text, marked in both.",
		utf8.RuneCountInString(a.Text[:st.Diverge])+1)
}

// Compare is the side-by-side view-model. Safe for concurrent use.
type Compare struct {
	opener Opener
	mu     sync.Mutex
	st     CompareState
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// OnChange is called (on the comparison's goroutine) after every
	// change: the view redraws through its do.
	OnChange func()
}

// NewCompare is a comparison opening its models through o.
func NewCompare(o Opener) *Compare {
	return &Compare{opener: o, st: CompareState{Running: -1, Diverge: -1}}
}

// State is the comparison now.
func (c *Compare) State() CompareState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	return st
}

func (c *Compare) changed() {
	if f := c.OnChange; f != nil {
		f()
	}
}

// Start answers prompt with a, then with b, with settings s each, in the
// background. It refuses an empty prompt, a missing model and a second
// start while one runs.
func (c *Compare) Start(ctx context.Context, a, b *ModelInfo, prompt string, s Settings) error {
	prompt = strings.TrimSpace(prompt)
	switch {
	case a == nil || b == nil:
		return errors.New("choose two models to compare")
	case prompt == "":
		return errors.New("type a prompt for both models")
	}
	c.mu.Lock()
	if c.cancel != nil {
		c.mu.Unlock()
		return errors.New("a comparison is running: wait for it or press Stop")
	}
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.st = CompareState{Prompt: prompt, Running: 0, Diverge: -1, ByTokens: sameTokenizer(a, b), Status: "Loading " + ModelName(a.Path) + "…"}
	c.st.Sides[0].Model, c.st.Sides[1].Model = ModelName(a.Path), ModelName(b.Path)
	c.wg.Add(1)
	c.mu.Unlock()
	c.changed()
	go func() {
		defer c.wg.Done()
		for i, m := range []*ModelInfo{a, b} {
			if err := c.answer(ctx, i, m, prompt, s); err != nil {
				c.mu.Lock()
				c.st.Sides[i].Err = err.Error()
				c.mu.Unlock()
			}
			if ctx.Err() != nil {
				break
			}
		}
		c.mu.Lock()
		c.st.Running, c.cancel = -1, nil
		c.st.Diverge = diverge(c.st.Sides, c.st.ByTokens)
		c.st.Status = "Done."
		if ctx.Err() != nil {
			c.st.Status = "Stopped."
		}
		c.mu.Unlock()
		cancel()
		c.changed()
	}()
	return nil
}

// answer runs side i: load, send the prompt, close.
func (c *Compare) answer(ctx context.Context, i int, m *ModelInfo, prompt string, s Settings) error {
	c.mu.Lock()
	c.st.Running, c.st.Status = i, "Loading "+ModelName(m.Path)+"…"
	c.mu.Unlock()
	c.changed()
	sess, err := c.opener.Open(ctx, m, s, nil, nil)
	if err != nil {
		return fmt.Errorf("could not load %s: %w", ModelName(m.Path), err)
	}
	defer sess.Close()
	c.mu.Lock()
	c.st.Status = ModelName(m.Path) + " is answering…"
	c.mu.Unlock()
	c.changed()
	var text strings.Builder
	r, err := sess.Send(ctx, prompt, func(delta string) {
		text.WriteString(delta)
		n := 0
		if ms, _, ok := sess.Pending(); ok {
			n = len(ms[len(ms)-1].Generated)
		}
		c.mu.Lock()
		side := &c.st.Sides[i]
		side.Text = text.String()
		side.at = append(side.at, textAt{tokens: n, bytes: text.Len()})
		c.mu.Unlock()
		c.changed()
	})
	if r == nil {
		if err == nil {
			err = errors.New("no reply")
		}
		return err
	}
	c.mu.Lock()
	side := &c.st.Sides[i]
	side.Text, side.Generated, side.Stats, side.Done = r.Message.Text, r.Message.Generated, r.Message.Stats, true
	c.mu.Unlock()
	c.changed()
	return nil
}

// Stop ends the comparison after the current token.
func (c *Compare) Stop() {
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

// Wait waits for the comparison to end.
func (c *Compare) Wait() { c.wg.Wait() }

// diverge is where two finished replies first differ (-1: they do not,
// or one is missing): the first token index whose ids differ (or where
// the shorter ends) by tokens, else the first differing byte of the text,
// backed up to a character's start.
func diverge(s [2]CompareSide, byTokens bool) int {
	a, b := s[0], s[1]
	if !a.Done || !b.Done {
		return -1
	}
	if byTokens {
		for i := range min(len(a.Generated), len(b.Generated)) {
			if a.Generated[i] != b.Generated[i] {
				return i
			}
		}
		if len(a.Generated) == len(b.Generated) {
			return -1
		}
		return min(len(a.Generated), len(b.Generated))
	}
	i := 0
	for i < len(a.Text) && i < len(b.Text) && a.Text[i] == b.Text[i] {
		i++
	}
	if i == len(a.Text) && i == len(b.Text) {
		return -1
	}
	for i > 0 && !utf8.RuneStart(a.Text[min(i, len(a.Text)-1)]) {
		i--
	}
	return i
}

// sameTokenizer reports whether a and b read their text with the same
// tokenizer file (by content): then their token ids compare.
func sameTokenizer(a, b *ModelInfo) bool {
	ha, hb := fileHash(a.Companion.Tokenizer), fileHash(b.Companion.Tokenizer)
	return ha != "" && ha == hb
}

func fileHash(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return string(h.Sum(nil))
}
