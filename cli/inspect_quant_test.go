package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// inspect shows the quantization: the summary and each weight group in
// the report, the record in the JSON.
func TestInspectQuantization(t *testing.T) {
	q4, bf := fixtures.PTE(fixtures.Llama3Q4), fixtures.PTE(fixtures.BenchBF16)
	code, stdout, stderr := inspectRun(t, "--no-sha256", q4, bf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"precision", "4-bit", "4-bit g32 affine matmul ×15", "4-bit g32 affine embedding ×1", "bf16"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = inspectRun(t, "--json", "--no-sha256", q4, bf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var docs []struct {
		Quantization struct {
			Summary string `json:"summary"`
			Groups  []struct {
				Bits      int    `json:"bits"`
				GroupSize int    `json:"group_size"`
				Mode      string `json:"mode"`
				Bytes     int64  `json:"bytes"`
			} `json:"groups"`
		} `json:"quantization"`
		Weights struct {
			Bytes int64 `json:"bytes"`
		} `json:"weights"`
	}
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents", len(docs))
	}
	q := docs[0].Quantization
	if q.Summary != "4-bit" || len(q.Groups) != 2 || q.Groups[0].Bits != 4 || q.Groups[0].GroupSize != 32 || q.Groups[0].Mode != "affine" ||
		q.Groups[0].Bytes <= 0 || q.Groups[0].Bytes >= docs[0].Weights.Bytes {
		t.Errorf("llama3-tiny-q4 quantization %+v (weights %d bytes)", q, docs[0].Weights.Bytes)
	}
	if q := docs[1].Quantization; q.Summary != "bf16" || len(q.Groups) != 0 {
		t.Errorf("llama-bench-bf16 quantization %+v", q)
	}
}
