package mlx

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// TestRealFootprint: what two sessions on the real library cost in the
// process's memory as macOS accounts it (footprint, which counts Metal's
// buffers; Mac-only, scripts/check-mac runs it). It logs the numbers and
// fails if footprint cannot read this process.
func TestRealFootprint(t *testing.T) {
	fp, err := exec.LookPath("footprint")
	if err != nil {
		t.Skip("footprint is macOS's (scripts/check-mac runs this test there)")
	}
	e := realEngine(t)
	measure := func(what string) {
		b, err := exec.Command(fp, "-p", strconv.Itoa(os.Getpid())).CombinedOutput()
		if err != nil {
			t.Fatalf("footprint: %v\n%s", err, b)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "Footprint:") || strings.Contains(l, "phys_footprint") {
				t.Logf("footprint %s: %s", what, strings.TrimSpace(l))
			}
		}
	}
	measure("with the library loaded")
	name := fixtures.Llama3
	ctx := context.Background()
	for i := range 2 {
		s, err := e.Open(ctx, fixtures.PTE(name), fixtureConfig(t, name))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Forward(ctx, seq(1, 16), seq(0, 16)); err != nil {
			t.Fatal(err)
		}
		measure("after session " + strconv.Itoa(i+1) + " (16 tokens)")
	}
	active, peak, err := e.lib.mlxMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("footprint MLX active %d B, peak %d B", active, peak)
}
