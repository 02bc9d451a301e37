//go:build arm64 && !purego

package cpu

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// setSIMD switches the NEON kernels off (on: as detected) and returns
// what restores them.
func setSIMD(on bool) (restore func()) {
	n := useNEON
	useNEON = on && n
	return func() { useNEON = n }
}

// TestARM64Features logs what the CPU offers the kernels and, under
// scripts/test-arm64, requires what the emulated CPU model should have
// (ETCHAT_ARM64_EXPECT: a comma-separated list of dotprod, i8mm).
func TestARM64Features(t *testing.T) {
	has := map[string]bool{"asimd": cpu.ARM64.HasASIMD, "dotprod": cpu.ARM64.HasASIMDDP, "i8mm": cpu.ARM64.HasI8MM}
	t.Logf("asimd %v, dotprod %v, i8mm %v", has["asimd"], has["dotprod"], has["i8mm"])
	want := os.Getenv("ETCHAT_ARM64_EXPECT")
	if want == "" {
		return
	}
	for _, f := range strings.Split(want, ",") {
		ok, known := has[f]
		if !known {
			t.Fatalf("ETCHAT_ARM64_EXPECT: unknown feature %q", f)
		}
		if !ok {
			t.Errorf("this CPU lacks %s (QEMU_CPU=%s)", f, os.Getenv("QEMU_CPU"))
		}
	}
	if !strings.Contains(want, "i8mm") && has["i8mm"] {
		t.Errorf("this CPU has i8mm, not expected (QEMU_CPU=%s): the no-I8MM path goes untested", os.Getenv("QEMU_CPU"))
	}
}

// qPrepPairsKernel names the input quantizer qPrepPairsRow runs.
func qPrepPairsKernel() string {
	if useNEON {
		return "NEON"
	}
	return "Go"
}
