package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/pte/ptetest"
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

// The twins written with a newer ExecuTorch's metadata (#22655): off-graph,
// chunk 32 and capacity 128 from the new names, the new fields in the
// report and the JSON, and the KV storage dtype taken from the activation
// dtype, said where the cache is.
func TestInspectNewerMetadata(t *testing.T) {
	meta2, last := fixtures.PTE(fixtures.Llama3Q4Meta2), fixtures.PTE(fixtures.Llama3Q4Last)
	code, stdout, stderr := inspectRun(t, "--no-sha256", meta2, last)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"kind        off-graph: publishes get_n_caches=2, get_kv_heads, get_head_dims, get_windows and get_max_seq_len=32",
		"max context 128 (get_max_context_len), prefill chunk 32 (get_max_seq_len), vocab 128,256 (Float logits)",
		"metadata    vocab 128,256 (get_vocab_size, = forward's logits), activations Float(fp32), logits to keep 0 (full: every position)",
		"metadata    vocab 128,256 (get_vocab_size, = forward's logits), activations Float(fp32), logits to keep 1 (last: the last position only)",
		"kv_dtype=Float(fp32) max_write=32",
		"KV storage Float(fp32) (the model's get_activation_dtype)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = inspectRun(t, "--json", "--no-sha256", "--kv-storage-dtype", "bf16", meta2, last)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var docs []struct {
		Kind      string       `json:"kind"`
		MaxCtxLen int          `json:"max_ctx_len"`
		Chunk     int          `json:"prefill_chunk_size"`
		Vocab     int          `json:"vocab_size"`
		Metadata  *MetadataDoc `json:"metadata"`
		Cache     struct {
			KVDType     string `json:"kv_dtype"`
			KVDTypeFrom string `json:"kv_dtype_from"`
		} `json:"cache"`
	}
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
		t.Fatal(err)
	}
	for i, want := range []MetadataDoc{
		{ChunkFrom: "get_max_seq_len", CapacityFrom: "get_max_context_len", VocabSize: 128256, ActivationDType: "Float(fp32)", LogitsToKeep: "full", LogitsToKeepMode: 0, LogitsToKeepPublished: true},
		{ChunkFrom: "get_max_seq_len", CapacityFrom: "get_max_context_len", VocabSize: 128256, ActivationDType: "Float(fp32)", LogitsToKeep: "last", LogitsToKeepMode: 1, LogitsToKeepPublished: true},
	} {
		d := docs[i]
		if d.Kind != "off-graph" || d.MaxCtxLen != 128 || d.Chunk != 32 || d.Vocab != 128256 || d.Metadata == nil || *d.Metadata != want {
			t.Errorf("document %d: %+v %+v, want metadata %+v", i, d, d.Metadata, want)
		}
		if d.Cache.KVDType != "BFloat16" || d.Cache.KVDTypeFrom != "chosen" {
			t.Errorf("document %d: --kv-storage-dtype bf16 gave %+v", i, d.Cache)
		}
	}
}

// What this build cannot read is said at inspect time: a Program written
// by a newer ExecuTorch is unsupported with the reason and what to do,
// and metadata that contradicts itself fails the file naming both
// constants.
func TestInspectNewerExport(t *testing.T) {
	dir := t.TempDir()
	newer := ptetest.FullProgram(ptetest.SmallGraph())
	newer.Version = 3
	conflict := ptetest.FullProgram(ptetest.SmallGraph())
	conflict.Methods = append(conflict.Methods, ptetest.Constant("get_max_ctx_len", ptetest.IntValue(128)), ptetest.Constant("get_max_context_len", ptetest.IntValue(256)))
	paths := []string{filepath.Join(dir, "newer.pte"), filepath.Join(dir, "conflict.pte")}
	for i, p := range []ptetest.Program{newer, conflict} {
		if err := os.WriteFile(paths[i], ptetest.Build(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := inspectRun(t, "--no-sha256", paths[0], paths[1])
	if code != 1 {
		t.Errorf("exit %d, want 1 (one file failed)", code)
	}
	if want := "kind        unsupported: exported by a newer ExecuTorch than this etchat reads (Program schema version 3; this build reads up to 0): re-export with an ExecuTorch of this schema, or update etchat"; !strings.Contains(stdout, want) {
		t.Errorf("report lacks %q:\n%s", want, stdout)
	}
	if want := "get_max_ctx_len = 128 and get_max_context_len = 256 disagree: both name the KV-cache capacity"; !strings.Contains(stderr+stdout, want) {
		t.Errorf("output lacks %q:\n%s\n%s", want, stdout, stderr)
	}
}
