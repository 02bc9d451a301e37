package inference

import (
	"context"
	"errors"
	"fmt"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
)

// PrefixCache runs independent prompts on one session and keeps, between
// them, the longest token prefix the next prompt shares with what the
// cache holds (llama-server's cache_prompt): a client that resends a whole
// chat every turn prefills only the new tokens. The cache is rewound to
// the shared prefix; where a sliding-window cache has overwritten the
// cells that needs, it is cleared and the prefix prefilled again, as the
// chat does. Token-exact matching makes a reply independent of what came
// before it. Not safe for concurrent use.
type PrefixCache struct {
	sess  *trackedSession
	cache []int // the tokens the session holds
}

// NewPrefixCache starts a prefix cache on sess (clearing it); cfg lets it
// predict rewinds an engine cannot refuse itself (see Conversation).
func NewPrefixCache(sess engine.Session, cfg *kvcache.Config) (*PrefixCache, error) {
	if sess == nil {
		return nil, errors.New("no session")
	}
	p := &PrefixCache{sess: newTracked(sess, cfg)}
	if sess.Len() > 0 {
		if err := p.sess.Clear(); err != nil {
			return nil, fmt.Errorf("clearing the session: %w", err)
		}
	}
	return p, nil
}

// PrefixResult is a generation and what it reused.
type PrefixResult struct {
	*Result
	// Cached is how many prompt tokens were already in the cache and not
	// fed again; 0 when the cache had to be re-prefilled.
	Cached int
	// Reprefilled: the cache refused the rewind; it was cleared and the
	// shared prefix fed again.
	Reprefilled bool
}

// Shared is how many leading tokens of prompt the cache holds (a
// server's slots route a request by it).
func (p *PrefixCache) Shared(prompt []int) int { return commonPrefix(p.cache, prompt) }

// Len is the number of tokens in the cache.
func (p *PrefixCache) Len() int { return len(p.cache) }

// Session is the engine session underneath.
func (p *PrefixCache) Session() engine.Session { return p.sess.Session }

// Generate answers prompt (a whole prompt, from position 0) with opts,
// reusing the cached prefix it shares. The result's PromptIDs are the
// tokens fed this time (the uncached tail). A failed or canceled
// generation leaves the cache record matching what the session holds.
func (p *PrefixCache) Generate(ctx context.Context, prompt []int, opts Options) (*PrefixResult, error) {
	if len(prompt) == 0 {
		return nil, errors.New("empty prompt")
	}
	if len(prompt)+1 > p.sess.Capacity() {
		return nil, fmt.Errorf("%w: %d prompt tokens + 1, capacity %d", ErrPromptTooLong, len(prompt), p.sess.Capacity())
	}
	reuse := commonPrefix(p.cache, prompt)
	if reuse == len(prompt) {
		reuse-- // the last prompt token is fed again for its logits
	}
	out := &PrefixResult{Cached: reuse}
	if err := p.keep(ctx, reuse, opts.PrefillChunk); err != nil {
		if !errors.Is(err, errReprefilled) {
			return nil, err
		}
		out.Reprefilled, out.Cached = true, 0
	}
	if p.sess.Len() != reuse {
		return nil, fmt.Errorf("prefix cache out of step: session holds %d tokens, want %d", p.sess.Len(), reuse)
	}
	res, err := Generate(ctx, p.sess, prompt[reuse:], opts)
	if res == nil {
		p.settle(prompt)
		return nil, err
	}
	held := append(append([]int(nil), prompt...), res.GeneratedIDs...)
	if res.TurnEnd {
		held = append(held, res.StopID)
	}
	p.settle(held)
	out.Result = res
	return out, err
}

// errReprefilled marks a keep that had to clear and prefill again.
var errReprefilled = errors.New("re-prefilled")

// keep brings the cache to its first n tokens. It returns errReprefilled
// when that took a clear and a prefill, any other error when it failed.
func (p *PrefixCache) keep(ctx context.Context, n, chunk int) error {
	if n == len(p.cache) && p.sess.Len() == n {
		return nil
	}
	err := p.sess.Rewind(n)
	if err == nil {
		p.cache = p.cache[:n]
		return nil
	}
	if !errors.Is(err, engine.ErrRewindRefused) && !errors.Is(err, engine.ErrUnsupported) {
		p.settle(p.cache)
		return fmt.Errorf("rewinding the cache to %d: %w", n, err)
	}
	kept := append([]int(nil), p.cache[:n]...)
	if err := p.sess.Clear(); err != nil {
		p.settle(p.cache)
		return fmt.Errorf("clearing the cache: %w", err)
	}
	p.cache = p.cache[:0]
	if n == 0 {
		return errReprefilled
	}
	_, err = prefill(ctx, p.sess, kept, chunk, nil, &Stats{})
	p.settle(kept)
	if err != nil {
		return fmt.Errorf("prefilling the kept %d tokens again: %w", n, err)
	}
	return errReprefilled
}

// settle records as the cache the prefix of ids the session holds. Where
// the session holds more tokens than ids accounts for (it never should),
// the cache is cleared so no stale cell is ever reused.
func (p *PrefixCache) settle(ids []int) {
	n := p.sess.Len()
	if n > len(ids) {
		_ = p.sess.Clear() // a failed clear is caught by Generate's length check
		p.cache = nil
		return
	}
	p.cache = append(p.cache[:0:0], ids[:n]...)
}

// Reset empties the cache.
func (p *PrefixCache) Reset() error {
	p.cache = nil
	return p.sess.Clear()
}
