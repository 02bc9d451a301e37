package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// TokenBytesError: the tokenizer's decoder has a step whose effect on one
// token depends on its neighbours, so a token's own bytes are not defined.
type TokenBytesError struct{ Decoder string }

func (e *TokenBytesError) Error() string {
	return fmt.Sprintf("tokenizer: decoder %s has no per-token bytes (constrained decoding needs them)", e.Decoder)
}

// byteStep is one decoder step applied to a single token in the middle of
// a sequence. It works on bytes, not strings: ByteLevel and ByteFallback
// produce raw bytes that may be part of a character the next token ends,
// which Decode's lossy UTF-8 conversion would turn into U+FFFD.
type byteStep func(tok []byte) []byte

// byteChain is the decoder as per-token byte steps. fused records that a
// Fuse has run: later steps see the whole text, so those that only touch
// its ends (Strip) do nothing to a token in the middle.
type byteChain struct {
	steps []byteStep
	fused bool
	err   error
}

// TokenBytes returns the exact bytes token id adds to a decoded text when it
// is not the first token: what Decode(ids[:i+1]) adds to Decode(ids[:i]),
// before any UTF-8 repair. A byte-level BPE token may hold part of a
// character, so the bytes need not be valid UTF-8. It goes through the
// decoder as Decode does: ByteLevel's byte alphabet, ByteFallback's <0xXX>,
// Metaspace's and Replace's "▁" (in the middle of a text, always a space),
// Fuse; Strip only trims the text's ends. BPEDecoder and WordPiece are a
// TokenBytesError. An id with no token is an error.
func (t *Tokenizer) TokenBytes(id int) ([]byte, error) {
	s, ok := t.Token(id)
	if !ok {
		return nil, fmt.Errorf("tokenizer: no token with id %d", id)
	}
	c := t.byteChain()
	if c.err != nil {
		return nil, c.err
	}
	b := []byte(s)
	if isNull(t.decRaw) {
		// Without a decoder, Decode joins the tokens with spaces.
		return append([]byte{' '}, b...), nil
	}
	for _, st := range c.steps {
		b = st(b)
	}
	return b, nil
}

func (t *Tokenizer) byteChain() *byteChain {
	t.bytesOnce.Do(func() {
		c := &byteChain{}
		if !isNull(t.decRaw) {
			c.err = c.add(t.decRaw)
		}
		t.bytes = c
	})
	return t.bytes
}

// byteDecoder is one decoder object's fields that TokenBytes reads.
type byteDecoder struct {
	Type        string            `json:"type"`
	Decoders    []json.RawMessage `json:"decoders"`
	Pattern     patternJSON       `json:"pattern"`
	Content     *string           `json:"content"`
	Start       int               `json:"start"`
	Stop        int               `json:"stop"`
	Replacement string            `json:"replacement"`
}

// add appends the steps of one decoder object.
func (c *byteChain) add(raw []byte) error {
	var d byteDecoder
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	var step byteStep
	var err error
	switch d.Type {
	case "ByteLevel":
		step = byteLevelBytes
	case "ByteFallback":
		step = byteFallbackBytes
	case "Fuse":
		c.fused = true
	case "Replace":
		step, err = c.replaceStep(&d)
	case "Metaspace":
		step, err = metaspaceStep(&d)
	case "Strip":
		step, err = c.stripStep(&d)
	case "Sequence":
		for _, r := range d.Decoders {
			if err := c.add(r); err != nil {
				return err
			}
		}
	default:
		return &TokenBytesError{Decoder: d.Type}
	}
	if step != nil {
		c.steps = append(c.steps, step)
	}
	return err
}

func byteFallbackBytes(tok []byte) []byte {
	if b, ok := byteFallbackByte(string(tok)); ok {
		return []byte{b}
	}
	return tok
}

func (c *byteChain) replaceStep(d *byteDecoder) (byteStep, error) {
	content := ""
	if d.Content != nil {
		content = *d.Content
	}
	rp, err := newReplacer(d.Pattern, content)
	if err != nil {
		return nil, fmt.Errorf("decoder Replace: %w", err)
	}
	if c.fused && (rp.re != nil || utf8.RuneCountInString(rp.lit) > 1) {
		// After a Fuse the pattern sees the whole text: a match may span
		// two tokens.
		return nil, &TokenBytesError{Decoder: "Replace of a multi-character pattern after Fuse"}
	}
	return func(tok []byte) []byte { return []byte(rp.apply(string(tok))) }, nil
}

// metaspaceStep: only the first token of a text loses its prefix space.
func metaspaceStep(d *byteDecoder) (byteStep, error) {
	if utf8.RuneCountInString(d.Replacement) != 1 {
		return nil, fmt.Errorf("decoder Metaspace: replacement %q is not one character", d.Replacement)
	}
	rep := d.Replacement
	return func(tok []byte) []byte { return []byte(strings.ReplaceAll(string(tok), rep, " ")) }, nil
}

// stripStep: after a Fuse, Strip trims the text's ends, not a token in the
// middle; before one it trims each token.
func (c *byteChain) stripStep(d *byteDecoder) (byteStep, error) {
	if d.Content == nil || utf8.RuneCountInString(*d.Content) != 1 {
		return nil, errors.New("decoder Strip: content must be one character")
	}
	if c.fused {
		return nil, nil
	}
	r, _ := utf8.DecodeRuneInString(*d.Content)
	strip := stripDecode(r, d.Start, d.Stop)
	return func(tok []byte) []byte { return []byte(strip([]string{string(tok)})[0]) }, nil
}

// byteLevelBytes maps ByteLevel's printable alphabet back to bytes; a token
// with a character outside it (an added token's text) stays as it is, as
// byteLevelDecode keeps it.
func byteLevelBytes(tok []byte) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range string(tok) {
		c, in := runeToByte[r]
		if !in {
			return tok
		}
		out = append(out, c)
	}
	return out
}
