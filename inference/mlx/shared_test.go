//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"etchat/inference/engine"
	"etchat/inference/pte"
	"etchat/internal/fixtures"
)

// The weight sharing of libetchat_runner (inference/native/shared_weights.h)
// on the real library (on a Mac, scripts/check-mac's memory step). What it guarantees everywhere: one 16 KiB-aligned
// copy of each constant segment per model, whatever the number of sessions,
// freed when the last session closes. What it saves depends on MLX's
// allocator: Metal wraps the copy (the sessions share it), MLX's CPU and
// CUDA allocators copy it into each session regardless. TestRealSharedWeights
// measures resident memory for one, two and three sessions with the sharing
// off and on, each in a fresh process, and holds the numbers to what each
// side keeps (docs/native-engine.md, "One copy of the weights").

// memProbeEnv makes TestRealSharedWeightsProbe run (in the child process).
const memProbeEnv = "ETCHAT_TEST_MEM_PROBE"

// pageRound is n rounded up to the library's 16 KiB pages.
func pageRound(n int64) int64 { return (n + 16383) / 16384 * 16384 }

// segmentBytes is what the shared map holds for the file at path, computed
// from the .pte by Go's reader: each distinct constant segment (the named
// data's, and the program's own constant segment, which ExecuTorch also
// loads as a constant) rounded up to 16 KiB, and how many there are.
func segmentBytes(t *testing.T, path string) (bytes, buffers int64) {
	t.Helper()
	f, err := pte.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[int]bool{}
	add := func(i int) {
		if i >= 0 && !seen[i] {
			seen[i] = true
			bytes += pageRound(f.Segments[i].Size)
			buffers++
		}
	}
	add(f.ConstantSegment)
	for _, nd := range f.NamedData {
		add(nd.Segment)
	}
	return bytes, buffers
}

// TestRealSharedWeightsGuarantee: with sessions of one model open, the
// library holds exactly one rounded copy of each of its constant segments;
// a second model adds its own; closing every session frees them all.
func TestRealSharedWeightsGuarantee(t *testing.T) {
	e := realEngine(t)
	if _, ok, _ := e.SharedWeights(); !ok {
		t.Fatal("the library built from this tree must report its shared weights")
	}
	t.Setenv(EnvSharedWeights, "") // the parent's setting must not turn it off
	ctx := context.Background()
	open := func(name string) engine.Session {
		s, err := e.Open(ctx, fixtures.PTE(name), fixtureConfig(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Forward(ctx, seq(1, 4), seq(0, 4)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := func(models, buffers, bytes int64) {
		t.Helper()
		got, _, err := e.SharedWeights()
		if err != nil {
			t.Fatal(err)
		}
		if got != (SharedWeights{Models: models, Buffers: buffers, Bytes: bytes}) {
			t.Fatalf("shared weights %+v, want models %d, buffers %d, bytes %d", got, models, buffers, bytes)
		}
	}
	if err := e.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	want(0, 0, 0)
	aBytes, aBufs := segmentBytes(t, fixtures.PTE(fixtures.Llama3))
	bBytes, bBufs := segmentBytes(t, fixtures.PTE(fixtures.Qwen3))
	if aBufs == 0 || bBufs == 0 {
		t.Fatal("the fixtures have no named data")
	}
	s1 := open(fixtures.Llama3)
	want(1, aBufs, aBytes)
	s2 := open(fixtures.Llama3)
	s3 := open(fixtures.Llama3)
	want(1, aBufs, aBytes) // three sessions, one copy
	for _, s := range []engine.Session{s1, s2, s3} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Two stay parked (they hold their forward), one was closed.
	want(1, aBufs, aBytes)
	// Another model: Open closes the parked sessions of the first first.
	q := open(fixtures.Qwen3)
	want(1, bBufs, bBytes)
	q2 := open(fixtures.Llama3) // Open closes parked ones of other models only
	want(2, aBufs+bBufs, aBytes+bBytes)
	q.Close()
	q2.Close()
	if err := e.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	want(0, 0, 0)
}

// memSample is one line of the probe's output.
type memSample struct {
	sessions             int
	rss, anon, file, pss int64 // bytes
	shared, mlxActive    int64
}

// readStatus is VmRSS, RssAnon and RssFile of /proc/self/status and Pss of
// /proc/self/smaps_rollup, in bytes; on macOS (no /proc) footprint's
// phys_footprint as rss, which counts Metal's buffers, and zeros.
func readStatus(t *testing.T) (rss, anon, file, pss int64) {
	t.Helper()
	if runtime.GOOS == "darwin" {
		return macFootprint(t), 0, 0, 0
	}
	field := func(path, name string) int64 {
		f, err := os.Open(path)
		if err != nil {
			t.Skipf("no %s: resident memory is read on Linux", path)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == name+":" {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				return kb << 10
			}
		}
		t.Fatalf("%s has no %s", path, name)
		return 0
	}
	return field("/proc/self/status", "VmRSS"), field("/proc/self/status", "RssAnon"),
		field("/proc/self/status", "RssFile"), field("/proc/self/smaps_rollup", "Pss")
}

// macFootprint is this process's footprint as macOS's footprint tool
// reports it ("Footprint: 123 MB"), in bytes.
func macFootprint(t *testing.T) int64 {
	t.Helper()
	b, err := exec.Command("footprint", "-p", strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		t.Fatalf("footprint: %v\n%s", err, b)
	}
	fs := strings.Fields(string(b))
	for i, f := range fs {
		if f != "Footprint:" || i+2 >= len(fs) {
			continue
		}
		v, err := strconv.ParseFloat(fs[i+1], 64)
		unit := map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[strings.ToUpper(fs[i+2])]
		if err == nil && unit > 0 {
			return int64(v * unit)
		}
	}
	t.Fatalf("no \"Footprint: N UNIT\" in footprint's output:\n%s", b)
	return 0
}

// TestRealSharedWeightsProbe is the child of TestRealSharedWeights: it
// opens three sessions of llama-bench-bf16 and prints the process's
// memory after each, as MEM lines.
func TestRealSharedWeightsProbe(t *testing.T) {
	if os.Getenv(memProbeEnv) != "1" {
		t.Skip("run by TestRealSharedWeights in a process of its own")
	}
	e := realEngine(t)
	ctx := context.Background()
	name := fixtures.BenchBF16
	report := func(n int) {
		rss, anon, file, pss := readStatus(t)
		w, _, _ := e.SharedWeights()
		active, _, _ := e.lib.mlxMemory()
		fmt.Printf("MEM %d %d %d %d %d %d %d\n", n, rss, anon, file, pss, w.Bytes, active)
	}
	report(0)
	var open []engine.Session
	for i := 1; i <= 3; i++ {
		s, err := e.Open(ctx, fixtures.PTE(name), fixtureConfig(t, name))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
		if _, err := s.Forward(ctx, seq(1, 16), seq(0, 16)); err != nil {
			t.Fatal(err)
		}
		report(i)
	}
	for _, s := range open {
		s.Close()
	}
	if err := e.CloseIdle(); err != nil {
		t.Fatal(err)
	}
	report(-1) // all closed
}

// runProbe runs the probe in a child process with ETCHAT_SHARED_WEIGHTS=v
// and returns its samples by session count (-1: all closed).
func runProbe(t *testing.T, lib, v string) map[int]memSample {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealSharedWeightsProbe$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), memProbeEnv+"=1", EnvSharedWeights+"="+v, EnvLibrary+"="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe (%s=%s): %v\n%s", EnvSharedWeights, v, err, out)
	}
	got := map[int]memSample{}
	for _, l := range strings.Split(string(out), "\n") {
		var m memSample
		if _, err := fmt.Sscanf(l, "MEM %d %d %d %d %d %d %d", &m.sessions, &m.rss, &m.anon, &m.file, &m.pss, &m.shared, &m.mlxActive); err == nil {
			got[m.sessions] = m
		}
	}
	if len(got) != 5 {
		t.Fatalf("probe (%s=%s) printed %d samples, want 5:\n%s", EnvSharedWeights, v, len(got), out)
	}
	return got
}

// TestRealSharedWeights measures resident memory (Linux's /proc) for one,
// two and three sessions of llama-bench-bf16 with the sharing off (each
// session's own mmap of the file, as before) and on, each in a fresh
// process, and logs the table docs/native-engine.md shows. It holds the
// sharing to what it keeps on this device: where MLX copies the weights
// into each session (its CPU and CUDA allocators) a session's own file
// mapping is gone (each session after the first adds about one copy of the
// weights, not two) and the shared copy is held once; on Metal (where MLX
// wraps the shared copy) a second session must add less than half the
// weights.
func TestRealSharedWeights(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("llama-bench-bf16 three times is too slow under -short/-race")
	}
	lib := realEngine(t).lib
	weights := func() int64 {
		b, _ := segmentBytes(t, fixtures.PTE(fixtures.BenchBF16))
		return b
	}()
	before := runProbe(t, lib.path, "0")
	after := runProbe(t, lib.path, "1")
	mib := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
	t.Logf("weights (constant segments, 16 KiB pages) %s MiB; device %s", mib(weights), lib.dev.Kind)
	t.Logf("| sessions | sharing | RSS MiB | anon MiB | file MiB | PSS MiB | shared copy MiB | MLX active MiB |")
	for _, side := range []struct {
		name string
		m    map[int]memSample
	}{{"off (before)", before}, {"on (after)", after}} {
		for _, n := range []int{0, 1, 2, 3, -1} {
			m := side.m[n]
			label := strconv.Itoa(n)
			if n == -1 {
				label = "all closed"
			}
			t.Logf("| %s | %s | %s | %s | %s | %s | %s | %s |", label, side.name, mib(m.rss), mib(m.anon), mib(m.file), mib(m.pss), mib(m.shared), mib(m.mlxActive))
		}
	}
	if before[3].shared != 0 {
		t.Errorf("with sharing off the library holds %d shared bytes", before[3].shared)
	}
	for n := 1; n <= 3; n++ {
		if after[n].shared != weights {
			t.Errorf("%d sessions: the shared copy is %d bytes, want one copy, %d", n, after[n].shared, weights)
		}
	}
	if after[-1].shared != 0 {
		t.Errorf("all sessions closed: %d shared bytes still held", after[-1].shared)
	}
	addBefore, addAfter := before[2].rss-before[1].rss, after[2].rss-after[1].rss
	t.Logf("a second session adds %s MiB resident with sharing off, %s MiB with it on", mib(addBefore), mib(addAfter))
	if lib.dev.Kind == "metal" {
		if addAfter > weights/2 {
			t.Errorf("on Metal a second session adds %d bytes resident; MLX should wrap the shared copy (weights %d)", addAfter, weights)
		}
		return
	}
	// MLX's CPU allocator copies each constant: the second session still
	// adds its copy, but no longer a mapping of the file as well.
	if addAfter > addBefore-weights/2 {
		t.Errorf("a second session adds %d bytes resident with sharing on, %d with it off: the file mapping (%d) should be gone", addAfter, addBefore, weights)
	}
}

// TestRealKernelCacheDir: once the real library is loaded, before any
// program, the process's C environment (what MLX's getenv reads at its
// first JIT) holds MLX_PTX_CACHE_DIR: the folder the binding gave, or the
// user's own value, which wins.
func TestRealKernelCacheDir(t *testing.T) {
	e := realEngine(t)
	libc := map[string]string{"linux": "libc.so.6", "darwin": "/usr/lib/libSystem.B.dylib"}[runtime.GOOS]
	if libc == "" {
		t.Skipf("no libc to ask on %s", runtime.GOOS)
	}
	h, err := purego.Dlopen(libc, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	var getenv func(string) string
	purego.RegisterLibFunc(&getenv, h, "getenv")
	want := e.lib.kernelCache
	if v, ok := os.LookupEnv("MLX_PTX_CACHE_DIR"); ok {
		want = v // the user's value, set before the process started
	}
	if want == "" {
		t.Fatal("the binding gave the library no kernel cache folder")
	}
	if got := getenv("MLX_PTX_CACHE_DIR"); got != want {
		t.Errorf("MLX_PTX_CACHE_DIR in the C environment is %q, want %q", got, want)
	}
}
