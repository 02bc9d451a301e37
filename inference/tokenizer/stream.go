package tokenizer

import "strings"

// StreamDecoder turns ids into text one at a time, for showing generated
// text as it comes. Every piece it returns is complete UTF-8, and the
// pieces of Add followed by Flush concatenate to Decode of all the ids.
//
// It keeps a few already shown tokens as context, so that decoders that
// treat the first token specially (Metaspace, Strip) and bytes split across
// tokens (ByteLevel, ByteFallback) come out as in a whole decode. A run of
// byte-fallback tokens is held until it ends (HF turns a whole ill-formed
// run into U+FFFDs). A StreamDecoder is for one goroutine at a time.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	ctx         []int  // already shown ids kept as context
	ctxText     string // Decode(ctx)
	pend        []int  // ids not shown yet
}

// contextTokens is how many shown ids are kept as context.
const contextTokens = 4

// maxPending bounds how long ill-formed bytes are held back waiting to
// become a character (each Add decodes the pending ids again).
const maxPending = 256

// NewStreamDecoder starts a stream; skipSpecial drops special tokens.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial}
}

// Add feeds one id and returns the text it completes ("" while a
// character is incomplete).
func (d *StreamDecoder) Add(id int) string {
	s, ok := d.t.Token(id)
	if !ok || (d.skipSpecial && d.t.special[s]) {
		return "" // Decode drops it too
	}
	d.pend = append(d.pend, id)
	if d.t.decHasBF {
		// ByteFallback turns a whole run of byte tokens into U+FFFDs when
		// any part of it is ill-formed: wait for the run to end.
		if _, isByte := byteFallbackByte(s); isByte {
			return ""
		}
	}
	all := append(append(make([]int, 0, len(d.ctx)+len(d.pend)), d.ctx...), d.pend...)
	full := d.t.Decode(all, d.skipSpecial)
	if !strings.HasPrefix(full, d.ctxText) {
		return "" // context not settled yet
	}
	if strings.HasSuffix(full, "\uFFFD") && len(d.pend) < maxPending {
		return "" // maybe an incomplete character
	}
	out := full[len(d.ctxText):]
	if len(all) > contextTokens {
		all = all[len(all)-contextTokens:]
	}
	d.ctx = all
	d.ctxText = d.t.Decode(d.ctx, d.skipSpecial)
	d.pend = d.pend[:0]
	return out
}

// Flush returns whatever text is still held back (e.g. a final incomplete
// character, as U+FFFD) and resets the stream.
func (d *StreamDecoder) Flush() string {
	if len(d.pend) == 0 {
		d.ctx, d.ctxText = nil, ""
		return ""
	}
	all := append(append([]int{}, d.ctx...), d.pend...)
	full := d.t.Decode(all, d.skipSpecial)
	out := full
	if strings.HasPrefix(full, d.ctxText) {
		out = full[len(d.ctxText):]
	}
	d.ctx, d.ctxText, d.pend = nil, "", nil
	return out
}
