//go:build linux

package mlx

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

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

// TestRealOpenCloseCycles: 2,000 conversations opened and closed on one
// model stay within a memory and thread bound through the engine, which
// reuses one session. Through the library itself (a program and a session
// loaded and freed each time) MLX keeps what it made per loaded "forward":
// ExecuTorch's MLXHandle makes a new MLX stream, which MLX never frees (on
// its CPU backend a thread per stream, measured here as exactly one thread
// per cycle; on Metal a command queue, which only a Mac shows). The bound
// there is that: at most one thread and a few tens of kB per cycle, so a
// leak of ours on top would show.
func TestRealOpenCloseCycles(t *testing.T) {
	e := realEngine(t)
	ctx := context.Background()
	path := fixtures.PTE(fixtures.Llama3)
	cfg := fixtureConfig(t, fixtures.Llama3)
	c, ls, err := ToC(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engineCycle := func() {
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
		if _, err := e.lib.forward(h, []int64{1}, []int64{0}, buf, false); err != nil {
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
		engineCycle()
		libCycle()
	}
	rss0, thr0 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	libCycles := 300
	for range 2000 {
		engineCycle()
	}
	if e.Idle() != 1 {
		t.Errorf("%d sessions parked after 2,000 cycles on one model, want 1", e.Idle())
	}
	rss1, thr1 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	for range libCycles {
		libCycle()
	}
	rss2, thr2 := procStatus(t, "VmRSS"), procStatus(t, "Threads")
	t.Logf("RSS %d → %d (2,000 engine cycles) → %d kB (%d library cycles); threads %d → %d → %d",
		rss0, rss1, rss2, libCycles, thr0, thr1, thr2)
	if rss1-rss0 > 16<<10 || thr1 > thr0+4 {
		t.Errorf("2,000 engine cycles: RSS +%d kB, threads +%d; bound 16 MiB, 4", rss1-rss0, thr1-thr0)
	}
	// MLX's stream per loaded forward: one thread, its stack and the
	// stream's state (measured ~38 kB per cycle).
	if perCycle := (rss2 - rss1) / int64(libCycles); perCycle > 64 || thr2 > thr1+int64(libCycles)+4 {
		t.Errorf("%d library cycles: RSS +%d kB per cycle, threads +%d; bound 64 kB and one thread (MLX's stream) per cycle",
			libCycles, perCycle, thr2-thr1)
	}
}
