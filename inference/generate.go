package inference

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"etchat/inference/engine"
	"etchat/inference/sampler"
)

// Token is one generated token and the text it adds to the stream (empty
// while an incomplete UTF-8 sequence is pending).
type Token struct {
	ID   int
	Text string
	// Logprob and TopLogprobs (Options.Logprobs; the server's logprobs):
	// the token's log-probability under the raw logits row it was sampled
	// from, and the Options.TopLogprobs most likely tokens of that row.
	Logprob     float64
	TopLogprobs []TokenLogprob
}

// Decoder turns token ids back into text; the tokenizer implements it.
type Decoder interface {
	Decode(ids []int, skipSpecial bool) string
}

// Options control one generation.
type Options struct {
	// MaxNewTokens is the most tokens to generate; it is clamped to the
	// cache's room (Result.Capped says so).
	MaxNewTokens int
	// Sampling is used when Sampler is nil.
	Sampling sampler.Sampling
	// Sampler, when set, is reused (its random stream continues).
	Sampler *sampler.Sampler
	// StopIDs end generation when sampled (the stop token is not part of
	// the output). See StopSet.
	StopIDs []int
	// IgnoreEOS generates exactly the budget, stop tokens included.
	IgnoreEOS bool
	// TurnEndIDs are the stop tokens that are committed: when one is
	// sampled it is fed through forward so the cache holds it and the next
	// turn opens after a closed one (run_llm_hf.cpp's turn-end commit).
	TurnEndIDs []int
	// PrefillChunk is the largest forward step (the cache's max_write, or
	// the model's chunk for in-graph programs); 0 feeds the prompt at once.
	PrefillChunk int
	// Decoder, when set, fills Token.Text and Result.Text.
	Decoder Decoder
	// OnToken receives each generated token as it is sampled; an error
	// stops generation and is returned.
	OnToken func(Token) error
	// OnPrefill reports progress after each prefill chunk.
	OnPrefill func(done, total int)

	// Structured output (issue 39): Constraint, when set, restricts each
	// sampled token to those it allows (Sampler.SampleMasked, the logits
	// row only read) and is told each token chosen, the stop token
	// included. Model.Constrain makes one from a grammar.
	Constraint Constraint

	// Log-probabilities (the server's logprobs and top_logprobs): when
	// Logprobs is set, each Token passed to OnToken carries its logprob
	// and the TopLogprobs (at most MaxTopLogprobs) most likely tokens,
	// from the raw logits row before sampling, in float64; the row is
	// only read.
	Logprobs    bool
	TopLogprobs int
}

// Constraint restricts the next token: Mask is the set of allowed ids (bit
// id%64 of word id/64), Accept advances past the id chosen. A
// grammar.Matcher is one.
type Constraint interface {
	Mask() []uint64
	Accept(id int) error
}

// Stop reasons.
const (
	StopEOS      = "eos"      // a stop token was sampled
	StopLength   = "length"   // the max-new-tokens budget was used
	StopCapacity = "capacity" // the cache's room ran out before the budget
	StopCanceled = "canceled" // the context was canceled
)

// Result is one generation's outcome.
type Result struct {
	PromptIDs    []int  // the tokens prefilled
	GeneratedIDs []int  // the tokens generated (stop token excluded)
	Text         string // decoded GeneratedIDs, special tokens kept ("" without a decoder)
	StopReason   string
	StopID       int  // the stop token sampled, when StopReason is eos; else -1
	TurnEnd      bool // the stop token was a turn end and was committed to the cache
	Capped       bool // the budget was lowered to fit the cache
	Budget       int  // the budget after clamping
	Start        int  // cache length before the prompt
	Stats        Stats
}

// ErrPromptTooLong: the prompt (plus one generated token) does not fit in
// the cache's remaining room.
var ErrPromptTooLong = errors.New("prompt does not fit in the cache")

// CheckRoom reports whether n prompt tokens and one generated token fit
// after the session's current length, as the runner admits a turn.
func CheckRoom(sess engine.Session, n int) error {
	if !sess.CanExtend(n + 1) {
		return fmt.Errorf("%w: %d prompt tokens + 1 after %d cached, capacity %d", ErrPromptTooLong, n, sess.Len(), sess.Capacity())
	}
	return nil
}

// Prefill feeds ids at the session's current length in chunks of at most
// chunk tokens (0 = all at once), and returns the last position's logits.
// ctx is checked between chunks.
func Prefill(ctx context.Context, sess engine.Session, ids []int, chunk int, progress func(done, total int)) ([]float32, error) {
	var st Stats
	return prefill(ctx, sess, ids, chunk, progress, &st)
}

func prefill(ctx context.Context, sess engine.Session, ids []int, chunk int, progress func(done, total int), st *Stats) ([]float32, error) {
	if len(ids) == 0 {
		return nil, errors.New("nothing to prefill")
	}
	if chunk <= 0 {
		chunk = len(ids)
	}
	start := sess.Len()
	var logits []float32
	buf := make([]int64, 0, 2*min(chunk, len(ids)))
	for off := 0; off < len(ids); off += chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(chunk, len(ids)-off)
		in, pos := buf[:n], buf[n:2*n]
		for i := 0; i < n; i++ {
			in[i], pos[i] = int64(ids[off+i]), int64(start+off+i)
		}
		t := time.Now()
		var err error
		logits, err = sess.Forward(ctx, in, pos)
		st.ForwardSeconds += time.Since(t).Seconds()
		if err != nil {
			return nil, fmt.Errorf("prefill at position %d (%d tokens): %w", start+off, n, err)
		}
		if progress != nil {
			progress(off+n, len(ids))
		}
	}
	if v := sess.Vocab(); v > 0 && len(logits) != v {
		return nil, fmt.Errorf("engine returned %d logits, vocabulary is %d", len(logits), v)
	}
	return logits, nil
}

// beginGeneration opens the generation's scope on a session that holds
// something for it (engine.GenerationScoper: the native engine wires its
// memory on Metal) and returns what ends it; a no-op for other sessions.
func beginGeneration(sess engine.Session) (end func()) {
	if g, ok := sess.(engine.GenerationScoper); ok {
		return g.BeginGeneration()
	}
	return func() {}
}

// Generate prefills prompt at the session's current length and generates
// up to opts.MaxNewTokens tokens. Every generated token is fed back, so the
// cache ends holding prompt + generated (+ the committed turn end). On a
// canceled context it returns the partial result with StopReason
// "canceled" and the context's error.
func Generate(ctx context.Context, sess engine.Session, prompt []int, opts Options) (*Result, error) {
	if err := opts.check(prompt); err != nil {
		return nil, err
	}
	var samplingNs time.Duration
	sample, err := opts.sampleFunc(&samplingNs)
	if err != nil {
		return nil, err
	}
	if err := CheckRoom(sess, len(prompt)); err != nil {
		return nil, err
	}
	defer beginGeneration(sess)()
	start := sess.Len()
	res := &Result{PromptIDs: append([]int(nil), prompt...), StopID: -1, Start: start}
	budget := min(opts.MaxNewTokens, sess.Capacity()-start-len(prompt))
	res.Capped, res.Budget = budget < opts.MaxNewTokens, budget
	stop := idSet(opts.StopIDs)
	turnEnd := idSet(opts.TurnEndIDs)
	st := &res.Stats
	st.NumPromptTokens = int64(len(prompt))

	var stream *streamer
	if opts.Decoder != nil {
		stream = newStreamer(opts.Decoder, prompt)
	}

	t0 := time.Now()
	st.InferenceStartMs = t0.UnixMilli()
	logits, err := prefill(ctx, sess, prompt, opts.PrefillChunk, opts.OnPrefill, st)
	if err != nil {
		return nil, err
	}
	tPrefill := time.Now()
	st.PromptEvalEndMs = tPrefill.UnixMilli()
	st.PrefillSeconds = tPrefill.Sub(t0).Seconds()
	st.MemAfterPrefill = sess.Memory()

	next, err := sample(logits)
	if err != nil {
		return nil, err
	}
	tFirst := time.Now()
	st.FirstTokenMs = tFirst.UnixMilli()
	st.TTFTSeconds = tFirst.Sub(t0).Seconds()

	var genErr error
	res.StopReason = StopLength
	if res.Capped {
		res.StopReason = StopCapacity
	}
	pos := int64(start + len(prompt))
	var one, onePos [1]int64
	for i := 0; i < budget; i++ {
		if stop[next] && !opts.IgnoreEOS {
			res.StopReason, res.StopID = StopEOS, next
			break
		}
		if err := ctx.Err(); err != nil {
			res.StopReason, genErr = StopCanceled, err
			break
		}
		res.GeneratedIDs = append(res.GeneratedIDs, next)
		if opts.OnToken != nil {
			if err := opts.OnToken(newToken(&opts, stream, next, logits)); err != nil {
				genErr = err
				break
			}
		}
		one[0], onePos[0] = int64(next), pos
		t := time.Now()
		logits, err = sess.Forward(ctx, one[:], onePos[:])
		st.ForwardSeconds += time.Since(t).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				res.StopReason, genErr = StopCanceled, ctx.Err()
			} else {
				genErr = fmt.Errorf("decode at position %d: %w", pos, err)
			}
			break
		}
		pos++
		if next, err = sample(logits); err != nil {
			genErr = err
			break
		}
	}
	if genErr == nil && res.StopReason != StopEOS && stop[next] && !opts.IgnoreEOS {
		// The budget ran out exactly where the model closed its turn.
		res.StopID = next
	}
	tEnd := time.Now()
	st.InferenceEndMs = tEnd.UnixMilli()
	st.DecodeSeconds = tEnd.Sub(tPrefill).Seconds()
	st.NumGeneratedTokens = int64(len(res.GeneratedIDs))
	st.SamplingSeconds = samplingNs.Seconds()
	st.AggregateSamplingTimeMs = samplingNs.Milliseconds()
	st.AggregateModelExecutionTimeMs = int64(st.ForwardSeconds * 1000)

	// Commit the turn end, so the next turn opens after a closed one.
	if genErr == nil && res.StopID >= 0 && turnEnd[res.StopID] && sess.CanExtend(1) {
		one[0], onePos[0] = int64(res.StopID), pos
		if _, err := sess.Forward(ctx, one[:], onePos[:]); err != nil {
			genErr = fmt.Errorf("committing the turn-end token: %w", err)
		} else {
			res.TurnEnd = true
		}
	}
	st.MemAfterDecode = sess.Memory()
	st.PeakBytes = max(st.MemAfterPrefill.PeakBytes, st.MemAfterDecode.PeakBytes, st.MemAfterLoad.PeakBytes)
	st.derive()
	if opts.Decoder != nil {
		res.Text = opts.Decoder.Decode(res.GeneratedIDs, false)
		if stream != nil && opts.OnToken != nil && genErr == nil {
			if rest := stream.flush(); rest != "" {
				genErr = opts.OnToken(Token{ID: -1, Text: rest})
			}
		}
	}
	return res, genErr
}

// check refuses options Generate cannot follow.
func (opts *Options) check(prompt []int) error {
	switch {
	case len(prompt) == 0:
		return errors.New("empty prompt")
	case opts.MaxNewTokens < 0:
		return fmt.Errorf("max new tokens %d is negative", opts.MaxNewTokens)
	case opts.Constraint != nil && opts.IgnoreEOS:
		return errors.New("a constrained generation ends where its grammar does: it cannot ignore the end of turn")
	}
	return nil
}

// sampleFunc is the loop's sampling step: opts.Sampler (or a new one from
// opts.Sampling), through opts.Constraint's mask when there is one, its
// time added to *ns.
func (opts *Options) sampleFunc(ns *time.Duration) (func([]float32) (int, error), error) {
	smp := opts.Sampler
	if smp == nil {
		var err error
		if smp, err = sampler.New(opts.Sampling); err != nil {
			return nil, err
		}
	}
	c := opts.Constraint
	if c == nil {
		return func(l []float32) (int, error) {
			t := time.Now()
			id, err := smp.Sample(l)
			*ns += time.Since(t)
			return id, err
		}, nil
	}
	return func(l []float32) (int, error) {
		t := time.Now()
		defer func() { *ns += time.Since(t) }()
		id, err := smp.SampleMasked(l, c.Mask())
		if err != nil {
			return 0, fmt.Errorf("constrained sampling: %w", err)
		}
		return id, c.Accept(id)
	}, nil
}

// newToken is the Token passed to OnToken for id, sampled from the
// logits row: its text from the streamer, its logprobs when asked.
func newToken(opts *Options, stream *streamer, id int, logits []float32) Token {
	tok := Token{ID: id}
	if opts.Logprobs {
		tok.Logprob, tok.TopLogprobs = logprobs(logits, id, opts.TopLogprobs)
	}
	if stream != nil {
		tok.Text = stream.push(id)
	}
	return tok
}

func idSet(ids []int) map[int]bool {
	m := make(map[int]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// streamer decodes incrementally: it decodes a short window of recent ids
// and emits what the newest token added, holding back text that ends in an
// incomplete character (U+FFFD). A few prompt tokens give the first
// generated token its context (SentencePiece-style decoders drop a leading
// space at the start of a text).
type streamer struct {
	dec     Decoder
	ids     []int
	prefix  int // ids[prefix:read] have been emitted, as ids[prefix:]'s decoding starts
	read    int
	emitted string // text of ids[prefix:read]
}

const streamContext = 4

func newStreamer(dec Decoder, prompt []int) *streamer {
	ctxIDs := prompt[max(0, len(prompt)-streamContext):]
	s := &streamer{dec: dec, ids: append([]int(nil), ctxIDs...)}
	s.read = len(s.ids)
	s.emitted = dec.Decode(s.ids, false)
	return s
}

func (s *streamer) push(id int) string {
	s.ids = append(s.ids, id)
	text := s.dec.Decode(s.ids[s.prefix:], false)
	if len(text) <= len(s.emitted) || strings.HasSuffix(text, "\uFFFD") {
		return "" // nothing new yet, or a character still incomplete
	}
	out := text[len(s.emitted):]
	// Slide the window: the next decode starts where this one's new text began.
	s.prefix, s.read = s.read, len(s.ids)
	s.emitted = s.dec.Decode(s.ids[s.prefix:s.read], false)
	return out
}

// flush returns text still held back (an incomplete character at the end).
func (s *streamer) flush() string {
	text := s.dec.Decode(s.ids[s.prefix:], false)
	if len(text) > len(s.emitted) {
		return text[len(s.emitted):]
	}
	return ""
}
