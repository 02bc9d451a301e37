package sampler

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"etchat/internal/fixtures"
)

func fullMask(n int) []uint64 {
	m := make([]uint64, (n+63)/64)
	for i := 0; i < n; i++ {
		m[i>>6] |= 1 << (i & 63)
	}
	return m
}

// With every id allowed, SampleMasked is Sample: the same ids from the same
// seeds, greedy and sampled, on a real logits row.
func TestSampleMaskedAllAllowedIsSample(t *testing.T) {
	row := fixtures.Logits(t, fixtures.Gemma3, "chat0_prefill_last_logits.bin")
	all := fullMask(len(row))
	for _, cfg := range []Sampling{{}, {Temperature: 0.8, TopP: 0.9, Seed: 3}, {Temperature: 1.2, TopK: 40, Seed: 5}, {Temperature: 1, Seed: 7}} {
		a, _ := New(cfg)
		b, _ := New(cfg)
		for i := 0; i < 30; i++ {
			x, err1 := a.Sample(row)
			y, err2 := b.SampleMasked(row, all)
			if x != y || err1 != nil || err2 != nil {
				t.Fatalf("%+v draw %d: Sample %d (%v), SampleMasked %d (%v)", cfg, i, x, err1, y, err2)
			}
		}
	}
}

// Only allowed ids come out, the row is not written, and among the allowed
// the greedy pick is their argmax.
func TestSampleMaskedSubset(t *testing.T) {
	row := fixtures.Logits(t, fixtures.Gemma3, "chat0_prefill_last_logits.bin")
	orig := slices.Clone(row)
	top, _ := Argmax(row)
	rng := rand.New(rand.NewPCG(1, 2))
	mask := make([]uint64, (len(row)+63)/64)
	var allowed []int
	for i := range row {
		if i != top && rng.IntN(50) == 0 {
			mask[i>>6] |= 1 << (i & 63)
			allowed = append(allowed, i)
		}
	}
	g, _ := New(Sampling{})
	got, err := g.SampleMasked(row, mask)
	if err != nil {
		t.Fatal(err)
	}
	want := allowed[0]
	for _, i := range allowed {
		if row[i] > row[want] {
			want = i
		}
	}
	if got != want {
		t.Errorf("greedy masked %d, want %d (the allowed ids' argmax)", got, want)
	}
	s, _ := New(Sampling{Temperature: 1.5, TopP: 0.95, Seed: 11})
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		id, err := s.SampleMasked(row, mask)
		if err != nil {
			t.Fatal(err)
		}
		if mask[id>>6]&(1<<(id&63)) == 0 {
			t.Fatalf("sampled %d, not allowed", id)
		}
		seen[id] = true
	}
	if len(seen) < 2 {
		t.Errorf("200 draws at T=1.5 gave %d distinct ids", len(seen))
	}
	if !slices.Equal(row, orig) {
		t.Error("the logits row was written")
	}
}

func TestSampleMaskedEdges(t *testing.T) {
	row := []float32{1, float32(math.NaN()), float32(math.Inf(-1)), 3}
	g, _ := New(Sampling{})
	if _, err := g.SampleMasked(row, []uint64{0}); !errors.Is(err, ErrNothingAllowed) {
		t.Errorf("empty mask: %v", err)
	}
	if _, err := g.SampleMasked(row, []uint64{1 << 1}); !errors.Is(err, ErrBadLogits) {
		t.Errorf("only a NaN allowed: %v", err)
	}
	if id, err := g.SampleMasked(row, []uint64{1<<1 | 1<<2}); id != 2 || err != nil {
		t.Errorf("NaN and -Inf allowed: %d %v, want 2", id, err)
	}
	// Bits past the row are not ids.
	if id, err := g.SampleMasked(row, []uint64{1<<0 | 1<<9}); id != 0 || err != nil {
		t.Errorf("bit past the row: %d %v", id, err)
	}
	s, _ := New(Sampling{Temperature: 1, Seed: 1})
	if _, err := s.SampleMasked(row, []uint64{1 << 40}); !errors.Is(err, ErrNothingAllowed) {
		t.Errorf("sampled, nothing in the row allowed: %v", err)
	}
	if id, err := s.SampleMasked(row, []uint64{1 << 3}); id != 3 || err != nil {
		t.Errorf("one allowed: %d %v", id, err)
	}
}
