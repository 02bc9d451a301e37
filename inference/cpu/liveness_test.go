package cpu

import (
	"context"
	"math"
	"testing"

	"etchat/internal/fixtures"
)

// A prefill that reuses its buffers (liveness.go) gives every logit the
// bits of one that does not, over every row and in the decode steps
// after it, and its arena is smaller.
func TestReuseBuffersBitIdentical(t *testing.T) {
	defer func(v bool) { reuseBuffers = v }(reuseBuffers)
	for _, name := range []string{fixtures.BenchQ4, fixtures.Llama3Q4, fixtures.BenchBF16, fixtures.Gemma4} {
		t.Run(name, func(t *testing.T) {
			var logits [2][]float32
			var arena [2]int
			for i, reuse := range []bool{false, true} {
				reuseBuffers = reuse
				s, l := openFixture(t, name, "fp32")
				n := min(32, l.PrefillChunk)
				ids, pos := make([]int64, n), make([]int64, n)
				for j := range ids {
					ids[j], pos[j] = int64(100+7*j), int64(j)
				}
				out, err := s.(*session).ForwardAll(context.Background(), ids, pos)
				if err != nil {
					t.Fatal(err)
				}
				logits[i] = append(logits[i], out...)
				arena[i] = s.(*session).arena.bumped
				for j := range 3 {
					out, err := s.Forward(context.Background(), []int64{int64(5 + j)}, []int64{int64(n + j)})
					if err != nil {
						t.Fatal(err)
					}
					logits[i] = append(logits[i], out...)
				}
				s.Close()
			}
			if len(logits[0]) != len(logits[1]) {
				t.Fatalf("%d logits against %d", len(logits[1]), len(logits[0]))
			}
			for j := range logits[0] {
				if math.Float32bits(logits[0][j]) != math.Float32bits(logits[1][j]) {
					t.Fatalf("logit %d: %v reusing buffers, %v not", j, logits[1][j], logits[0][j])
				}
			}
			if arena[1] >= arena[0] {
				t.Errorf("the prefill took %d arena floats reusing buffers, %d not", arena[1], arena[0])
			}
			t.Logf("the prefill took %d arena floats reusing buffers, %d not", arena[1], arena[0])
		})
	}
}
