package inference

import (
	"errors"
	"sync"

	"etchat/inference/grammar"
)

// ErrNoTokenizer: constrained output needs the model's tokenizer (its
// tokens' bytes), and the model was loaded without one.
var ErrNoTokenizer = errors.New("constrained output needs the model's tokenizer")

// grammarVocab is a Chat's grammar vocabulary, built on first use: it
// reads every token, so it is kept for the model's lifetime.
type grammarVocab struct {
	once sync.Once
	v    *grammar.Vocab
	err  error
}

// GrammarVocab is the byte trie of the chat's tokenizer's tokens.
func (c *Chat) GrammarVocab() (*grammar.Vocab, error) {
	if c.HF == nil {
		return nil, ErrNoTokenizer
	}
	c.grammarVocab.once.Do(func() { c.grammarVocab.v, c.grammarVocab.err = grammar.NewVocab(c.HF) })
	return c.grammarVocab.v, c.grammarVocab.err
}

// Constrain starts a generation through g on the model's vocabulary: the
// model's stop tokens are allowed only where g may end. Set the result as
// Options.Constraint.
func (m *Model) Constrain(g *grammar.Grammar) (*grammar.Matcher, error) {
	if m.Chat == nil {
		return nil, ErrNoTokenizer
	}
	v, err := m.Chat.GrammarVocab()
	if err != nil {
		return nil, err
	}
	return grammar.NewMatcher(g, v, m.StopIDs), nil
}
