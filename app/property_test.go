package app

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/tokenizer"
	"etchat/internal/engines"
	"etchat/internal/fixtures"
)

// cacheRecorder is a test engine at the engine boundary: the real CPU
// engine, whose sessions record the token ids their cache holds (forward
// appends, rewind truncates, clear empties), independently of the
// conversation's own bookkeeping.
type cacheRecorder struct {
	inner engine.Engine
	mu    sync.Mutex
	last  *recordedSession
}

func (r *cacheRecorder) Name() string { return r.inner.Name() }

func (r *cacheRecorder) Open(ctx context.Context, path string, cfg *kvcache.Config) (engine.Session, error) {
	s, err := r.inner.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	rs := &recordedSession{Session: s}
	r.mu.Lock()
	r.last = rs
	r.mu.Unlock()
	return rs, nil
}

func (r *cacheRecorder) ids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.last.ids...)
}

type recordedSession struct {
	engine.Session
	ids []int
}

func (s *recordedSession) record(ids, pos []int64, err error) {
	if err != nil || len(ids) == 0 {
		return
	}
	s.ids = s.ids[:min(len(s.ids), int(pos[0]))]
	for _, id := range ids {
		s.ids = append(s.ids, int(id))
	}
}

func (s *recordedSession) Forward(ctx context.Context, ids, pos []int64) ([]float32, error) {
	out, err := s.Session.Forward(ctx, ids, pos)
	s.record(ids, pos, err)
	return out, err
}

func (s *recordedSession) ForwardAll(ctx context.Context, ids, pos []int64) ([]float32, error) {
	out, err := s.Session.ForwardAll(ctx, ids, pos)
	s.record(ids, pos, err)
	return out, err
}

func (s *recordedSession) Rewind(n int) error {
	err := s.Session.Rewind(n)
	if err == nil {
		s.ids = s.ids[:min(n, len(s.ids))]
	}
	return err
}

func (s *recordedSession) Clear() error {
	err := s.Session.Clear()
	if err == nil {
		s.ids = nil
	}
	return err
}

func (s *recordedSession) CanRewind(n int) bool {
	if rc, ok := s.Session.(interface{ CanRewind(int) bool }); ok {
		return rc.CanRewind(n)
	}
	return n == s.Len()
}

// propertySeed varies the property's random walk and sampling (go test
// ./app -run Property -args -property.seed=N); CI runs the fixed default,
// so a failure there reproduces here.
var propertySeed = flag.Uint64("property.seed", 15, "seed of the chat property test's operations and sampling")

// Random sequences of send, stop, undo turn, undo N, regenerate, edit and
// reset through the chat view-model (real CPU engine, real store) on every
// off-graph fixture with a tokenizer and on the in-graph one with llama3's
// tokenizer beside it: after every step the transcript's token ids are the
// cache's, the meter counts them, and each reply's text is what its
// tokens say.
func TestChatTranscriptIsTheCacheProperty(t *testing.T) {
	// The engines the property runs on; the native engine is one more row
	// (its name and constructor) where its library is built.
	for _, eng := range []struct {
		name string
		open func() (engine.Engine, error)
	}{
		{engine.CPU, func() (engine.Engine, error) { return cpu.New(cpu.Options{}), nil }},
	} {
		t.Run(eng.name, func(t *testing.T) {
			inner, err := eng.open()
			if err != nil {
				t.Skip(err)
			}
			rec := &cacheRecorder{inner: inner}
			engine.Register(eng.name, func(engine.Config) (engine.Engine, error) { return rec, nil })
			t.Cleanup(engines.Register)
			transcriptIsTheCache(t, rec, eng.name)
		})
	}
}

func transcriptIsTheCache(t *testing.T, rec *cacheRecorder, engineName string) {

	inGraph := modelCopy(t, fixtures.InGraph, false)
	for _, n := range []string{"tokenizer.json", "tokenizer_config.json"} {
		src, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(fixtures.PTE(fixtures.Llama3)), n))
		if err != nil {
			src = filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), n)
		}
		if err := os.Symlink(src, filepath.Join(filepath.Dir(inGraph), n)); err != nil {
			t.Fatal(err)
		}
	}
	models := map[string]string{
		fixtures.Llama3: modelCopy(t, fixtures.Llama3, true), fixtures.Gemma3: modelCopy(t, fixtures.Gemma3, true),
		fixtures.Qwen3: modelCopy(t, fixtures.Qwen3, true), fixtures.InGraph: inGraph,
		// KV sharing, caches of two shapes (the app takes the stand-in
		// tokenizer's own template, gemma3's).
		fixtures.Gemma4: modelCopy(t, fixtures.Gemma4, true),
	}
	words := []string{"Hello there.", "Tell me more.", "What is my name?", "Why?", "Write a very long story about the sea and ships, please."}
	counts := map[string]int{}
	for _, name := range []string{fixtures.Gemma3, fixtures.Llama3, fixtures.Qwen3, fixtures.InGraph, fixtures.Gemma4} {
		t.Run(name, func(t *testing.T) {
			if name == fixtures.Gemma4 && (testing.Short() || raceEnabled) {
				t.Skip("22 s on 2 cores without -race (its 262k-row per-layer embedding and lm head); runs without -race and -short")
			}
			b, _ := testBackend(t)
			NewLibrary(b.Inspector, b.Library).Add(context.Background(), models[name])
			c, errs := newTestChat(t, b, inspect(t, models[name]))
			tok, err := tokenizer.Load(filepath.Join(filepath.Dir(models[name]), "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(*propertySeed, uint64(len(name))))
			s := DefaultSettings(engineName)
			s.MaxNewTokens = 12
			s.Seed = int64(r.Uint32()) + 1 // 0 would seed the sampler from the clock
			run(t, c, errs, c.NewConversation(s))
			var ops []string
			for step := 0; step < 24; step++ {
				st := c.State()
				var err error
				switch k := r.IntN(10); {
				case k < 3 || len(st.Messages) == 0:
					ops = append(ops, "send")
					err = c.Send(words[r.IntN(len(words))])
				case k < 4:
					ops = append(ops, "stop")
					var once sync.Once
					c.OnChange = func() {
						if c.State().Streaming != "" {
							once.Do(c.Stop)
						}
					}
					err = c.Send(words[r.IntN(len(words))])
				case k < 5:
					ops = append(ops, "undo")
					err = c.UndoTurn()
				case k < 7:
					n := 1 + r.IntN(12)
					ops = append(ops, fmt.Sprintf("undo%d", n))
					err = c.UndoTokens(min(n, st.Position))
				case k < 8:
					ops = append(ops, "regen")
					err = c.Regenerate()
				case k < 9:
					ops = append(ops, "edit")
					err = c.EditLast(words[r.IntN(len(words))])
				default:
					ops = append(ops, "reset")
					err = c.Reset()
				}
				if err != nil { // refused at once (nothing to undo …): the state stands
					counts["refused"]++
				}
				c.Wait()
				c.OnChange = nil
				*errs = nil // too-long turns are reported; the invariants must hold all the same
				st = c.State()
				var shown []int
				for _, m := range st.Messages {
					shown = append(shown, m.IDs...)
				}
				if cache := rec.ids(); !slices.Equal(shown, cache) {
					t.Fatalf("ops %v: the transcript holds %d tokens, the cache %d\ntranscript %v\ncache      %v", ops, len(shown), len(cache), shown, cache)
				}
				if st.Position != len(shown) {
					t.Fatalf("ops %v: meter %d, transcript %d tokens", ops, st.Position, len(shown))
				}
				// Each message's tokens render it: a reply's text is in them,
				// as the tokenizer normalizes it when a later turn re-encodes
				// the transcript (Qwen's NFC turns a sampled U+F923 into
				// U+85CD: the same character).
				for i, m := range st.Messages {
					text := strings.TrimSpace(m.Text)
					if held := tok.Decode(m.IDs, true); !strings.Contains(held, text) &&
						!strings.Contains(held, strings.TrimSpace(tok.Decode(tok.Encode(text, false), true))) {
						t.Fatalf("ops %v: message %d shows %q but holds %q", ops, i, text, held)
					}
				}
				for i := 1; i < len(st.Messages); i++ {
					if st.Messages[i].Role == st.Messages[i-1].Role {
						t.Fatalf("ops %v: two %s messages in a row", ops, st.Messages[i].Role)
					}
				}
				counts[ops[len(ops)-1]]++
			}
		})
	}
	t.Logf("operations: %v", counts)
}
