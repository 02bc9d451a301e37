package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"etchat/inference/kvcache"
	"etchat/inference/pte"
	"etchat/internal/fixtures"
)

func inspectRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Run(context.Background(), env, append([]string{"inspect"}, args...))
	return code, out.String(), errb.String()
}

var allFixtures = []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.InGraph, fixtures.BenchBF16, fixtures.Gemma4}

func fixturePaths(t *testing.T) []string {
	var paths []string
	for _, n := range allFixtures {
		paths = append(paths, filepath.Join(fixtures.Unpacked(t, n), "model.pte"))
	}
	return paths
}

var readmeSHA = regexp.MustCompile("the ExecuTorch program \\(sha256 `([0-9a-f]{64})`\\)")

func TestInspectJSON(t *testing.T) {
	paths := fixturePaths(t)
	code, stdout, stderr := inspectRun(t, append([]string{"--json"}, paths...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var docs []InspectDoc
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(paths) {
		t.Fatalf("%d documents for %d files", len(docs), len(paths))
	}

	// The stable field names.
	for _, key := range []string{"path", "size_bytes", "sha256", "kind", "kind_reason", "methods", "constant_methods", "delegates",
		"max_ctx_len", "prefill_chunk_size", "vocab_size", "cache", "companions", "mlx", "weights", "eos_ids", "named_data", "program"} {
		if _, ok := raw[1][key]; !ok {
			t.Errorf("document lacks %q", key)
		}
	}
	cache := raw[1]["cache"].(map[string]any)
	for _, key := range []string{"n_layers", "n_caches", "layer_caches", "shared", "short_summary", "kv_heads", "head_dims", "windows", "capacity",
		"initial_capacity", "kv_dtype", "max_write", "summary", "layers_summary", "bytes_initial", "bytes_at_capacity", "layers"} {
		if _, ok := cache[key]; !ok {
			t.Errorf("cache lacks %q", key)
		}
	}
	for _, key := range []string{"instructions", "op_histogram"} {
		if _, ok := raw[1]["mlx"].(map[string]any)[key]; !ok {
			t.Errorf("mlx lacks %q", key)
		}
	}
	for _, key := range []string{"bytes", "dtypes", "params"} {
		if _, ok := raw[1]["weights"].(map[string]any)[key]; !ok {
			t.Errorf("weights lacks %q", key)
		}
	}

	for i, d := range docs {
		name := allFixtures[i]
		t.Run(name, func(t *testing.T) {
			var ref struct {
				Model struct {
					VocabSize int `json:"vocab_size"`
				} `json:"model"`
				Export struct {
					MaxCtxLen    int `json:"max_ctx_len"`
					PrefillChunk int `json:"prefill_chunk_size"`
				} `json:"export"`
			}
			fixtures.Reference(t, name, &ref)
			readme, _ := os.ReadFile(filepath.Join(fixtures.ModelDir(name), "README.md"))
			m := readmeSHA.FindSubmatch(readme)
			if m == nil || d.SHA256 != string(m[1]) {
				t.Errorf("sha256 %s, README %q", d.SHA256, m)
			}
			if d.Path != paths[i] || d.Error != "" || d.VocabSize != ref.Model.VocabSize || d.MaxCtxLen != ref.Export.MaxCtxLen ||
				d.PrefillChunkSize != ref.Export.PrefillChunk {
				t.Errorf("doc %+v", d)
			}
			st, _ := os.Stat(paths[i])
			if d.SizeBytes != st.Size() {
				t.Errorf("size %d, file %d", d.SizeBytes, st.Size())
			}
			if len(d.Delegates) != 1 || d.Delegates[0].ID != "MLXBackend" || d.Delegates[0].Method != "forward" || d.Delegates[0].Segment != 1 {
				t.Errorf("delegates %+v", d.Delegates)
			}
			if d.MLX == nil || d.MLX.Instructions == 0 || d.MLX.OpHistogram["AddmmNode"] == 0 || d.Weights.Params <= 0 || d.Weights.Bytes <= 0 {
				t.Errorf("mlx %+v weights %+v", d.MLX, d.Weights)
			}

			// Reads: program + constant segment + MLX blob + 64 KiB, at most
			// (the sha256 pass is separate).
			f, err := pte.Open(paths[i])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if budget := f.Header.ProgramSize + f.Segments[0].Size + d.Delegates[0].Size + 64<<10; d.BytesRead > budget {
				t.Errorf("read %d bytes, budget %d", d.BytesRead, budget)
			}
			if d.Delegates[0].Offset != f.Segments[1].Offset {
				t.Errorf("delegate offset %d, segment 1 at %d", d.Delegates[0].Offset, f.Segments[1].Offset)
			}

			if name == fixtures.InGraph {
				if d.Kind != "in-graph" || d.Cache != nil || len(d.ConstantMethods) != 2 || d.MLX.MutableBufferTensors != 4 {
					t.Errorf("in-graph doc: kind %s cache %+v constants %+v", d.Kind, d.Cache, d.ConstantMethods)
				}
				return
			}
			if d.Kind != "off-graph" || d.Cache == nil || len(d.ConstantMethods) != 6 {
				t.Fatalf("kind %s cache %+v", d.Kind, d.Cache)
			}
			hasTok := name != fixtures.BenchBF16
			if (d.Companions.Tokenizer != "") != hasTok || d.Companions.HasChatTemplate != hasTok || d.Companions.Config == "" {
				t.Errorf("companions %+v", d.Companions)
			}
		})
	}

	// Without sharing the model's layers are its caches.
	if raw[1]["n_layers"] != 4.0 || docs[1].Cache.NCaches != 4 || !slices.Equal(docs[1].Cache.LayerCaches, []int{0, 1, 2, 3}) ||
		docs[1].Cache.Shared != "" || !slices.Equal(docs[1].Cache.Layers[3].ModelLayers, []int{3}) {
		t.Errorf("gemma3: n_layers %v, cache %+v", raw[1]["n_layers"], docs[1].Cache)
	}
	// gemma3's cache, exactly.
	g := docs[1].Cache
	if g.Summary != "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n        4 layers: 1 flat + 3 ring(window 8)" ||
		g.LayersSummary != "4 layers: 1 flat + 3 ring(window 8)" || g.NLayers != 4 || g.KVDType != "BFloat16" ||
		g.BytesInitial != 16384+3*1920 || g.BytesAtCapacity != 16384+3*1920 || len(g.Layers) != 4 ||
		g.Layers[2].Kind != "flat" || g.Layers[0].Kind != "ring" || g.Layers[0].Rows != 15 || g.Layers[2].Rows != 128 {
		t.Errorf("gemma3 cache %+v", g)
	}
	if v := docs[1].ConstantMethods[3]; v.Name != "get_windows" || v.Kind != "Tensor" {
		t.Errorf("constant %+v", v)
	}
	windows := raw[1]["constant_methods"].([]any)[3].(map[string]any)["value"]
	if b, _ := json.Marshal(windows); string(b) != "[8,8,0,8]" {
		t.Errorf("get_windows value in JSON: %s", b)
	}
	// The bf16 bench: 8 MiB of KV at 2048 tokens, 32.5 M params (its README).
	if b := docs[4]; b.Cache.BytesAtCapacity != 8<<20 || b.Weights.Params != 32514560 || b.Weights.DTypes[0] != "BFloat16" || b.LogitsDType != "BFloat16" {
		t.Errorf("bf16 cache %+v weights %+v", b.Cache, b.Weights)
	}
}

func TestInspectText(t *testing.T) {
	path := filepath.Join(fixtures.Unpacked(t, fixtures.Gemma3), "model.pte")
	code, stdout, stderr := inspectRun(t, "--no-sha256", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		path + "  (16 MiB, 16,961,156 bytes)",
		"kind        off-graph",
		"forward(Long≤[1 8], Long≤[8]) -> Float≤[1 8 262145]",
		"get_windows = [8 8 0 8]",
		"max context 128, prefill chunk 8, vocab 262,145 (Float logits)",
		"eos         [1 106] (from generation_config.json)",
		"forward: MLXBackend, segment 1 at offset 11392, 21 KiB",
		"248 instructions",
		"UpdateAndAttendNode 4",
		"[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n" + strings.Repeat(" ", 14) + "        4 layers: 1 flat + 3 ring(window 8)",
		"KV memory: 22 KiB at the initial size, 22 KiB at capacity (128 tokens)",
		"tokenizer.json ✓, tokenizer_config.json ✓ (chat template), generation_config.json ✓, config.json ✓ (model_type gemma3_text)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "sha256") {
		t.Error("--no-sha256 still printed a hash")
	}
}

func TestInspectFlags(t *testing.T) {
	gemma := filepath.Join(fixtures.Unpacked(t, fixtures.Gemma3), "model.pte")
	ingraph := fixtures.PTE(fixtures.InGraph)
	// Flags after the files; cache flags applied; in-graph ignores them.
	code, stdout, stderr := inspectRun(t, gemma, ingraph, "--json", "--no-sha256", "--kv-windows", "4", "--kv-storage-dtype", "fp32", "--kv-max-capacity", "64", "--kv-initial-capacity", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var docs []InspectDoc
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || len(docs) != 2 {
		t.Fatalf("%v: %s", err, stdout)
	}
	c := docs[0].Cache
	if c.MaxWrite != 4 || c.Capacity != 64 || c.InitialCapacity != 0 || c.KVDType != kvcache.Float32.String() || c.BytesInitial != c.BytesAtCapacity ||
		c.BytesAtCapacity != 4*7*2*16*2*4 || c.LayersSummary != "4 layers: 0 flat + 4 ring(window 4)" || docs[0].SHA256 != "" {
		t.Errorf("cache with flags %+v", c)
	}
	if docs[1].Cache != nil || docs[1].Error != "" {
		t.Errorf("in-graph with cache flags: %+v", docs[1])
	}

	for _, bad := range [][]string{
		{gemma, "--kv-storage-dtype", "int8"},
		{"--kv-windows", "8,x", gemma},
		{"--kv-max-capacity", "-1", gemma},
		{"--kv-initial-capacity", "-3", gemma},
		{"--kv-max-capacity", "lots", gemma},
		{"--json"},
		{},
	} {
		code, _, stderr := inspectRun(t, bad...)
		if code != 2 || !strings.Contains(stderr, "etchat inspect:") {
			t.Errorf("%v: exit %d, %s", bad, code, stderr)
		}
	}
	if code, _, stderr := inspectRun(t, "--kv-storage-dtype", "int8", gemma); !strings.Contains(stderr, "flag -kv-storage-dtype") {
		t.Errorf("bad dtype message: %d %s", code, stderr)
	}
}

func TestInspectFailures(t *testing.T) {
	dir := t.TempDir()
	notPTE := filepath.Join(dir, "notes.pte")
	os.WriteFile(notPTE, []byte("just some text, not a program"), 0o644)
	full, err := os.ReadFile(fixtures.PTE(fixtures.Llama3))
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.pte")
	os.WriteFile(truncated, full[:len(full)/2], 0o644)
	missing := filepath.Join(dir, "missing.pte")
	good := fixtures.PTE(fixtures.Qwen3)

	code, stdout, stderr := inspectRun(t, "--no-sha256", notPTE, good, truncated, missing)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, p := range []string{notPTE, truncated, missing} {
		if !strings.Contains(stderr, p) {
			t.Errorf("stderr does not name %s:\n%s", p, stderr)
		}
	}
	if !strings.Contains(stderr, "truncated") || !strings.Contains(stderr, `want "ET12"`) {
		t.Errorf("stderr does not say what is wrong:\n%s", stderr)
	}
	if !strings.Contains(stdout, good) || !strings.Contains(stdout, "kind        off-graph") {
		t.Errorf("the good file was not reported:\n%s", stdout)
	}

	code, stdout, _ = inspectRun(t, "--json", "--no-sha256", good, notPTE)
	var docs []InspectDoc
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || code != 1 || len(docs) != 2 || docs[0].Error != "" || !strings.Contains(docs[1].Error, notPTE) ||
		docs[1].SizeBytes != 29 || docs[1].Kind != "" || docs[1].Cache != nil {
		t.Errorf("json with a failure: exit %d, %v, %+v", code, err, docs)
	}
}

func BenchmarkInspect(b *testing.B) {
	path := fixtures.PTE(fixtures.Gemma3)
	p := kvcache.DefaultPolicy()
	b.Run("no-sha256", func(b *testing.B) {
		for b.Loop() {
			if d := Inspect(path, p, false); d.Error != "" {
				b.Fatal(d.Error)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(16961156)
		for b.Loop() {
			if d := Inspect(path, p, true); d.Error != "" {
				b.Fatal(d.Error)
			}
		}
	})
}

// gemma4-tiny: 10 layers on 6 caches of two shapes. The report counts
// caches as caches, says the model's layer count and which layers share
// which cache, and sizes the memory per cache.
func TestInspectGemma4(t *testing.T) {
	path := filepath.Join(fixtures.Unpacked(t, fixtures.Gemma4), "model.pte")
	code, stdout, stderr := inspectRun(t, "--no-sha256", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var docs []InspectDoc
	if err := json.Unmarshal([]byte(stdout), &docs); err != nil || len(docs) != 1 {
		t.Fatalf("%v: %s", err, stdout)
	}
	d := docs[0]
	c := d.Cache
	if d.NLayers != 10 || c == nil || c.NCaches != 6 || c.NLayers != 6 || len(c.Layers) != 6 ||
		!slices.Equal(c.LayerCaches, []int{0, 1, 2, 3, 4, 5, 4, 4, 4, 5}) || !slices.Equal(d.MLX.AttentionLayers, c.LayerCaches) {
		t.Fatalf("n_layers %d, cache %+v", d.NLayers, c)
	}
	if c.LayersSummary != "10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)" ||
		c.Shared != "shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9" ||
		c.ShortSummary != "10 layers, 6 caches: 5 ring(8) ×1h ×16d + 1 flat ×2h ×32d, 4 layers share" {
		t.Errorf("summaries %q / %q / %q", c.LayersSummary, c.Shared, c.ShortSummary)
	}
	// 5 rings of 15 rows × 1 head × 16 and one flat pool of 128 rows × 2 × 32,
	// K and V, bf16.
	if c.BytesInitial != 5*960+32768 || c.BytesAtCapacity != 5*960+32768 ||
		c.Layers[4].Rows != 15 || c.Layers[4].HeadDim != 16 || c.Layers[4].KVHeads != 1 || !slices.Equal(c.Layers[4].ModelLayers, []int{4, 6, 7, 8}) ||
		c.Layers[5].Kind != "flat" || c.Layers[5].HeadDim != 32 || c.Layers[5].KVHeads != 2 || !slices.Equal(c.Layers[5].ModelLayers, []int{5, 9}) {
		t.Errorf("caches %+v", c.Layers)
	}

	code, stdout, stderr = inspectRun(t, "--no-sha256", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pad := strings.Repeat(" ", 14)
	for _, want := range []string{
		"[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n" + pad +
			"        10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)\n" + pad +
			"        shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9",
		"  cache 0: ring(window 8), 1 kv heads × 16, 15 rows",
		"  cache 4 (layers 4,6,7,8): ring(window 8), 1 kv heads × 16, 15 rows",
		"  cache 5 (layers 5,9): flat, 2 kv heads × 32, 128 rows",
		"UpdateAndAttendNode 10",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "6 layers") || strings.Contains(stdout, "layer 0:") {
		t.Errorf("report counts caches as layers:\n%s", stdout)
	}
}
