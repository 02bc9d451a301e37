package mlx

// Header section 6: step timing (optional), and the per-step breakdown
// that ETCHAT_NATIVE_TIMING=1 prints.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// EnvTiming names the environment variable that turns the per-step timing
// on ("1"): every forward then records where its time went, on our side
// of the model and in the library, and each session prints the breakdown
// (µs per step, mean and p50, decode and prefill apart) to standard error
// when it closes. Off, a forward reads no clock.
const EnvTiming = "ETCHAT_NATIVE_TIMING"

// CStepTiming mirrors etchat_step_timing.
type CStepTiming struct {
	TotalNs      int64
	ToThreadNs   int64
	FromThreadNs int64
	ChecksNs     int64
	InputsNs     int64
	ExecuteNs    int64
	OutputsNs    int64
	CacheNs      int64
	LogitsNs     int64
	Tokens       int64
}

type timingFuncs struct {
	// nil when the library lacks section 6 (an older build): no timing.
	setTiming  func(on int32) int32
	lastTiming func(out *CStepTiming) int32
}

func (f *timingFuncs) bind(l *library) {
	if !l.has("etchat_set_timing") || !l.has("etchat_last_timing") {
		return
	}
	if l.symbol(&f.setTiming, "etchat_set_timing") != nil || l.symbol(&f.lastTiming, "etchat_last_timing") != nil {
		f.setTiming, f.lastTiming = nil, nil
	}
}

// StepSample is one forward's timing: Go's clock around Session.Forward
// and around the C call, and the library's own parts.
type StepSample struct {
	Tokens int
	Go     time.Duration // Session.Forward, entry to return
	Call   time.Duration // the purego call, entry to return
	C      CStepTiming
}

// timingOn reads EnvTiming.
func timingOn(env func(string) string) bool {
	v := strings.TrimSpace(env(EnvTiming))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// stepTimer collects a session's samples while timing is on.
type stepTimer struct {
	out     io.Writer
	samples []StepSample
}

// TimingPart is one line of the breakdown: µs per step.
type TimingPart struct {
	Name      string
	Mean, P50 float64
}

// timingParts names the breakdown's lines, each with its value of a sample
// in ns. They add up to Go's total (the first line): the rest of the C
// call is what the named parts leave of the library's total.
var timingParts = []struct {
	name string
	ns   func(s StepSample) int64
}{
	{"total (Session.Forward)", func(s StepSample) int64 { return s.Go.Nanoseconds() }},
	{"Go side (checks, lock, buffer)", func(s StepSample) int64 { return (s.Go - s.Call).Nanoseconds() }},
	{"Go -> C -> Go (purego, thread pin)", func(s StepSample) int64 { return s.Call.Nanoseconds() - s.C.TotalNs }},
	{"hand-over to the library thread", func(s StepSample) int64 { return s.C.ToThreadNs }},
	{"hand-back from the library thread", func(s StepSample) int64 { return s.C.FromThreadNs }},
	{"ABI checks (handle, ids, step)", func(s StepSample) int64 { return s.C.ChecksNs }},
	{"input tensors", func(s StepSample) int64 { return s.C.InputsNs }},
	{"ExecuTorch execute (MLX, cache update)", func(s StepSample) int64 { return s.C.ExecuteNs }},
	{"output tensor", func(s StepSample) int64 { return s.C.OutputsNs }},
	{"cache bookkeeping (length, rings)", func(s StepSample) int64 { return s.C.CacheNs }},
	{"logits copy to Go's buffer", func(s StepSample) int64 { return s.C.LogitsNs }},
	{"rest of the C call (guard, task)", func(s StepSample) int64 {
		c := s.C
		return c.TotalNs - c.ToThreadNs - c.FromThreadNs - c.ChecksNs - c.InputsNs - c.ExecuteNs - c.OutputsNs - c.CacheNs - c.LogitsNs
	}},
}

// SummarizeTiming is the breakdown of samples: one part per line of
// timingParts, mean and median in µs per step.
func SummarizeTiming(samples []StepSample) []TimingPart {
	if len(samples) == 0 {
		return nil
	}
	out := make([]TimingPart, 0, len(timingParts))
	vals := make([]float64, len(samples))
	for _, p := range timingParts {
		sum := 0.0
		for i, s := range samples {
			vals[i] = float64(p.ns(s)) / 1e3
			sum += vals[i]
		}
		slices.Sort(vals)
		med := vals[len(vals)/2]
		if len(vals)%2 == 0 {
			med = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
		}
		out = append(out, TimingPart{Name: p.name, Mean: sum / float64(len(vals)), P50: med})
	}
	return out
}

// WriteTiming writes the breakdown of samples, decode steps (one token)
// and prefill steps apart, as a table in µs per step.
func WriteTiming(w io.Writer, samples []StepSample) error {
	var decode, prefill []StepSample
	prefillTokens := 0
	for _, s := range samples {
		if s.Tokens == 1 {
			decode = append(decode, s)
		} else {
			prefill = append(prefill, s)
			prefillTokens += s.Tokens
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "native timing (%s=1), µs per step, mean / p50: %d decode steps, %d prefill steps (%d tokens)\n",
		EnvTiming, len(decode), len(prefill), prefillTokens)
	d, p := SummarizeTiming(decode), SummarizeTiming(prefill)
	fmt.Fprintf(&b, "  %-40s %21s %21s\n", "", "decode", "prefill")
	for i, part := range timingParts {
		fmt.Fprintf(&b, "  %-40s %21s %21s\n", part.name, cell(d, i), cell(p, i))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(parts []TimingPart, i int) string {
	if i >= len(parts) {
		return "-"
	}
	return fmt.Sprintf("%9.1f / %9.1f", parts[i].Mean, parts[i].P50)
}
