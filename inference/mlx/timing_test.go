//go:build darwin || linux || freebsd || netbsd

package mlx

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestStepTiming: with ETCHAT_NATIVE_TIMING=1 every forward through the
// real ABI layer (over the fake backend) is timed, its parts fit inside
// its total, and the session prints the breakdown when it closes.
func TestStepTiming(t *testing.T) {
	var out bytes.Buffer
	e, err := New(Options{Library: abiLayerLib(t), Getenv: envOf(map[string]string{EnvTiming: "1"}), TimingOut: &out})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ms := s.(*Session)
	if _, err := s.Forward(ctx, []int64{1, 2, 3}, []int64{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	for p := int64(3); p < 8; p++ {
		if _, err := s.Forward(ctx, []int64{4}, []int64{p}); err != nil {
			t.Fatal(err)
		}
	}
	// A failed step is not a sample.
	if _, err := s.Forward(ctx, []int64{4}, []int64{20}); err == nil {
		t.Fatal("a step off the cache's length ran")
	}
	got := ms.StepTiming()
	if len(got) != 6 {
		t.Fatalf("%d samples, want 6", len(got))
	}
	for i, st := range got {
		want := 1
		if i == 0 {
			want = 3
		}
		c := st.C
		parts := c.ToThreadNs + c.FromThreadNs + c.ChecksNs + c.InputsNs + c.ExecuteNs + c.OutputsNs + c.CacheNs + c.LogitsNs
		switch {
		case st.Tokens != want || c.Tokens != int64(want):
			t.Errorf("sample %d: tokens %d (library %d), want %d", i, st.Tokens, c.Tokens, want)
		case c.TotalNs <= 0 || c.ToThreadNs <= 0 || c.FromThreadNs <= 0 || c.ChecksNs <= 0 || c.LogitsNs <= 0:
			t.Errorf("sample %d: a part the ABI layer times is not positive: %+v", i, c)
		case parts > c.TotalNs || c.TotalNs > st.Call.Nanoseconds() || st.Call > st.Go:
			t.Errorf("sample %d: parts %d ns > library total %d > call %v > Go total %v", i, parts, c.TotalNs, st.Call, st.Go)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	report := out.String()
	for _, want := range []string{"5 decode steps, 1 prefill steps (3 tokens)", "hand-over to the library thread", "ExecuTorch execute"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if lines := strings.Count(report, "\n"); lines != 2+len(timingParts) {
		t.Errorf("report has %d lines, want %d:\n%s", lines, 2+len(timingParts), report)
	}
}

// Without the variable nothing is sampled or printed.
func TestStepTimingOff(t *testing.T) {
	var out bytes.Buffer
	e, err := New(Options{Library: abiLayerLib(t), Getenv: envOf(nil), TimingOut: &out})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := e.Open(ctx, writeProgram(t, "vocab=16"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forward(ctx, []int64{1}, []int64{0}); err != nil {
		t.Fatal(err)
	}
	if got := s.(*Session).StepTiming(); got != nil {
		t.Errorf("timing off, yet %d samples", len(got))
	}
	s.Close()
	if out.Len() != 0 {
		t.Errorf("timing off, yet a report:\n%s", out.String())
	}
}

func TestSummarizeTimingMedian(t *testing.T) {
	var ss []StepSample
	for _, us := range []int64{5, 1, 3, 100} {
		ss = append(ss, StepSample{Tokens: 1, Go: 0, C: CStepTiming{ExecuteNs: us * 1000}})
	}
	for _, p := range SummarizeTiming(ss) {
		if p.Name == "ExecuTorch execute (MLX, cache update)" {
			if p.Mean != 27.25 || p.P50 != 4 {
				t.Errorf("execute mean %v p50 %v, want 27.25 and 4", p.Mean, p.P50)
			}
			return
		}
	}
	t.Error("no execute part")
}
