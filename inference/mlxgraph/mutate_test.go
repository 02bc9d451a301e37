package mlxgraph

import (
	"math/rand"
	"testing"
	"time"

	"etchat/internal/fixtures"
)

// TestMutations: random byte edits, insertions, deletions and chunk copies
// of a real blob parse or fail quickly, never panic or hang.
func TestMutations(t *testing.T) {
	blob := blobOf(t, fixtures.Llama3)
	iters := 5000
	if testing.Short() {
		iters = 500
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < iters; i++ {
		b := append([]byte(nil), blob...)
		for k := 0; k < 1+r.Intn(4); k++ {
			switch r.Intn(4) {
			case 0:
				b[24+r.Intn(len(b)-24)] = byte(r.Intn(256))
			case 1: // insert
				at := 24 + r.Intn(len(b)-24)
				n := 1 + r.Intn(64)
				b = append(b[:at], append(make([]byte, n), b[at:]...)...)
			case 2: // delete
				at := 24 + r.Intn(len(b)-24)
				n := min(1+r.Intn(64), len(b)-at)
				b = append(b[:at], b[at+n:]...)
			case 3: // copy a chunk over another
				from, to := 24+r.Intn(len(b)-24), 24+r.Intn(len(b)-24)
				copy(b[to:], b[from:min(len(b), from+1+r.Intn(64))])
			}
			if len(b) < 64 {
				break
			}
		}
		done := make(chan bool)
		go func() { Parse(b); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("Parse did not return within 2s at iteration %d", i)
		}
	}
}
