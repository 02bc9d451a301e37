package modelinfo

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/pte"
	"etchat/inference/pte/ptetest"
	"etchat/internal/fixtures"
)

// Both twins of llama3-tiny-q4 written with #22655's metadata read as
// off-graph with the chunk and capacity of the older names, the new
// fields read, and the KV dtype following the activation dtype.
func TestNewerMetadataTwins(t *testing.T) {
	for _, c := range []struct {
		name string
		mode engine.LogitsMode
		rows int64 // forward's logits rows (its output's second size)
	}{
		{fixtures.Llama3Q4Meta2, engine.LogitsFull, 32},
		{fixtures.Llama3Q4Last, engine.LogitsLast, 1},
	} {
		info, err := Load(fixtures.PTE(c.name), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		md := info.Metadata
		if info.Kind != OffGraph || info.PrefillChunk != 32 || info.MaxCtxLen != 128 || info.VocabSize != 128256 {
			t.Errorf("%s: %s (%s) chunk %d ctx %d vocab %d, want off-graph 32 128 128256", c.name, info.Kind, info.KindReason, info.PrefillChunk, info.MaxCtxLen, info.VocabSize)
		}
		if md.ChunkFrom != MethodMaxSeqLen || md.CapacityFrom != MethodMaxContextLen || md.VocabSize != 128256 ||
			md.ActivationDType != kvcache.Float32 || md.LogitsMode != c.mode || !md.LogitsPublished {
			t.Errorf("%s: metadata %+v", c.name, md)
		}
		if !strings.Contains(info.KindReason, "get_max_seq_len=32") {
			t.Errorf("%s: reason %q does not name the chunk's source", c.name, info.KindReason)
		}
		fwd, _ := info.File.Method("forward")
		if s := fwd.Outputs[0].Sizes; s[1] != c.rows {
			t.Errorf("%s: forward returns %v, want %d rows", c.name, s, c.rows)
		}
		// fp32 activations: the cache stores fp32 unless the user chooses.
		cfg, err := info.CacheConfig(kvcache.DefaultPolicy())
		if err != nil || cfg.DType != kvcache.Float32 || cfg.DTypeFrom != kvcache.DTypeFromModel || cfg.Capacity != 128 || cfg.MaxWrite != 32 {
			t.Errorf("%s: default cache %+v, %v", c.name, cfg, err)
		}
		cfg, err = info.CacheConfig(kvcache.Policy{StorageDType: "bf16", InitialCapacity: -1})
		if err != nil || cfg.DType != kvcache.BFloat16 || cfg.DTypeFrom != kvcache.DTypeChosen {
			t.Errorf("%s: chosen bf16: %+v, %v", c.name, cfg, err)
		}
	}
	// An older export publishes no activation dtype: bf16 by default, as
	// before.
	info, err := Load(fixtures.PTE(fixtures.Llama3Q4), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if md := info.Metadata; md.ChunkFrom != MethodPrefillChunk || md.CapacityFrom != MethodMaxCtxLen || md.ActivationDType != 0 || md.LogitsPublished || md.VocabSize != 0 {
		t.Errorf("older export's metadata %+v", md)
	}
	if cfg, err := info.CacheConfig(kvcache.DefaultPolicy()); err != nil || cfg.DType != kvcache.BFloat16 || cfg.DTypeFrom != kvcache.DTypeDefault {
		t.Errorf("older export's default cache %+v, %v", cfg, err)
	}
}

// constants builds a synthetic program of Int constants only.
func constProgram(kv ...any) ptetest.Program {
	var p ptetest.Program
	for i := 0; i < len(kv); i += 2 {
		p.Methods = append(p.Methods, ptetest.Constant(kv[i].(string), ptetest.IntValue(int64(kv[i+1].(int)))))
	}
	return p
}

func writeProgram(t *testing.T, p ptetest.Program) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(path, ptetest.Build(p), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readMetadata(t *testing.T, p ptetest.Program) (Metadata, error) {
	t.Helper()
	f, err := pte.Open(writeProgram(t, p))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ReadMetadata(f)
}

// The one table of names: both generations, get_max_seq_len read by what
// else the file publishes, and two names of one field that disagree
// refused naming both.
func TestReadMetadataNames(t *testing.T) {
	for _, c := range []struct {
		what                    string
		prog                    ptetest.Program
		chunk, capacity         int
		chunkFrom, capacityFrom string
		wantErr                 string
		wantMethods             []string
	}{
		{what: "older names", prog: constProgram("get_prefill_chunk_size", 32, "get_max_ctx_len", 128),
			chunk: 32, capacity: 128, chunkFrom: MethodPrefillChunk, capacityFrom: MethodMaxCtxLen},
		{what: "#22655's names: get_max_seq_len is the largest step", prog: constProgram("get_max_seq_len", 32, "get_max_context_len", 128),
			chunk: 32, capacity: 128, chunkFrom: MethodMaxSeqLen, capacityFrom: MethodMaxContextLen},
		{what: "older llama export: get_max_seq_len is the context length", prog: constProgram("get_max_seq_len", 256, "get_prefill_chunk_size", 16),
			chunk: 16, capacity: 256, chunkFrom: MethodPrefillChunk, capacityFrom: MethodMaxSeqLen},
		{what: "get_max_seq_len beside get_max_ctx_len is the step", prog: constProgram("get_max_seq_len", 8, "get_max_ctx_len", 64),
			chunk: 8, capacity: 64, chunkFrom: MethodMaxSeqLen, capacityFrom: MethodMaxCtxLen},
		{what: "both generations, agreeing", prog: constProgram("get_prefill_chunk_size", 32, "get_max_seq_len", 32, "get_max_ctx_len", 128, "get_max_context_len", 128),
			chunk: 32, capacity: 128, chunkFrom: MethodPrefillChunk, capacityFrom: MethodMaxCtxLen},
		{what: "capacities disagree", prog: constProgram("get_max_ctx_len", 128, "get_max_context_len", 64),
			wantErr: "get_max_ctx_len = 128 and get_max_context_len = 64 disagree: both name the KV-cache capacity", wantMethods: []string{MethodMaxCtxLen, MethodMaxContextLen}},
		{what: "steps disagree", prog: constProgram("get_prefill_chunk_size", 32, "get_max_seq_len", 16, "get_max_context_len", 128),
			wantErr: "get_prefill_chunk_size = 32 and get_max_seq_len = 16 disagree: both name the largest forward step", wantMethods: []string{MethodPrefillChunk, MethodMaxSeqLen}},
		{what: "no names", prog: constProgram("get_n_caches", 2)},
	} {
		md, err := readMetadata(t, c.prog)
		if c.wantErr != "" {
			var me *MetadataError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), c.wantErr) || !slices.Equal(me.Methods, c.wantMethods) {
				t.Errorf("%s: error %v, want a *MetadataError on %v saying %q", c.what, err, c.wantMethods, c.wantErr)
			}
			continue
		}
		if err != nil || md.PrefillChunk != c.chunk || md.MaxCtxLen != c.capacity || md.ChunkFrom != c.chunkFrom || md.CapacityFrom != c.capacityFrom {
			t.Errorf("%s: %+v, %v; want chunk %d from %q, capacity %d from %q", c.what, md, err, c.chunk, c.chunkFrom, c.capacity, c.capacityFrom)
		}
	}
}

// The new fields are validated: a known dtype, a mode 0–2, a positive
// vocabulary.
func TestReadMetadataNewFields(t *testing.T) {
	md, err := readMetadata(t, constProgram("get_vocab_size", 16, "get_activation_dtype", 15, "get_logits_to_keep_mode", 2))
	if err != nil || md.VocabSize != 16 || md.ActivationDType != kvcache.BFloat16 || md.LogitsMode != engine.LogitsSelected || !md.LogitsPublished {
		t.Errorf("%+v, %v", md, err)
	}
	for _, c := range []struct {
		prog ptetest.Program
		want string
	}{
		{constProgram("get_activation_dtype", 7), "get_activation_dtype = 7 is not a dtype etchat runs (5 half, 6 float, 15 bfloat16)"},
		{constProgram("get_logits_to_keep_mode", 3), "get_logits_to_keep_mode = 3 is not a mode etchat knows (0 full, 1 last, 2 selected)"},
		{constProgram("get_vocab_size", 0), "get_vocab_size = 0 is not a vocabulary size"},
		{constProgram("get_max_context_len", 0), "get_max_context_len = 0 is out of range"},
	} {
		_, err := readMetadata(t, c.prog)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// withConstants is the synthetic full program (forward delegated to MLX,
// logits Float[1 8 16]) with Int constants added.
func withConstants(p ptetest.Program, kv ...any) ptetest.Program {
	p.Methods = append(p.Methods, constProgram(kv...).Methods...)
	return p
}

// What this build cannot read is said when the file is read: a newer
// Program, a newer MLX graph or op, another exporter's method layout; and
// metadata that contradicts forward is an error naming it.
func TestRefusedExports(t *testing.T) {
	newerGraph := ptetest.SmallGraph()
	newerGraph.Version = "2"
	unknownOp := ptetest.SmallGraph()
	unknownOp.Chains[0] = append(unknownOp.Chains[0], ptetest.MLXNode{Type: 250, Fields: ptetest.Fields{}})
	newerProgram := ptetest.FullProgram(ptetest.SmallGraph())
	newerProgram.Version = 1

	selected := ptetest.FullProgram(ptetest.SmallGraph())
	fwd := selected.Methods[0]
	fwd.Values = append(slices.Clone(fwd.Values), ptetest.Value{Kind: pte.KindTensor, Tensor: &ptetest.Tensor{DType: pte.Long, Sizes: []int32{8}, Dynamism: pte.DynamicBound}})
	fwd.Inputs = []int32{0, 1, int32(len(fwd.Values) - 1)}
	selected.Methods = []ptetest.Method{fwd, selected.Methods[1]}

	prefillDecode := ptetest.FullProgram(ptetest.SmallGraph())
	prefill, decode := prefillDecode.Methods[0], prefillDecode.Methods[0]
	prefill.Name, decode.Name = "prefill", "decode"
	prefillDecode.Methods = []ptetest.Method{prefill, decode}
	embed := ptetest.FullProgram(ptetest.SmallGraph())
	e1, e2 := embed.Methods[0], embed.Methods[0]
	e1.Name, e2.Name = "embed_text", "forward_from_embeddings"
	embed.Methods = []ptetest.Method{e1, e2}

	for _, c := range []struct {
		what       string
		prog       ptetest.Program
		wantReason string // Unsupported with this reason
		wantErr    string // or a *MetadataError saying this
	}{
		{what: "newer Program version", prog: newerProgram,
			wantReason: "exported by a newer ExecuTorch than this etchat reads (Program schema version 1; this build reads up to 0): re-export with an ExecuTorch of this schema, or update etchat"},
		{what: "newer MLX graph version", prog: ptetest.FullProgram(newerGraph),
			wantReason: "exported by a newer ExecuTorch than this etchat reads (MLX graph version 2; this build reads up to 1): re-export"},
		{what: "unknown MLX op", prog: ptetest.FullProgram(unknownOp),
			wantReason: "exported by a newer ExecuTorch than this etchat reads (the MLX graph has op type 250; this build's schema knows 1..",
		},
		{what: "prefill/decode", prog: prefillDecode,
			wantReason: "the program has separate prefill and decode methods and no forward method: that layout is not supported"},
		{what: "embed_text/forward_from_embeddings", prog: embed,
			wantReason: "the program has embed_text + forward_from_embeddings (a multimodal layout, as Hugging Face's optimum-executorch writes) and no forward method: that layout is not supported"},
		{what: "vocabulary mismatch", prog: withConstants(ptetest.FullProgram(ptetest.SmallGraph()), "get_vocab_size", 17),
			wantErr: "get_vocab_size = 17 but forward's logits are 16 wide"},
		{what: "mode 1 returning every row", prog: withConstants(ptetest.FullProgram(ptetest.SmallGraph()), "get_logits_to_keep_mode", 1),
			wantErr: "get_logits_to_keep_mode = 1 (the last position only) but forward returns 8 rows"},
		{what: "mode 2 without row indices", prog: withConstants(ptetest.FullProgram(ptetest.SmallGraph()), "get_logits_to_keep_mode", 2),
			wantErr: "get_logits_to_keep_mode = 2 (selected rows) but forward does not take the Long row indices as its third input"},
	} {
		info, err := Load(writeProgram(t, c.prog), Options{NoCompanions: true})
		if c.wantErr != "" {
			var me *MetadataError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want a *MetadataError saying %q", c.what, err, c.wantErr)
			}
			continue
		}
		if err != nil || info.Kind != Unsupported || !strings.Contains(info.KindReason, c.wantReason) {
			t.Errorf("%s: %v, %+v; want unsupported: %q", c.what, err, info, c.wantReason)
		}
	}

	// Mode 2 with its third input reads.
	info, err := Load(writeProgram(t, withConstants(selected, "get_logits_to_keep_mode", 2, "get_vocab_size", 16)), Options{NoCompanions: true})
	if err != nil || info.Metadata.LogitsMode != engine.LogitsSelected || info.Metadata.VocabSize != 16 {
		t.Errorf("mode 2: %v %+v", err, info)
	}
}
