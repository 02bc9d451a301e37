package modelinfo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
)

// Model metadata of two generations (issue 45). ExecuTorch PR #22655
// (2026-09-09, after the pin cff6f4dd) renamed the chunk and capacity
// constants every off-graph MLX export publishes and added three more
// (extension/llm/export/model_metadata.py). Both generations are read
// through the one table below; the native library's reads
// (backend_executorch.cpp, ETProgram) follow the same rules.
const (
	// MethodMaxSeqLen: in #22655's exports the largest single forward step
	// (the prefill chunk); in ExecuTorch's older llama exports the context
	// length. metadataNames says which reading applies.
	MethodMaxSeqLen = "get_max_seq_len"
	// MethodMaxContextLen: #22655's name for the KV-cache capacity.
	MethodMaxContextLen = "get_max_context_len"
	// MethodVocabSize: the vocabulary (checked against forward's logits).
	MethodVocabSize = "get_vocab_size"
	// MethodActivationDType: an ExecuTorch ScalarType (5 half, 6 float,
	// 15 bfloat16); the KV storage dtype defaults to it.
	MethodActivationDType = "get_activation_dtype"
	// MethodLogitsToKeep: 0 full, 1 last, 2 selected (engine.LogitsMode).
	MethodLogitsToKeep = "get_logits_to_keep_mode"
)

// What this build reads of the containers' own versions.
const (
	// MaxProgramVersion is the highest Program.version the pinned runtime
	// reads: cff6f4dd writes 0 and does not look; newer runtimes refuse a
	// file above their own ("Program schema version N is newer than the
	// highest this runtime supports", PR #22114).
	MaxProgramVersion = 0
	// MaxMLXGraphVersion is the pinned MLX backend's kMaxSupportedVersion
	// (MLXBackend.cpp; an empty version string reads as 1).
	MaxMLXGraphVersion = 1
)

// metadataNames is the one table of the names each field is published
// under, the older exports' first. get_max_seq_len is read as the chunk
// when the file publishes a capacity under one of the capacity names (the
// #22655 contract: it names the largest step beside get_max_context_len),
// and as the capacity when it publishes none (ExecuTorch's older llama
// exports, whose get_max_seq_len was the context length).
var metadataNames = struct {
	chunk, capacity []string
	seqLen          string
}{
	chunk:    []string{MethodPrefillChunk, MethodMaxSeqLen},
	capacity: []string{MethodMaxCtxLen, MethodMaxContextLen},
	seqLen:   MethodMaxSeqLen,
}

// Metadata is what a program publishes about running it beyond its cache
// layout, each value with the name it was read from.
type Metadata struct {
	PrefillChunk int    `json:"prefill_chunk_size"` // largest forward step; 0 = not published
	ChunkFrom    string `json:"chunk_from"`         // the constant it came from
	MaxCtxLen    int    `json:"max_ctx_len"`        // KV-cache capacity; 0 = not published
	CapacityFrom string `json:"capacity_from"`
	// VocabSize is get_vocab_size (0 = not published); it agrees with
	// forward's logits width or the file is refused.
	VocabSize int `json:"vocab_size"`
	// ActivationDType is get_activation_dtype (0 = not published): the
	// export's compute dtype, and the KV storage dtype's default.
	ActivationDType kvcache.DType `json:"activation_dtype"`
	// LogitsMode is get_logits_to_keep_mode (LogitsFull when not
	// published; LogitsPublished says whether it was).
	LogitsMode      engine.LogitsMode `json:"logits_to_keep_mode"`
	LogitsPublished bool              `json:"logits_to_keep_published"`
}

// MetadataError: the program's metadata cannot be taken at its word: two
// names of one field disagree, a value is out of range or unknown, or it
// contradicts forward's own signature. Re-exporting fixes it.
type MetadataError struct {
	Path    string
	Methods []string // the constants at fault
	Msg     string
}

func (e *MetadataError) Error() string { return e.Path + ": " + e.Msg }

// ReadMetadata reads the chunk, capacity, vocabulary, activation dtype and
// logits mode through the one table of names, checking each value. A
// constant of the wrong type is a *pte.FormatError or the like; a value
// etchat cannot take is a *MetadataError.
func ReadMetadata(f *pte.File) (Metadata, error) {
	var md Metadata
	ints := map[string]int{}
	for _, name := range append(append([]string{}, metadataNames.chunk...), metadataNames.capacity...) {
		if _, ok := f.Method(name); !ok {
			continue
		}
		n, err := intConstant(f, name, 1, kvcache.MaxCapacity)
		if err != nil {
			return md, err
		}
		ints[name] = n
	}
	var err error
	if md.CapacityFrom, md.MaxCtxLen, err = oneOf(f.Path, "the KV-cache capacity", ints, metadataNames.capacity); err != nil {
		return md, err
	}
	chunkNames := metadataNames.chunk
	if n, ok := ints[metadataNames.seqLen]; ok && md.CapacityFrom == "" {
		md.CapacityFrom, md.MaxCtxLen = metadataNames.seqLen, n
		chunkNames = []string{MethodPrefillChunk}
	}
	if md.ChunkFrom, md.PrefillChunk, err = oneOf(f.Path, "the largest forward step (the prefill chunk)", ints, chunkNames); err != nil {
		return md, err
	}
	if err := md.readNew(f); err != nil {
		return md, err
	}
	return md, nil
}

// oneOf is the value of the first of names the file publishes, refusing
// two that disagree.
func oneOf(path, what string, ints map[string]int, names []string) (string, int, error) {
	from, val := "", 0
	for _, name := range names {
		n, ok := ints[name]
		switch {
		case !ok:
		case from == "":
			from, val = name, n
		case n != val:
			return "", 0, &MetadataError{Path: path, Methods: []string{from, name},
				Msg: fmt.Sprintf("%s = %d and %s = %d disagree: both name %s; re-export the model, or publish one of them", from, val, name, n, what)}
		}
	}
	return from, val, nil
}

// readNew reads the fields #22655 added.
func (md *Metadata) readNew(f *pte.File) error {
	bad := func(name, format string, a ...any) error {
		return &MetadataError{Path: f.Path, Methods: []string{name}, Msg: fmt.Sprintf(format, a...)}
	}
	if _, ok := f.Method(MethodVocabSize); ok {
		n, err := intValue(f, MethodVocabSize)
		if err != nil {
			return err
		}
		if n <= 0 || n > 1<<31-1 {
			return bad(MethodVocabSize, "%s = %d is not a vocabulary size", MethodVocabSize, n)
		}
		md.VocabSize = int(n)
	}
	if _, ok := f.Method(MethodActivationDType); ok {
		n, err := intValue(f, MethodActivationDType)
		if err != nil {
			return err
		}
		switch dt := kvcache.DType(n); dt {
		case kvcache.Float16, kvcache.Float32, kvcache.BFloat16:
			md.ActivationDType = dt
		default:
			return bad(MethodActivationDType, "%s = %d is not a dtype etchat runs (5 half, 6 float, 15 bfloat16)", MethodActivationDType, n)
		}
	}
	if _, ok := f.Method(MethodLogitsToKeep); ok {
		n, err := intValue(f, MethodLogitsToKeep)
		if err != nil {
			return err
		}
		if n < int64(engine.LogitsFull) || n > int64(engine.LogitsSelected) {
			return bad(MethodLogitsToKeep, "%s = %d is not a mode etchat knows (0 full, 1 last, 2 selected)", MethodLogitsToKeep, n)
		}
		md.LogitsMode, md.LogitsPublished = engine.LogitsMode(n), true
	}
	return nil
}

func intValue(f *pte.File, name string) (int64, error) {
	v, err := f.Constant(name)
	if err != nil {
		return 0, err
	}
	n, err := v.Int()
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", f.Path, name, err)
	}
	return n, nil
}

// checkForward holds the metadata to forward's signature: the published
// vocabulary is the logits' width, a mode-1 program returns one row, a
// mode-2 program takes the Long row indices as its third input.
func (md *Metadata) checkForward(path string, forward *pte.Method, vocab int) error {
	bad := func(name, format string, a ...any) error {
		return &MetadataError{Path: path, Methods: []string{name}, Msg: fmt.Sprintf(format, a...)}
	}
	if md.VocabSize > 0 && vocab > 0 && md.VocabSize != vocab {
		return bad(MethodVocabSize, "%s = %d but forward's logits are %d wide: the file disagrees with itself; re-export it", MethodVocabSize, md.VocabSize, vocab)
	}
	switch md.LogitsMode {
	case engine.LogitsLast:
		if len(forward.Outputs) > 0 {
			if s := forward.Outputs[0].Sizes; len(s) >= 2 && s[len(s)-2] != 1 {
				return bad(MethodLogitsToKeep, "%s = 1 (the last position only) but forward returns %d rows (%s)", MethodLogitsToKeep, s[len(s)-2], forward.Describe())
			}
		}
	case engine.LogitsSelected:
		if len(forward.Inputs) != 3 || forward.Inputs[2].Kind != pte.KindTensor || forward.Inputs[2].DType != pte.Long {
			return bad(MethodLogitsToKeep, "%s = 2 (selected rows) but forward does not take the Long row indices as its third input (%s)", MethodLogitsToKeep, forward.Describe())
		}
	}
	return nil
}

// NewerExport is the reason given for a file written by a newer ExecuTorch
// than this build reads: what is beyond it, and what to do.
func NewerExport(what string) string {
	return fmt.Sprintf("exported by a newer ExecuTorch than this etchat reads (%s): re-export with an ExecuTorch of this schema, or update etchat", what)
}

// newerThanBuild says what in the file is beyond this build ("" when
// nothing): the Program schema version, the MLX graph's version, or an op
// type the pinned MLX schema does not have (graphErr, the graph's parse).
// newer is false for a graph version that is not a number (not newer,
// just unreadable).
func newerThanBuild(f *pte.File, g *mlxgraph.Graph, graphErr error) (why string, newer bool) {
	if f.Version > MaxProgramVersion {
		return NewerExport(fmt.Sprintf("Program schema version %d; this build reads up to %d", f.Version, MaxProgramVersion)), true
	}
	var op *mlxgraph.UnknownOpError
	if errors.As(graphErr, &op) {
		return NewerExport(fmt.Sprintf("the MLX graph has op type %d; this build's schema knows 1..%d", op.Type, op.Known)), true
	}
	if g != nil {
		v := 1
		if s := strings.TrimSpace(g.Version); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Sprintf("the MLX graph's version %q is not a number", g.Version), false
			}
			v = n
		}
		if v > MaxMLXGraphVersion {
			return NewerExport(fmt.Sprintf("MLX graph version %d; this build reads up to %d", v, MaxMLXGraphVersion)), true
		}
	}
	return "", false
}

// methodLayouts are program layouts other exporters write instead of one
// forward, by the methods that mark them.
var methodLayouts = []struct {
	methods []string
	name    string
}{
	{[]string{"prefill", "decode"}, "separate prefill and decode methods"},
	{[]string{"embed_text", "forward_from_embeddings"}, "embed_text + forward_from_embeddings (a multimodal layout, as Hugging Face's optimum-executorch writes)"},
	{[]string{"text_decoder"}, "a text_decoder method (a multimodal layout)"},
}

// noForward is the reason a program without forward is unsupported,
// naming its layout where it is one other exporters write.
func noForward(f *pte.File) string {
	if l := otherLayout(f); l != "" {
		return fmt.Sprintf("the program has %s and no forward method: that layout is not supported (etchat runs one forward)", l)
	}
	return "the program has no forward method"
}

// otherLayout names the layout of a program without forward ("" when it
// is none etchat knows).
func otherLayout(f *pte.File) string {
	for _, l := range methodLayouts {
		all := true
		for _, name := range l.methods {
			if m, ok := f.Method(name); !ok || m.IsConstant {
				all = false
			}
		}
		if all {
			return l.name
		}
	}
	return ""
}
