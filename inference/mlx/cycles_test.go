//go:build linux

package mlx

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

// procStatus reads a "Key: N [kB]" line of /proc/self/status.
func procStatus(t *testing.T, key string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", key)
	return 0
}

// TestRealOpenCloseCycles: conversations opened and closed stay within a
// memory and thread bound: 2,000 on one model through the engine (which
// reuses one session), 200 alternating between two cache configs (each a
// new session: the engine closes the parked one of the other config and
// loads "forward" again), and 300 programs and sessions loaded and freed
// through the library itself. ExecuTorch's MLXHandle made a new MLX stream
// per loaded "forward", which MLX never frees (on its CPU backend a thread
// per stream, measured here as exactly one per cycle; on Metal a command
// queue); our patch gives it the library thread's default stream, so the
// thread count must stay flat.
func TestRealOpenCloseCycles(t *testing.T) {
	e := realEngine(t)
	ctx := context.Background()
	path := fixtures.PTE(fixtures.Llama3)
	cfg := fixtureConfig(t, fixtures.Llama3)
	other := fixtureConfig(t, fixtures.Llama3)
	other.Capacity--
	c, ls, err := ToC(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engineCycle := func(cfg *kvcache.Config) {
		s, err := e.Open(ctx, path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Forward(ctx, []int64{1}, []int64{0}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	libCycle := func() {
		p, err := e.lib.openProgram(path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.lib.openSession(p, &c, ls)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, 128256)
		if _, err := e.lib.forward(h, []int64{1}, []int64{0}, buf, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.lib.closeSession(h); err != nil {
			t.Fatal(err)
		}
		if err := e.lib.closeProgram(p); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 { // warm up: the runtime's caches, Go's threads
		engineCycle(cfg)
		libCycle()
	}
	rss0, thr0 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	for range 2000 {
		engineCycle(cfg)
	}
	if e.Idle() != 1 {
		t.Errorf("%d sessions parked after 2,000 cycles on one model, want 1", e.Idle())
	}
	rss1, thr1 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	const configCycles, libCycles = 200, 300
	for i := range configCycles {
		if i%2 == 0 {
			engineCycle(other)
		} else {
			engineCycle(cfg)
		}
	}
	rss2, thr2 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	for range libCycles {
		libCycle()
	}
	rss3, thr3 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	t.Logf("RSS %d → %d (2,000 engine cycles) → %d (%d config changes) → %d kB (%d library cycles); threads %d → %d → %d → %d",
		rss0, rss1, rss2, configCycles, rss3, libCycles, thr0, thr1, thr2, thr3)
	if rss1-rss0 > 16<<10 || thr1 > thr0+4 {
		t.Errorf("2,000 engine cycles: RSS +%d kB, threads +%d; bound 16 MiB, 4", rss1-rss0, thr1-thr0)
	}
	if perCycle := (rss2 - rss1) / configCycles; perCycle > 64 || thr2 > thr1+4 {
		t.Errorf("%d sessions opened and closed: RSS +%d kB per cycle, threads +%d; bound 64 kB per cycle, 4 threads",
			configCycles, perCycle, thr2-thr1)
	}
	if perCycle := (rss3 - rss2) / libCycles; perCycle > 64 || thr3 > thr2+4 {
		t.Errorf("%d library cycles: RSS +%d kB per cycle, threads +%d; bound 64 kB per cycle, 4 threads",
			libCycles, perCycle, thr3-thr2)
	}
}
