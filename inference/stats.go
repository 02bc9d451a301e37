package inference

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"etchat/inference/engine"
	"etchat/inference/stats"
)

// Stats are one generation's timings and counts: ExecuTorch's runner
// stats (package stats, the same JSON keys) plus precise durations, rates
// and memory. The rates here are computed from the nanosecond clocks (so a
// run shorter than a millisecond still has them): PrefillRate and
// DecodeRate, named apart from the embedded stats.Stats' millisecond-clock
// methods (PrefillTokPerSec, DecodeTokPerSec) so neither hides the other;
// they are the ones shown and stored for a reply.
type Stats struct {
	stats.Stats

	// Precise durations, seconds.
	ModelLoadSeconds float64 `json:"model_load_s"`
	PrefillSeconds   float64 `json:"prefill_s"`  // inference start → prompt evaluated
	DecodeSeconds    float64 `json:"decode_s"`   // prompt evaluated → inference end
	TTFTSeconds      float64 `json:"ttft_s"`     // inference start → first token sampled
	SamplingSeconds  float64 `json:"sampling_s"` // all sampling calls
	ForwardSeconds   float64 `json:"forward_s"`  // all engine forwards
	// Rates, tokens per second (0 when there was nothing to time).
	PrefillRate float64 `json:"prefill_tok_s"`
	DecodeRate  float64 `json:"decode_tok_s"`

	// Memory after load (set by whoever opened the session), after prefill,
	// after decode, and the engine's high-water mark.
	MemAfterLoad    engine.Memory `json:"mem_after_load"`
	MemAfterPrefill engine.Memory `json:"mem_after_prefill"`
	MemAfterDecode  engine.Memory `json:"mem_after_decode"`
	PeakBytes       int64         `json:"peak_bytes"`
}

// SetLoad records the model load interval.
func (s *Stats) SetLoad(start, end time.Time) {
	s.ModelLoadStartMs, s.ModelLoadEndMs = start.UnixMilli(), end.UnixMilli()
	s.ModelLoadSeconds = end.Sub(start).Seconds()
}

func (s *Stats) derive() {
	s.PrefillRate = stats.Rate(s.NumPromptTokens, s.PrefillSeconds)
	s.DecodeRate = stats.Rate(s.NumGeneratedTokens, s.DecodeSeconds)
}

// ObserverJSON is the runner's "PyTorchObserver" object
// (stats_to_json_string), with the rates from the precise clocks.
func (s *Stats) ObserverJSON() string {
	var b strings.Builder
	b.WriteString("{")
	if s.PrefillRate > 0 {
		fmt.Fprintf(&b, "\"prefill_token_per_sec\":%g,", s.PrefillRate)
	}
	if s.DecodeRate > 0 {
		fmt.Fprintf(&b, "\"decode_token_per_sec\":%g,", s.DecodeRate)
	}
	fmt.Fprintf(&b, "\"prompt_tokens\":%d,\"generated_tokens\":%d,", s.NumPromptTokens, s.NumGeneratedTokens)
	fmt.Fprintf(&b, "\"model_load_start_ms\":%d,\"model_load_end_ms\":%d,", s.ModelLoadStartMs, s.ModelLoadEndMs)
	fmt.Fprintf(&b, "\"inference_start_ms\":%d,\"inference_end_ms\":%d,", s.InferenceStartMs, s.InferenceEndMs)
	fmt.Fprintf(&b, "\"prompt_eval_end_ms\":%d,\"first_token_ms\":%d,", s.PromptEvalEndMs, s.FirstTokenMs)
	fmt.Fprintf(&b, "\"aggregate_sampling_time_ms\":%d,\"aggregate_model_execution_time_ms\":%d,", s.AggregateSamplingTimeMs, s.AggregateModelExecutionTimeMs)
	b.WriteString("\"SCALING_FACTOR_UNITS_PER_SECOND\":1000}")
	return b.String()
}

// PrintReport writes ExecuTorch's print_report: the PyTorchObserver line,
// then the human lines (without the logger's prefix), here with the
// precise durations.
func (s *Stats) PrintReport(w io.Writer) {
	fmt.Fprintf(w, "PyTorchObserver %s\n", s.ObserverJSON())
	fmt.Fprintf(w, "\tPrompt Tokens: %d    Generated Tokens: %d\n", s.NumPromptTokens, s.NumGeneratedTokens)
	fmt.Fprintf(w, "\tModel Load Time:\t\t%f (seconds)\n", s.ModelLoadSeconds)
	total := s.PrefillSeconds + s.DecodeSeconds
	fmt.Fprintf(w, "\tTotal inference time:\t\t%f (seconds)\t\t Rate: \t%f (tokens/second)\n", total, stats.Rate(s.NumGeneratedTokens, total))
	fmt.Fprintf(w, "\t\tPrompt evaluation:\t%f (seconds)\t\t Rate: \t%f (tokens/second)\n", s.PrefillSeconds, stats.Rate(s.NumPromptTokens, s.PrefillSeconds))
	fmt.Fprintf(w, "\t\tGenerated %d tokens:\t%f (seconds)\t\t Rate: \t%f (tokens/second)\n", s.NumGeneratedTokens, s.DecodeSeconds, stats.Rate(s.NumGeneratedTokens, s.DecodeSeconds))
	fmt.Fprintf(w, "\tTime to first generated token:\t%f (seconds)\n", s.TTFTSeconds)
	fmt.Fprintf(w, "\tSampling time over %d tokens:\t%f (seconds)\n", s.NumPromptTokens+s.NumGeneratedTokens, s.SamplingSeconds)
}

// MarshalIndent is the stats as indented JSON (for logs and tests).
func (s *Stats) MarshalIndent() string {
	b, _ := json.MarshalIndent(s, "", "  ")
	return string(b)
}
