package inference

import (
	"context"
	"errors"
	"testing"
)

// scopedSession records the generation scopes Generate opens on it
// (engine.GenerationScoper), and whether a step ran outside one.
type scopedSession struct {
	*zeroSession
	open, begun, outside int
}

func (s *scopedSession) BeginGeneration() func() {
	s.open++
	s.begun++
	return func() { s.open-- }
}

func (s *scopedSession) Forward(ctx context.Context, ids, positions []int64) ([]float32, error) {
	if s.open == 0 {
		s.outside++
	}
	return s.zeroSession.Forward(ctx, ids, positions)
}

// TestGenerateScopesTheGeneration: a session that holds something for a
// generation (the native engine's wired memory) is told when it starts and
// when it ends, including when the callback stops it, and every step runs
// inside the scope; the conversation's cache mirror passes the scope on.
func TestGenerateScopesTheGeneration(t *testing.T) {
	e := &zeroEngine{vocab: 64}
	s := &scopedSession{zeroSession: openZero(e, flatConfig(128, 8))}
	if _, err := Generate(context.Background(), s, []int{1, 2, 3}, Options{MaxNewTokens: 5}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := Generate(context.Background(), s, []int{4}, Options{MaxNewTokens: 5, OnToken: func(Token) error { return boom }}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if s.begun != 2 || s.open != 0 || s.outside != 0 || s.forwards == 0 {
		t.Errorf("scopes begun %d, still open %d, steps outside one %d (of %d)", s.begun, s.open, s.outside, s.forwards)
	}
	tracked := newTracked(s, flatConfig(128, 8))
	tracked.BeginGeneration()()
	if s.begun != 3 || s.open != 0 {
		t.Errorf("through the cache mirror: begun %d, open %d", s.begun, s.open)
	}
}
