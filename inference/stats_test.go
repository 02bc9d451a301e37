package inference

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"etchat/inference/stats"
)

func TestStatsReportFormat(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	st := Stats{Stats: stats.Stats{NumPromptTokens: 20, NumGeneratedTokens: 10, InferenceStartMs: t0.UnixMilli(), PromptEvalEndMs: t0.UnixMilli() + 200,
		FirstTokenMs: t0.UnixMilli() + 201, InferenceEndMs: t0.UnixMilli() + 700, AggregateSamplingTimeMs: 3},
		PrefillSeconds: 0.2, DecodeSeconds: 0.5, TTFTSeconds: 0.201, SamplingSeconds: 0.003}
	st.SetLoad(t0.Add(-1500*time.Millisecond), t0)
	st.derive()
	if st.PrefillRate != 100 || st.DecodeRate != 20 {
		t.Fatalf("rates %v %v", st.PrefillRate, st.DecodeRate)
	}
	var b bytes.Buffer
	st.PrintReport(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "PyTorchObserver {") {
		t.Fatalf("report:\n%s", b.String())
	}
	var obs map[string]float64
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[0], "PyTorchObserver ")), &obs); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"prefill_token_per_sec": 100, "decode_token_per_sec": 20, "prompt_tokens": 20, "generated_tokens": 10,
		"model_load_start_ms": float64(t0.UnixMilli() - 1500), "inference_end_ms": float64(t0.UnixMilli() + 700), "SCALING_FACTOR_UNITS_PER_SECOND": 1000} {
		if obs[k] != want {
			t.Errorf("%s = %v, want %v", k, obs[k], want)
		}
	}
	for i, want := range []string{"", "\tPrompt Tokens: 20    Generated Tokens: 10", "\tModel Load Time:\t\t1.500000 (seconds)",
		"\tTotal inference time:\t\t0.700000 (seconds)\t\t Rate: \t14.285714 (tokens/second)",
		"\t\tPrompt evaluation:\t0.200000 (seconds)\t\t Rate: \t100.000000 (tokens/second)",
		"\t\tGenerated 10 tokens:\t0.500000 (seconds)\t\t Rate: \t20.000000 (tokens/second)",
		"\tTime to first generated token:\t0.201000 (seconds)", "\tSampling time over 30 tokens:\t0.003000 (seconds)"} {
		if i > 0 && lines[i] != want {
			t.Errorf("line %d %q, want %q", i, lines[i], want)
		}
	}
}

// The generation result's JSON keeps the keys it had (the runner's ten,
// the precise durations and rates, memory), so stored and exported runs
// read back unchanged; aggregate_model_execution_time_ms is kept.
func TestStatsJSONKeys(t *testing.T) {
	st := Stats{Stats: stats.Stats{AggregateModelExecutionTimeMs: 12, NumPromptTokens: 3}, PrefillRate: 1.5}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"model_load_start_ms", "model_load_end_ms", "inference_start_ms", "prompt_eval_end_ms", "first_token_ms",
		"inference_end_ms", "aggregate_sampling_time_ms", "aggregate_model_execution_time_ms", "num_prompt_tokens", "num_generated_tokens",
		"model_load_s", "prefill_s", "decode_s", "ttft_s", "sampling_s", "forward_s", "prefill_tok_s", "decode_tok_s",
		"mem_after_load", "mem_after_prefill", "mem_after_decode", "peak_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %s missing from %s", k, b)
		}
	}
	if len(m) != 22 || m["aggregate_model_execution_time_ms"] != 12.0 || m["prefill_tok_s"] != 1.5 {
		t.Errorf("%d keys: %s", len(m), b)
	}
	var back Stats
	if err := json.Unmarshal(b, &back); err != nil || back != st {
		t.Errorf("read back %+v, %v", back, err)
	}
}
