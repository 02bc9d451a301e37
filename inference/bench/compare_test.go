package bench

import (
	"math"
	"strings"
	"testing"
)

func TestSelectors(t *testing.T) {
	for _, bad := range []string{"", "model", "color=red", "since=yesterday", "-3"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	s, err := ParseSelector("model=llama, engine=cpu,latest")
	if err != nil || s.Model != "llama" || s.Engine != "cpu" || !s.Latest || len(s.IDs) != 0 {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = ParseSelector("4,5,since=2026-11-01")
	if err != nil || len(s.IDs) != 2 || s.IDs[1] != 5 || s.Since.IsZero() {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestWelch(t *testing.T) {
	// Reference values of Student's t two-sided tail.
	for _, c := range []struct{ t, df, p float64 }{
		{0, 5, 1},
		{1, 1, 0.5},
		{2, 10, 0.073388034},
		{2.228138852, 10, 0.05},
		{-3.5, 4, 0.024896},
	} {
		if got := StudentTTwoSided(c.t, c.df); math.Abs(got-c.p) > 1e-5 {
			t.Errorf("t=%v df=%v: p %v, want %v", c.t, c.df, got, c.p)
		}
	}
	// Welch with equal n and sd: t = (10-12)/sqrt(2*4/5) = -1.5811, df = 8.
	if got := WelchP(10, 2, 5, 12, 2, 5); math.Abs(got-0.15252) > 1e-4 {
		t.Errorf("welch p %v", got)
	}
}

func TestMannWhitney(t *testing.T) {
	// Complete separation of 5 and 5: U = 0, exact p = 2/252.
	if got := MannWhitneyP([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}); math.Abs(got-2.0/252) > 1e-12 {
		t.Errorf("separated: %v", got)
	}
	// Interleaved samples: U = 12 of 25 is the middle; p = 1.
	if got := MannWhitneyP([]float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}); got < 0.6 {
		t.Errorf("interleaved: %v", got)
	}
	// 3 vs 3, separated: 2/20.
	if got := MannWhitneyP([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(got-0.1) > 1e-12 {
		t.Errorf("3v3: %v", got)
	}
	// With ties: the normal approximation; identical samples give 1.
	if got := MannWhitneyP([]float64{1, 1, 1}, []float64{1, 1, 1}); got != 1 {
		t.Errorf("all tied: %v", got)
	}
	// Normal approximation for 25 vs 25 separated samples: tiny p.
	var a, b []float64
	for i := range 25 {
		a, b = append(a, float64(i)), append(b, float64(i+100))
	}
	if got := MannWhitneyP(a, b); got > 1e-8 {
		t.Errorf("25v25: %v", got)
	}
}

func TestCompareFewReps(t *testing.T) {
	mk := func(ns ...int64) *Result {
		r := &Result{Test: Test{NGen: 10}}
		for _, n := range ns {
			r.Reps = append(r.Reps, Rep{Ns: n})
		}
		return r
	}
	ch := Compare([]*Result{mk(1e8)}, []*Result{mk(2e8)}, CompareOptions{})[0]
	if !ch.Flagged || !math.IsNaN(ch.P) || !strings.Contains(ch.Note, "no noise estimate") || ch.DeltaPct != -50 {
		t.Errorf("%+v", ch)
	}
	ch = Compare([]*Result{mk(1e8)}, []*Result{mk(1.05e8)}, CompareOptions{})[0]
	if ch.Flagged {
		t.Errorf("small change without noise flagged: %+v", ch)
	}
	// Identical samples on both sides: no change.
	ch = Compare([]*Result{mk(1e8, 1e8)}, []*Result{mk(1e8, 1e8)}, CompareOptions{})[0]
	if ch.Flagged || ch.P != 1 {
		t.Errorf("%+v", ch)
	}
}

// Tests of two runs whose caches differ (bf16, fp32) are matched by kind
// and size, the cache shown as a column.
func TestMatchTableIgnoresTheCache(t *testing.T) {
	mk := func(np, ng int, dtype string, ts float64) *Result {
		r := &Result{Test: Test{NPrompt: np, NGen: ng, Cache: Cache{DType: dtype}}}
		tok := max(np, ng)
		r.Reps = []Rep{{Ns: int64(float64(tok) / ts * 1e9)}}
		return r
	}
	base := []*Result{mk(32, 0, "bf16", 100), mk(0, 16, "bf16", 50)}
	cand := []*Result{mk(32, 0, "fp32", 80), mk(0, 16, "fp32", 55)}
	text := MatchTable(base, cand)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "pp32") || !strings.Contains(lines[1], "-20.0%") ||
		!strings.HasPrefix(lines[2], "tg16") || !strings.Contains(lines[2], "+10.0%") {
		t.Errorf("match table:\n%s", text)
	}
}
