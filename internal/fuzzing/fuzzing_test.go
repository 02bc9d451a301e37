package fuzzing

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTimeRecordsTheSlowest(t *testing.T) {
	out = t.TempDir()
	defer func() { out = ""; longest, perB, longestN, perBN = 0, 0, 0, 0 }()
	calls.Store(Warmup) // past the warm-up
	run := func(n int, d time.Duration) {
		done := Time(n)
		for t0 := now(); now()-t0 < d; {
		}
		done()
	}
	run(1000, 20*time.Millisecond) // the longest: 20 ms, 20 µs/B
	run(10, 5*time.Millisecond)    // the slowest per byte: 5 ms / 64 B (the floor)
	run(5000, time.Millisecond)    // neither
	b, err := os.ReadFile(filepath.Join(out, fmt.Sprint(os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	var l, ln, p, pn int64
	if _, err := fmt.Sscan(string(b), &l, &ln, &p, &pn); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	if ln != 1000 || l < 20e6 || l > 1e9 || pn != 10 || p < 5e6/64 || p > l/64 {
		t.Errorf("recorded longest %d ns (%d B), per byte %d ns (%d B)", l, ln, p, pn)
	}
}
