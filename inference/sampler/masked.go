package sampler

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrNothingAllowed: the mask allows no id of the row.
var ErrNothingAllowed = errors.New("sampler: the mask allows no token")

// SampleMasked is Sample restricted to the ids whose bit is set in allowed
// (bit id%64 of word id/64; ids past the mask are not allowed): the others
// are skipped as if they were not in the row, so top-k and top-p apply to
// the allowed ids. logits is only read (it may be an engine's own buffer).
// With every id allowed it picks what Sample picks, from the same random
// stream. Greedy sampling takes the row's argmax when it is allowed, and
// otherwise scans only the allowed ids.
func (s *Sampler) SampleMasked(logits []float32, allowed []uint64) (int, error) {
	if s.cfg.Greedy() {
		if best, err := Argmax(logits); err == nil && best < 64*len(allowed) && allowed[best>>6]&(1<<(best&63)) != 0 {
			return best, nil
		}
		return argmaxMasked(logits, allowed)
	}
	// The allowed ids' logits, compacted, are a row Sample draws from.
	ids, vals := s.mids[:0], s.mvals[:0]
	for w, word := range allowed {
		for word != 0 {
			i := w<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			if i >= len(logits) {
				break
			}
			ids, vals = append(ids, int32(i)), append(vals, logits[i])
		}
	}
	s.mids, s.mvals = ids, vals
	if len(ids) == 0 {
		return 0, ErrNothingAllowed
	}
	k, err := s.Sample(vals)
	if err != nil {
		return 0, err
	}
	return int(ids[k]), nil
}

// argmaxMasked is Argmax over the allowed ids: the first of the largest,
// NaN skipped.
func argmaxMasked(logits []float32, allowed []uint64) (int, error) {
	best, bestV, first := -1, float32(math.Inf(-1)), -1
	n := 0
	for w, word := range allowed {
		for word != 0 {
			i := w<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			if i >= len(logits) {
				break
			}
			n++
			v := logits[i]
			if v != v {
				continue
			}
			if first < 0 {
				first = i
			}
			if v > bestV {
				best, bestV = i, v
			}
		}
	}
	switch {
	case best >= 0:
		return best, nil
	case first >= 0: // all allowed are -Inf
		return first, nil
	case n == 0:
		return 0, ErrNothingAllowed
	}
	return 0, fmt.Errorf("%w: all %d allowed values are NaN", ErrBadLogits, n)
}
