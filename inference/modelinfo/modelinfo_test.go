package modelinfo

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"etchat/inference/kvcache"
	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
	"etchat/internal/fixtures"
)

// histograms are docs/pte-format.md §4 and §6.
var histograms = map[string]map[string]int{
	fixtures.Llama3: {"AddNode": 8, "AddmmNode": 16, "AsTypeNode": 1, "BroadcastToNode": 1, "ConcatenateNode": 5, "CosNode": 1,
		"ExpandDimsNode": 6, "MultiplyNode": 12, "NegNode": 4, "RMSNormNode": 5, "ReshapeNode": 9, "SiluNode": 2, "SinNode": 1,
		"SliceNode": 8, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 24, "UpdateAndAttendNode": 2},
	fixtures.Gemma3: {"AddNode": 41, "AddmmNode": 31, "AsTypeNode": 1, "BroadcastToNode": 2, "ConcatenateNode": 10, "CosNode": 2,
		"ExpandDimsNode": 10, "GeluNode": 4, "MultiplyNode": 25, "NegNode": 8, "RMSNormNode": 25, "ReshapeNode": 17, "SinNode": 2,
		"SliceNode": 16, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 47, "UpdateAndAttendNode": 4},
	fixtures.Qwen3: {"AddNode": 8, "AddmmNode": 16, "AsTypeNode": 1, "BroadcastToNode": 1, "ConcatenateNode": 5, "CosNode": 1,
		"ExpandDimsNode": 6, "MultiplyNode": 12, "NegNode": 4, "RMSNormNode": 9, "ReshapeNode": 9, "SiluNode": 2, "SinNode": 1,
		"SliceNode": 8, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 24, "UpdateAndAttendNode": 2},
	fixtures.InGraph: {"ARangeNode": 1, "AddIntNode": 6, "AddNode": 9, "AddmmNode": 16, "AsTypeNode": 2, "BroadcastToNode": 1,
		"ConcatenateNode": 5, "CosNode": 1, "ExpandDimsNode": 6, "FullNode": 1, "IdCopyNode": 4, "ItemIntNode": 4, "MultiplyNode": 12,
		"NegNode": 4, "NotEqualNode": 1, "RMSNormNode": 5, "ReshapeNode": 10, "SdpaNode": 2, "SiluNode": 2, "SinNode": 1,
		"SliceNode": 12, "SliceUpdateNode": 4, "SumNode": 1, "SymSizeNode": 7, "TakeNode": 10, "TransposeNode": 24},
	fixtures.BenchBF16: {"AddNode": 32, "AddmmNode": 58, "AsTypeNode": 3, "BroadcastToNode": 1, "ConcatenateNode": 17, "CosNode": 1,
		"ExpandDimsNode": 6, "MultiplyNode": 42, "NegNode": 16, "RMSNormNode": 17, "ReshapeNode": 33, "SiluNode": 8, "SinNode": 1,
		"SliceNode": 32, "SymSizeNode": 1, "TakeNode": 2, "TransposeNode": 90, "UpdateAndAttendNode": 8},
	// The fixture README's MLX graph histogram: 10 UpdateAndAttendNodes on 6 caches.
	fixtures.Gemma4: {"MultiplyNode": 213, "PowerNode": 147, "AddNode": 121, "TransposeNode": 117, "AddmmNode": 85, "MeanNode": 73,
		"ReshapeNode": 34, "SliceNode": 32, "GeluNode": 20, "ConcatenateNode": 18, "NegNode": 16, "TakeNode": 13, "ExpandDimsNode": 10,
		"UpdateAndAttendNode": 10, "BroadcastToNode": 2, "CosNode": 2, "SinNode": 2, "AsTypeNode": 1, "DivideNode": 1, "SymSizeNode": 1, "TanhNode": 1},
}

var instructionTotals = map[string]int{fixtures.Llama3: 108, fixtures.Gemma3: 248, fixtures.Qwen3: 112, fixtures.InGraph: 151, fixtures.BenchBF16: 368,
	fixtures.Gemma4: 919}

type refModel struct {
	Model struct {
		VocabSize int             `json:"vocab_size"`
		ModelType string          `json:"model_type"`
		EOS       json.RawMessage `json:"eos_token_id"`
		Params    int64           `json:"n_parameters"`
	} `json:"model"`
	Export struct {
		MaxCtxLen    int `json:"max_ctx_len"`
		PrefillChunk int `json:"prefill_chunk_size"`
	} `json:"export"`
	Geometry *struct {
		KVHeads  []int `json:"kv_heads"`
		HeadDims []int `json:"head_dims"`
		Windows  []int `json:"windows"`
		// Model layer → cache; absent (one cache per layer) but for gemma4.
		LayerToCache []int `json:"layer_to_cache"`
	} `json:"geometry"`
}

var shaRE = regexp.MustCompile("model\\.pte \\|[^|]*\\| the ExecuTorch program \\(sha256 `([0-9a-f]{64})`\\)")

func readmeSHA(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(fixtures.ModelDir(name), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := shaRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s README: no sha256", name)
	}
	return string(m[1])
}

func TestLoadFixtures(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.InGraph, fixtures.BenchBF16, fixtures.Gemma4} {
		t.Run(name, func(t *testing.T) {
			dir := fixtures.Unpacked(t, name)
			path := filepath.Join(dir, "model.pte")
			info, err := Load(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var ref refModel
			fixtures.Reference(t, name, &ref)
			wantKind := OffGraph
			if name == fixtures.InGraph {
				wantKind = InGraph
			}
			if info.Kind != wantKind || info.KindReason == "" {
				t.Errorf("kind %s (%s), want %s", info.Kind, info.KindReason, wantKind)
			}
			if info.SHA256 != "" {
				t.Error("hashed without Options.Hash")
			}
			if info.VocabSize != ref.Model.VocabSize || info.MaxCtxLen != ref.Export.MaxCtxLen || info.PrefillChunk != ref.Export.PrefillChunk {
				t.Errorf("vocab %d max_ctx %d chunk %d, want %d %d %d", info.VocabSize, info.MaxCtxLen, info.PrefillChunk,
					ref.Model.VocabSize, ref.Export.MaxCtxLen, ref.Export.PrefillChunk)
			}
			eos, err := tokenIDs(ref.Model.EOS)
			if err != nil || !slices.Equal(info.EOSIDs, eos) || info.EOSSource != "generation_config.json" {
				t.Errorf("eos %v from %q, want %v", info.EOSIDs, info.EOSSource, eos)
			}
			if info.Companion.ModelType != ref.Model.ModelType || len(info.Companion.Problems) != 0 {
				t.Errorf("companions %+v", info.Companion)
			}
			hasTok := name != fixtures.InGraph && name != fixtures.BenchBF16
			if (info.Companion.Tokenizer != "") != hasTok || (info.Companion.TokenizerConfig != "") != hasTok || info.Companion.HasChatTemplate != hasTok ||
				info.Companion.Config != filepath.Join(dir, "config.json") || info.Companion.GenerationConfig == "" {
				t.Errorf("companions %+v", info.Companion)
			}

			if wantKind == OffGraph {
				l := info.Layout
				if l == nil || !slices.Equal(l.KVHeads, ref.Geometry.KVHeads) || !slices.Equal(l.HeadDims, ref.Geometry.HeadDims) || !slices.Equal(l.Windows, ref.Geometry.Windows) ||
					l.PrefillChunk != ref.Export.PrefillChunk || l.MaxCtxLen != ref.Export.MaxCtxLen {
					t.Errorf("layout %+v, want %+v", l, ref.Geometry)
				}
				// One attend node per model layer, naming its cache: the
				// identity unless layers share caches.
				want := ref.Geometry.LayerToCache
				if want == nil {
					for i := range l.KVHeads {
						want = append(want, i)
					}
				}
				if !slices.Equal(info.MLX.AttentionLayers, want) || info.NLayers() != len(want) {
					t.Errorf("attention layers %v (%d layers), want %v", info.MLX.AttentionLayers, info.NLayers(), want)
				}
				cfg, err := info.CacheConfig(kvcache.DefaultPolicy())
				if err != nil || !slices.Equal(cfg.LayerCache, want) || len(cfg.Layers) != len(l.KVHeads) || cfg.Shared() != (name == fixtures.Gemma4) {
					t.Errorf("cache config %+v (%v): want %d caches for layers %v", cfg, err, len(l.KVHeads), want)
				}
			} else {
				if info.Layout != nil || len(info.MLX.MutableBuffers) != 4 || !strings.HasSuffix(info.MLX.MutableBuffers[0], "/key_cache_0") {
					t.Errorf("in-graph: layout %v, buffers %v", info.Layout, info.MLX.MutableBuffers)
				}
				if !strings.Contains(info.KindReason, "mutable buffers") {
					t.Errorf("reason %q", info.KindReason)
				}
				if _, err := info.CacheConfig(kvcache.DefaultPolicy()); err == nil || !strings.Contains(err.Error(), "in-graph") {
					t.Errorf("CacheConfig on in-graph: %v", err)
				}
			}

			// MLX graph summary (docs/pte-format.md §4).
			h := histograms[name]
			if info.MLX == nil || info.MLX.Instructions != instructionTotals[name] || len(info.MLX.OpHistogram) != len(h) {
				t.Fatalf("mlx %+v", info.MLX)
			}
			for k, n := range h {
				if info.MLX.OpHistogram[k] != n {
					t.Errorf("%s: %d, want %d", k, info.MLX.OpHistogram[k], n)
				}
			}

			// Weights.
			f, err := pte.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if info.Weights.Bytes != f.WeightBytes() || info.Weights.Tensors != len(f.NamedData) || info.Weights.Params <= 0 {
				t.Errorf("weights %+v", info.Weights)
			}
			if ref.Model.Params != 0 && info.Weights.Params != ref.Model.Params {
				t.Errorf("params %d, want %d", info.Weights.Params, ref.Model.Params)
			}
			wantDT := "Float"
			if name == fixtures.BenchBF16 {
				wantDT = "BFloat16"
			}
			if len(info.Weights.DTypes) == 0 || info.Weights.DTypes[0] != wantDT {
				t.Errorf("dtypes %v", info.Weights.DTypes)
			}

			// What Load reads: program + constant segment + MLX blob (+64 KiB).
			budget := f.Header.ProgramSize + f.Segments[0].Size + f.Segments[1].Size + 64<<10
			if info.BytesRead > budget || info.BytesRead < f.Header.ProgramSize {
				t.Errorf("read %d bytes, budget %d", info.BytesRead, budget)
			}
		})
	}
}

func TestHash(t *testing.T) {
	for _, name := range []string{fixtures.Llama3, fixtures.InGraph} {
		info, err := Load(fixtures.PTE(name), Options{Hash: true, NoCompanions: true})
		if err != nil {
			t.Fatal(err)
		}
		if want := readmeSHA(t, name); info.SHA256 != want {
			t.Errorf("%s: sha256 %s, want %s", name, info.SHA256, want)
		}
		if info.BytesRead > info.SizeBytes/100 {
			t.Errorf("%s: the hash pass was counted: %d bytes read", name, info.BytesRead)
		}
		if info.Companion.Dir != "" {
			t.Error("NoCompanions looked for companions")
		}
	}
}

func TestFromFile(t *testing.T) {
	f, err := pte.Open(fixtures.PTE(fixtures.Gemma3))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := FromFile(f, Options{NoCompanions: true})
	if err != nil || info.Kind != OffGraph || info.File != f {
		t.Fatalf("%v %+v", err, info)
	}
	// The file stays open: a weight segment can be read through it.
	nd := f.NamedData[0]
	b, err := f.ReadRange(nd.Offset, 64)
	if err != nil || len(b) != 64 {
		t.Errorf("reading after FromFile: %v", err)
	}
	if info.BytesRead != f.BytesRead()-64 {
		t.Errorf("BytesRead %d, file %d", info.BytesRead, f.BytesRead())
	}

	// Load closes its file; reading through Info.File then fails cleanly.
	loaded, err := Load(fixtures.PTE(fixtures.Gemma3), Options{NoCompanions: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.File.ReadSegment(2); err == nil || !strings.Contains(err.Error(), "model.pte") {
		t.Errorf("read after Load: %v", err)
	}
}

// patched writes a copy of a fixture's model.pte with edit applied, and
// returns its path.
func patched(t *testing.T, name string, edit func(b []byte)) string {
	b, err := os.ReadFile(fixtures.PTE(name))
	if err != nil {
		t.Fatal(err)
	}
	edit(b)
	p := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rename replaces a method name in the program (same length).
func rename(t *testing.T, b []byte, from, to string) {
	prog := b[:5112]
	i := strings.Index(string(prog), from+"\x00")
	if i < 0 || len(from) != len(to) {
		t.Fatalf("method name %q not found", from)
	}
	copy(prog[i:], to)
}

func TestLoadBadModels(t *testing.T) {
	// get_n_caches and get_kv_heads swap names: get_n_caches is now a
	// tensor — a constant of the wrong type is an error naming the file.
	p := patched(t, fixtures.Llama3, func(b []byte) {
		rename(t, b, "get_n_caches", "get_XX_cache")
		rename(t, b, "get_kv_heads", "get_n_caches")
		rename(t, b, "get_XX_cache", "get_kv_heads")
	})
	_, err := Load(p, Options{})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `"get_n_caches" returns a Tensor of Int, sizes [2], not an Int`) {
		t.Errorf("swapped constants: %v", err)
	}

	// A missing layout method: unsupported, with the reason.
	p = patched(t, fixtures.Llama3, func(b []byte) { rename(t, b, "get_windows", "get_windowz") })
	info, err := Load(p, Options{})
	if err != nil || info.Kind != Unsupported || !strings.Contains(info.KindReason, "not get_windows") {
		t.Errorf("missing get_windows: %v %+v", err, info)
	}

	// A negative window in the constant segment: inconsistent layout.
	p = patched(t, fixtures.Llama3, func(b []byte) { binary.LittleEndian.PutUint32(b[5120+48:], 0xffffffff) })
	info, err = Load(p, Options{})
	if err != nil || info.Kind != Unsupported || !strings.Contains(info.KindReason, "inconsistent") || !strings.Contains(info.KindReason, "window -1") {
		t.Errorf("negative window: %v %+v", err, info)
	}
	if _, err := info.CacheConfig(kvcache.DefaultPolicy()); err == nil || !strings.Contains(err.Error(), "unsupported") {
		t.Errorf("CacheConfig on unsupported: %v", err)
	}

	// A broken MLX blob is an error.
	p = patched(t, fixtures.Llama3, func(b []byte) { copy(b[5248+4:], "MLX9") })
	if _, err := Load(p, Options{}); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "MLX9") {
		t.Errorf("bad MLX magic: %v", err)
	}

	// Not a .pte at all.
	if _, err := Load(filepath.Join(fixtures.ModelDir(fixtures.Llama3), "config.json"), Options{}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("config.json: %v", err)
	}
}

func TestCompanionProblems(t *testing.T) {
	dir := t.TempDir()
	os.Symlink(fixtures.PTE(fixtures.Llama3), filepath.Join(dir, "model.pte"))
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "llama", "eos_token_id": "x"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"chat_template": `), 0o644)
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": 7}`), 0o644)
	os.Mkdir(filepath.Join(dir, "tokenizer.json"), 0o755)
	info, err := Load(filepath.Join(dir, "model.pte"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := info.Companion
	if c.Tokenizer != "" || c.HasChatTemplate || c.ModelType != "llama" || len(c.Problems) != 3 || !slices.Equal(info.EOSIDs, []int{7}) {
		t.Errorf("%+v eos %v", c, info.EOSIDs)
	}
	all := strings.Join(c.Problems, "\n")
	for _, want := range []string{"tokenizer.json: not a regular file", "tokenizer_config.json: not valid JSON", "config.json: eos_token_id"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}
	// A chat_template.jinja counts as a chat template.
	os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte("{{ messages }}"), 0o644)
	if c := FindCompanions(dir); !c.HasChatTemplate || c.ChatTemplate == "" {
		t.Errorf("jinja template not seen: %+v", c)
	}
}

func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(fixtures.Unpacked(b, fixtures.Gemma3), "model.pte")
	for b.Loop() {
		if _, err := Load(path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// The quantization record against the fixtures' READMEs: llama-bench-q4
// states its packed and scale bytes; the tiny ones their formats.
func TestQuantization(t *testing.T) {
	for _, c := range []struct {
		name, summary string
		groups        []QuantGroup
		bytes         int64 // 0: not stated by the README
	}{
		{fixtures.Llama3Q4, "4-bit", []QuantGroup{{4, 32, "affine", "matmul", 15, 0}, {4, 32, "affine", "embedding", 1, 0}}, 0},
		{fixtures.Qwen3Q8, "8-bit", []QuantGroup{{8, 64, "affine", "matmul", 13, 0}, {8, 128, "affine", "matmul", 2, 0},
			{8, 64, "affine", "embedding", 1, 0}}, 0},
		{fixtures.BenchQ4, "4-bit", []QuantGroup{{4, 32, "affine", "matmul", 57, 0}, {4, 32, "affine", "embedding", 1, 0}},
			16_252_928 + 2_031_616},
		{fixtures.Llama3, "fp32", nil, 0},
		{fixtures.BenchBF16, "bf16", nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := Load(fixtures.PTE(c.name), Options{NoCompanions: true})
			if err != nil {
				t.Fatal(err)
			}
			q := info.Quantization
			if q.Summary != c.summary {
				t.Errorf("summary %q, want %q", q.Summary, c.summary)
			}
			if len(q.Groups) != len(c.groups) {
				t.Fatalf("groups %+v, want %+v", q.Groups, c.groups)
			}
			var sum int64
			for i, g := range q.Groups {
				want := c.groups[i]
				want.Bytes = g.Bytes
				if g != want {
					t.Errorf("group %d: %+v, want %+v", i, g, want)
				}
				sum += g.Bytes
			}
			if sum != q.QuantizedBytes || (len(c.groups) > 0 && (sum <= 0 || sum >= info.Weights.Bytes)) {
				t.Errorf("quantized bytes %d (groups %d), weights %d", q.QuantizedBytes, sum, info.Weights.Bytes)
			}
			if c.bytes > 0 && q.QuantizedBytes != c.bytes {
				t.Errorf("quantized bytes %d, want %d", q.QuantizedBytes, c.bytes)
			}
			// Parameters count the quantized matrices' logical elements
			// (llama-bench-q4's reference states the model's 32,514,560,
			// the tied embedding once).
			var ref struct {
				Model struct {
					Params int64 `json:"n_parameters"`
				} `json:"model"`
			}
			fixtures.Reference(t, c.name, &ref)
			if ref.Model.Params > 0 && info.Weights.Params != ref.Model.Params {
				t.Errorf("parameters %d, want %d", info.Weights.Params, ref.Model.Params)
			}
			if info.Weights.BufferElements < 0 {
				t.Errorf("buffer elements %d", info.Weights.BufferElements)
			}
			// The embedding of a tied model shares the matmul's bytes.
			if n := len(q.Groups); n > 0 && q.Groups[n-1].Use == "embedding" && q.Groups[n-1].Bytes != 0 {
				t.Errorf("tied embedding counted twice: %+v", q.Groups[n-1])
			}
			t.Log(q.String())
		})
	}
}

// Summaries of mixed and nvfp4 graphs (synthetic: no such fixture).
func TestQuantizationSummary(t *testing.T) {
	qmm := func(bits, gs int32, mode string, w mlxgraph.Tid) mlxgraph.Instruction {
		return mlxgraph.Instruction{Kind: "QuantizedMatmulNode", Op: &mlxgraph.QuantizedMatmulNode{W: w, Bits: bits, GroupSize: gs, Mode: mode}}
	}
	for _, c := range []struct {
		ins  []mlxgraph.Instruction
		want string
	}{
		{[]mlxgraph.Instruction{qmm(4, 32, "affine", 0), qmm(8, 64, "affine", 1)}, "4/8-bit"},
		{[]mlxgraph.Instruction{qmm(4, 16, "nvfp4", 0)}, "nvfp4"},
		{[]mlxgraph.Instruction{qmm(4, 16, "nvfp4", 0), qmm(8, 32, "affine", 1)}, "8-bit + nvfp4"},
	} {
		info := &Info{Graph: &mlxgraph.Graph{Instructions: c.ins, Chains: [][]mlxgraph.Instruction{c.ins}, InitChain: -1}}
		info.quantization(&pte.File{})
		if info.Quantization.Summary != c.want || len(info.Quantization.Groups) != len(c.ins) {
			t.Errorf("%v: %+v, want %q", c.ins, info.Quantization, c.want)
		}
	}
}
