// Package fuzzing is shared by the module's fuzz targets (tests only): a
// TestMain that bounds the fuzzer's minimisation, and a timer that records
// the slowest input for scripts/fuzz.
package fuzzing

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// MinimizeTime is the -test.fuzzminimizetime Main sets when fuzzing
// without one. Go's default (60 s) stalls a worker: every input that finds
// new coverage is minimised first, and the minimiser is quadratic in the
// input's length, so a few-KB input runs into the 60 s cap while nothing
// else is fuzzed (FuzzOpen made 101 executions in 30 s with the default,
// 237,560 with 1x; docs/fuzzing.md).
const MinimizeTime = "1x"

// Main is a TestMain: with -test.fuzz given and -test.fuzzminimizetime
// not, it sets the latter to MinimizeTime, then runs the tests.
func Main(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if fz := flag.Lookup("test.fuzz"); fz != nil && fz.Value.String() != "" && !set {
		if err := flag.Set("test.fuzzminimizetime", MinimizeTime); err != nil {
			fmt.Fprintln(os.Stderr, "fuzzing:", err)
		}
	}
	os.Exit(m.Run())
}

// SlowestEnv names a folder where Time records, one file per process, the
// slowest input seen, in CPU time (the thread's on Linux, the process's on
// other Unixes, wall time elsewhere) less GC assists: "<ns> <bytes>" for the longest input and for the
// longest per byte (sizes under MinBytes counted as MinBytes). Unset, Time
// only measures.
const SlowestEnv = "ETCHAT_FUZZ_SLOWEST"

// MinBytes is the size below which an input counts as MinBytes long in
// the per-byte measure, so that a 1-byte input's fixed cost does not pass
// for a slow path.
const MinBytes = 64

var (
	mu              sync.Mutex
	longest, perB   time.Duration
	longestN, perBN int
	out             = os.Getenv(SlowestEnv)
)

// Warmup is how many inputs of each process are not timed: the first
// ones pay for one-time work (lazily built tables, first-touch page
// faults), 10–16 ms in a 3-minute campaign, which is no input's cost.
const Warmup = 16

var calls atomic.Int64

var assistSample = []metrics.Sample{{Name: "/gc/cpu/assist:cpu-seconds"}}

// assistTime is the CPU time goroutines have spent assisting the GC.
func assistTime() time.Duration {
	metrics.Read(assistSample)
	if assistSample[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(assistSample[0].Value.Float64() * 1e9)
}

// Time starts timing one input of n bytes; call the result when the
// input is done: defer fuzzing.Time(len(data))().
func Time(n int) func() {
	if out == "" || calls.Add(1) <= Warmup {
		return func() {}
	}
	begin()
	start, assist := now(), assistTime()
	return func() {
		// GC assists are the collector's work (marking the worker's whole
		// heap) charged to whoever allocates: on a starved machine they
		// made 4-byte inputs look like 28 ms ones.
		d := now() - start - (assistTime() - assist)
		end()
		mu.Lock()
		defer mu.Unlock()
		per := d / time.Duration(max(n, MinBytes))
		if d <= longest && per <= perB {
			return
		}
		if d > longest {
			longest, longestN = d, n
		}
		if per > perB {
			perB, perBN = per, n
		}
		line := fmt.Sprintf("%d %d %d %d\n", longest.Nanoseconds(), longestN, perB.Nanoseconds(), perBN)
		_ = os.WriteFile(filepath.Join(out, fmt.Sprint(os.Getpid())), []byte(line), 0o644)
	}
}
