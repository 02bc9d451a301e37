// Package stats is ExecuTorch's runner stats (extension/llm/runner/stats.h),
// declared once for every layer that keeps them: the generation result
// (inference.Stats), a benchmark repetition (bench.Rep), the store's run
// and sample records and the app's reply all embed or hold Stats, with the
// runner's JSON keys. Every tokens-per-second figure in etchat is computed
// here (Rate, RateMs, RateNs). The package imports nothing.
package stats

// Stats are one generation's timestamps and counts in the runner's units:
// milliseconds on the Unix clock (time_in_ms) and token counts.
type Stats struct {
	ModelLoadStartMs              int64 `json:"model_load_start_ms"`
	ModelLoadEndMs                int64 `json:"model_load_end_ms"`
	InferenceStartMs              int64 `json:"inference_start_ms"`
	PromptEvalEndMs               int64 `json:"prompt_eval_end_ms"`
	FirstTokenMs                  int64 `json:"first_token_ms"`
	InferenceEndMs                int64 `json:"inference_end_ms"`
	AggregateSamplingTimeMs       int64 `json:"aggregate_sampling_time_ms"`
	AggregateModelExecutionTimeMs int64 `json:"aggregate_model_execution_time_ms"`
	NumPromptTokens               int64 `json:"num_prompt_tokens"`
	NumGeneratedTokens            int64 `json:"num_generated_tokens"`
}

// Rate is n tokens over seconds, in tokens per second; 0 when the span is
// not positive (nothing to time).
func Rate(n int64, seconds float64) float64 {
	if !(seconds > 0) {
		return 0
	}
	return float64(n) / seconds
}

// RateMs is n tokens over a span of milliseconds, in tokens per second; 0
// when the span is not positive.
func RateMs(n, spanMs int64) float64 {
	if spanMs <= 0 {
		return 0
	}
	return float64(n) * 1000 / float64(spanMs)
}

// RateNs is n tokens over a span of nanoseconds, in tokens per second; 0
// when the span is not positive.
func RateNs(n, spanNs int64) float64 {
	if spanNs <= 0 {
		return 0
	}
	return float64(n) * 1e9 / float64(spanNs)
}

// PrefillTokPerSec is prompt tokens over (prompt_eval_end - inference_start),
// as the runner reports it.
func (s Stats) PrefillTokPerSec() float64 {
	return RateMs(s.NumPromptTokens, s.PromptEvalEndMs-s.InferenceStartMs)
}

// DecodeTokPerSec is generated tokens over (inference_end - prompt_eval_end).
func (s Stats) DecodeTokPerSec() float64 {
	return RateMs(s.NumGeneratedTokens, s.InferenceEndMs-s.PromptEvalEndMs)
}

// TokPerSec is all tokens (prompt and generated) over the whole inference,
// llama-bench's t/s for one repetition.
func (s Stats) TokPerSec() float64 {
	return RateMs(s.NumPromptTokens+s.NumGeneratedTokens, s.InferenceEndMs-s.InferenceStartMs)
}

// TTFTMs is the time to the first token from the start of inference (model
// load excluded), milliseconds; 0 when unknown.
func (s Stats) TTFTMs() float64 {
	if s.FirstTokenMs <= 0 || s.FirstTokenMs < s.InferenceStartMs {
		return 0
	}
	return float64(s.FirstTokenMs - s.InferenceStartMs)
}
