// Package modelinfo says what a .pte model is and what running it needs:
// its kind (off-graph KV cache with a published layout, in-graph cache, or
// unsupported, each with a reason), its cache layout, context and chunk
// limits, vocabulary, EOS ids, weights (bytes, dtypes, parameter count), a
// summary of its MLX graph, and the companion files next to it
// (tokenizer.json, tokenizer_config.json, generation_config.json,
// config.json). It reads the .pte through package pte: the Program, the
// constant segment and the MLX delegate blob, not the weights. The CLI's
// inspect, the app's library view and both engines use it.
package modelinfo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"etchat/inference/kvcache"
	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
)

// Kind is how a model keeps its KV cache.
type Kind string

// The kinds.
const (
	// OffGraph: the program publishes its cache layout through constant
	// methods and the runtime owns the cache (kvcache::update_and_attend).
	OffGraph Kind = "off-graph"
	// InGraph: the cache lives inside the program (MLX mutable buffers).
	InGraph Kind = "in-graph"
	// Unsupported: neither; KindReason says why.
	Unsupported Kind = "unsupported"
)

// The constant methods of an off-graph export (older names; metadata.go
// has #22655's).
const (
	MethodNCaches      = "get_n_caches"
	MethodKVHeads      = "get_kv_heads"
	MethodHeadDims     = "get_head_dims"
	MethodWindows      = "get_windows"
	MethodPrefillChunk = "get_prefill_chunk_size"
	MethodMaxCtxLen    = "get_max_ctx_len"
	MethodEOSIDs       = "get_eos_ids"
)

// MLXBackendID is the MLX delegate's backend id.
const MLXBackendID = "MLXBackend"

// Limits on what is read.
const (
	maxGraphBytes     = 256 << 20 // an MLX graph flatbuffer
	maxCompanionBytes = 64 << 20  // a JSON companion file
)

// Options choose the optional, expensive parts of Load.
type Options struct {
	// Hash computes the file's SHA-256 with a separate streaming pass over
	// the whole file (not counted in BytesRead).
	Hash bool
	// NoCompanions skips looking for files next to the .pte.
	NoCompanions bool
}

// Constant is one constant method and its value.
type Constant struct {
	Name  string    `json:"name"`
	Kind  string    `json:"kind"` // "Int", "Tensor", …
	Value pte.Value `json:"value"`
}

// Delegate is one delegate with the method that calls it.
type Delegate struct {
	Method string `json:"method"`
	pte.Delegate
}

// MLX summarizes the forward method's MLX graph.
type MLX struct {
	Version              string         `json:"version"`
	Instructions         int            `json:"instructions"`
	OpHistogram          map[string]int `json:"op_histogram"`
	ConstantTensors      int            `json:"constant_tensors"`
	InputTensors         int            `json:"input_tensors"`
	OutputTensors        int            `json:"output_tensors"`
	MutableBufferTensors int            `json:"mutable_buffer_tensors"`
	TempTensors          int            `json:"temp_tensors"`
	Values               int            `json:"values"`
	MutableBuffers       []string       `json:"mutable_buffers"`  // names of the mutable buffer slots
	AttentionLayers      []int          `json:"attention_layers"` // UpdateAndAttendNode layer ids, in graph order
	BlobBytes            int64          `json:"blob_bytes"`
	BlobDataBytes        int64          `json:"blob_data_bytes"` // constant data carried inside the blob
}

// Weights describes the named-data weights.
type Weights struct {
	Bytes  int64          `json:"bytes"`  // distinct weight segments
	DTypes []string       `json:"dtypes"` // by tensor count, most first
	Counts map[string]int `json:"dtype_counts"`
	// Params counts the elements of parameters (named …weight or …bias),
	// each tensor once; BufferElements counts the other constants
	// (rotary inv_freq, lifted scalars, embed_scale).
	Params         int64 `json:"params"`
	BufferElements int64 `json:"buffer_elements"`
	Tensors        int   `json:"tensors"` // named_data entries
}

// Companions are the files found next to the .pte ("" when missing).
type Companions struct {
	Dir              string   `json:"dir"`
	Tokenizer        string   `json:"tokenizer"`
	TokenizerConfig  string   `json:"tokenizer_config"`
	GenerationConfig string   `json:"generation_config"`
	Config           string   `json:"config"`
	ChatTemplate     string   `json:"chat_template"` // a chat_template.jinja file, if any
	HasChatTemplate  bool     `json:"has_chat_template"`
	ModelType        string   `json:"model_type"`
	Problems         []string `json:"problems"` // companions that exist but could not be read
	// EOS ids each file states (nil when absent).
	GenerationEOS []int `json:"generation_eos"`
	ConfigEOS     []int `json:"config_eos"`
}

// Info is everything Load learned about a model.
type Info struct {
	Path       string `json:"path"`
	SizeBytes  int64  `json:"size_bytes"`
	SHA256     string `json:"sha256,omitempty"`
	Kind       Kind   `json:"kind"`
	KindReason string `json:"kind_reason"`

	Layout       *kvcache.Layout `json:"-"` // off-graph only
	MaxCtxLen    int             `json:"max_ctx_len"`
	PrefillChunk int             `json:"prefill_chunk_size"`
	VocabSize    int             `json:"vocab_size"`
	LogitsDType  string          `json:"logits_dtype"`
	// Metadata is the program's own word on its limits, dtype and logits
	// rows, with the names it was read from (MaxCtxLen and PrefillChunk
	// above are its values).
	Metadata Metadata `json:"metadata"`
	// NewerExport: the file is Unsupported because a newer ExecuTorch
	// wrote it (its Program or MLX graph version, or an op type, is beyond
	// this build); KindReason says which.
	NewerExport bool   `json:"newer_export"`
	EOSIDs      []int  `json:"eos_ids"`
	EOSSource   string `json:"eos_source"` // get_eos_ids, generation_config.json or config.json

	Header    pte.Header   `json:"header"`
	Segments  int          `json:"segments"`
	Methods   []pte.Method `json:"methods"`
	Constants []Constant   `json:"constant_methods"`
	Delegates []Delegate   `json:"delegates"`
	NamedData int          `json:"named_data"`
	Weights   Weights      `json:"weights"`
	// Quantization: the quantized weight groups and a short summary
	// ("4-bit", "8-bit", "bf16", "fp32").
	Quantization Quantization `json:"quantization"`
	MLX          *MLX         `json:"mlx"`
	Companion    Companions   `json:"companions"`
	// NamedKeys are the named_data keys, in file order.
	NamedKeys []string `json:"-"`
	// File is the parsed container (segments, named data with absolute
	// offsets, methods). Load has closed it: use its offsets and reopen the
	// path (pte.Open) to read bytes.
	File *pte.File `json:"-"`
	// Graph is forward's parsed MLX graph (nil without an MLX delegate).
	Graph *mlxgraph.Graph `json:"-"`

	// BytesRead is how much of the .pte Load read (without the hash pass).
	BytesRead int64 `json:"bytes_read"`
}

// Load reads what there is to know about the .pte at path. Errors name the
// file; a readable model that etchat cannot run is not an error but has
// Kind Unsupported.
func Load(path string, opts Options) (*Info, error) {
	f, err := pte.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := fromFile(f, path, opts)
	if err != nil {
		return nil, err
	}
	if opts.Hash {
		if info.SHA256, err = HashFile(path); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// FromFile is Load for a file the caller has opened (and keeps open; then
// Info.File stays readable). Options.Hash needs f.Path.
func FromFile(f *pte.File, opts Options) (*Info, error) {
	info, err := fromFile(f, f.Path, opts)
	if err != nil {
		return nil, err
	}
	if opts.Hash {
		if f.Path == "" {
			return nil, errors.New("modelinfo: cannot hash a file parsed from a reader")
		}
		if info.SHA256, err = HashFile(f.Path); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// HashFile is the hex SHA-256 of a file, streamed.
func HashFile(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", fmt.Errorf("%s: hashing: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fromFile(f *pte.File, path string, opts Options) (*Info, error) {
	info := &Info{
		Path: path, SizeBytes: f.Size, Header: f.Header, Segments: len(f.Segments),
		Methods: f.Methods, NamedData: len(f.NamedData), File: f,
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
	}

	for _, m := range f.Methods {
		for _, d := range m.Delegates {
			info.Delegates = append(info.Delegates, Delegate{Method: m.Name, Delegate: d})
		}
		if !m.IsConstant {
			continue
		}
		v, err := f.Constant(m.Name)
		if err != nil {
			return nil, err
		}
		info.Constants = append(info.Constants, Constant{Name: m.Name, Kind: v.Kind.String(), Value: v})
	}

	// Limits every kind may publish, under either generation's names.
	md, err := ReadMetadata(f)
	if err != nil {
		return nil, err
	}
	info.Metadata, info.MaxCtxLen, info.PrefillChunk = md, md.MaxCtxLen, md.PrefillChunk
	if err := info.readEOS(f); err != nil {
		return nil, err
	}

	// forward: vocabulary from its logits, and its MLX graph.
	forward, hasForward := f.Method("forward")
	if hasForward && len(forward.Outputs) > 0 {
		out := forward.Outputs[0]
		if out.Kind == pte.KindTensor && len(out.Sizes) > 0 {
			info.VocabSize = int(out.Sizes[len(out.Sizes)-1])
			info.LogitsDType = out.DType.String()
		}
	}
	var mlxDelegate *pte.Delegate
	if hasForward {
		for i := range forward.Delegates {
			if forward.Delegates[i].ID == MLXBackendID {
				mlxDelegate = &forward.Delegates[i]
				break
			}
		}
	}
	var graphErr error
	if mlxDelegate != nil {
		if graphErr, err = info.readForwardGraph(f, mlxDelegate); err != nil {
			return nil, fail("forward's MLX delegate: %v", err)
		}
	}
	info.weights(f)
	info.quantization(f)
	if hasForward {
		if err := info.Metadata.checkForward(path, forward, info.VocabSize); err != nil {
			return nil, err
		}
	}

	if why, newer := newerThanBuild(f, info.Graph, graphErr); why != "" {
		info.Kind, info.KindReason, info.NewerExport = Unsupported, why, newer
	} else if err := info.classify(f, forward, hasForward, mlxDelegate); err != nil {
		return nil, err
	}

	if !opts.NoCompanions {
		info.Companion = findCompanions(filepath.Dir(path))
		if info.EOSIDs == nil {
			switch {
			case info.Companion.GenerationEOS != nil:
				info.EOSIDs, info.EOSSource = info.Companion.GenerationEOS, "generation_config.json"
			case info.Companion.ConfigEOS != nil:
				info.EOSIDs, info.EOSSource = info.Companion.ConfigEOS, "config.json"
			}
		}
	}
	info.BytesRead = f.BytesRead()
	return info, nil
}

// readForwardGraph reads and summarizes forward's MLX graph. An op type
// this reader's schema does not have is not a failure but newer, the
// graph left unread: it comes back as newer for the kind's reason.
func (info *Info) readForwardGraph(f *pte.File, d *pte.Delegate) (newer, err error) {
	g, blobData, err := readGraph(f, d)
	var op *mlxgraph.UnknownOpError
	switch {
	case errors.As(err, &op):
		return err, nil
	case err != nil:
		return nil, err
	}
	info.Graph = g
	info.MLX = summarize(g, g.NamedSlots)
	info.MLX.BlobBytes, info.MLX.BlobDataBytes = d.Size, blobData
	return nil, nil
}

// intConstant evaluates an Int constant method and checks its range.
func intConstant(f *pte.File, name string, lo, hi int64) (int, error) {
	v, err := f.Constant(name)
	if err != nil {
		return 0, err
	}
	n, err := v.Int()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.Path, err)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s: %s = %d is out of range (%d..%d)", f.Path, name, n, lo, hi)
	}
	return int(n), nil
}

// intsConstant evaluates a list-of-integers constant method.
func intsConstant(f *pte.File, name string) ([]int, error) {
	v, err := f.Constant(name)
	if err != nil {
		return nil, err
	}
	xs, err := v.Ints()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	out := make([]int, len(xs))
	for i, x := range xs {
		if x < -1<<31 || x > 1<<31-1 {
			return nil, fmt.Errorf("%s: %s[%d] = %d is out of range", f.Path, name, i, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

func (info *Info) readEOS(f *pte.File) error {
	for _, name := range []string{MethodEOSIDs, "get_eos_id"} {
		m, ok := f.Method(name)
		if !ok || !m.IsConstant {
			continue
		}
		v, err := f.Constant(name)
		if err != nil {
			return err
		}
		if n, err := v.Int(); err == nil {
			info.EOSIDs, info.EOSSource = []int{int(n)}, name
			return nil
		}
		ids, err := intsConstant(f, name)
		if err != nil {
			return err
		}
		info.EOSIDs, info.EOSSource = ids, name
		return nil
	}
	return nil
}

// readGraph reads the MLX blob's header and flatbuffer (not any constant
// data the blob may carry after it) and parses the graph.
func readGraph(f *pte.File, d *pte.Delegate) (*mlxgraph.Graph, int64, error) {
	if d.Size < mlxgraph.HeaderSize+4 {
		return nil, 0, fmt.Errorf("blob of %d bytes is too short", d.Size)
	}
	head, err := f.ReadRange(d.Offset, mlxgraph.HeaderSize)
	if err != nil {
		return nil, 0, err
	}
	if string(head[4:8]) != mlxgraph.Magic {
		return nil, 0, fmt.Errorf("blob at file offset %d has magic %q, want %q", d.Offset, head[4:8], mlxgraph.Magic)
	}
	dataOff := binary.LittleEndian.Uint64(head[8:])
	dataSize := binary.LittleEndian.Uint64(head[16:])
	if dataOff < mlxgraph.HeaderSize || dataOff > uint64(d.Size) || dataSize > uint64(d.Size)-dataOff {
		return nil, 0, fmt.Errorf("blob data segment at %d (+%d bytes) lies outside the %d-byte blob", dataOff, dataSize, d.Size)
	}
	if dataOff-mlxgraph.HeaderSize > maxGraphBytes {
		return nil, 0, fmt.Errorf("graph of %d bytes is above the %d-byte limit", dataOff-mlxgraph.HeaderSize, maxGraphBytes)
	}
	fb, err := f.ReadRange(d.Offset+mlxgraph.HeaderSize, int64(dataOff)-mlxgraph.HeaderSize)
	if err != nil {
		return nil, 0, err
	}
	g, err := mlxgraph.ParseFlatbuffer(fb)
	if err != nil {
		return nil, 0, err
	}
	g.DataSegmentOffset, g.DataSegmentSize = dataOff, dataSize
	return g, int64(dataSize), nil
}

func summarize(g *mlxgraph.Graph, slots []mlxgraph.NamedSlot) *MLX {
	m := &MLX{
		Version: g.Version, OpHistogram: g.Histogram(),
		ConstantTensors: g.NumConstantTensors, InputTensors: g.NumInputTensors, OutputTensors: g.NumOutputTensors,
		MutableBufferTensors: g.NumMutableBufferTensors, TempTensors: g.NumTempTensors, Values: g.NumValues,
	}
	for _, n := range m.OpHistogram {
		m.Instructions += n
	}
	for _, mb := range g.MutableBuffers {
		name := fmt.Sprintf("%s slot %d", mb.Type, mb.Idx)
		for _, ns := range slots {
			if ns.Slot == mb {
				name = ns.Name
				break
			}
		}
		m.MutableBuffers = append(m.MutableBuffers, name)
	}
	for _, in := range g.Instructions {
		if n, ok := in.Op.(*mlxgraph.UpdateAndAttendNode); ok {
			id := -1
			if n.LayerID != nil {
				id = int(*n.LayerID)
			}
			m.AttentionLayers = append(m.AttentionLayers, id)
		}
	}
	return m
}

// weights fills Weights from named_data and, where the graph has them, the
// constant tensors' metadata.
func (info *Info) weights(f *pte.File) {
	w := &info.Weights
	w.Bytes, w.Tensors = f.WeightBytes(), len(f.NamedData)
	w.Counts = map[string]int{}
	for _, nd := range f.NamedData {
		info.NamedKeys = append(info.NamedKeys, nd.Key)
		if info.Graph == nil {
			continue
		}
		s, ok := info.Graph.Slot(nd.Key)
		if !ok || !s.IsTensor() {
			continue
		}
		meta := info.Graph.Meta(mlxgraph.Tid(s.Idx))
		if meta == nil {
			continue
		}
		dt := pte.ScalarType(meta.DType)
		w.Counts[dt.String()]++
		n := int64(1)
		for _, d := range meta.Shape {
			if d.Value < 0 || (d.Value > 0 && n > (1<<62)/d.Value) {
				n = 0
				break
			}
			n *= d.Value
		}
		if isParameter(nd.Key) {
			w.Params += n
		} else {
			w.BufferElements += n
		}
	}
	for dt := range w.Counts {
		w.DTypes = append(w.DTypes, dt)
	}
	sort.Slice(w.DTypes, func(i, j int) bool {
		a, b := w.DTypes[i], w.DTypes[j]
		if w.Counts[a] != w.Counts[b] {
			return w.Counts[a] > w.Counts[b]
		}
		return a < b
	})
}

// isParameter: Hugging Face names parameters …weight and …bias; buffers
// (inv_freq, embed_scale, lifted constants) have other names.
func isParameter(key string) bool {
	return strings.HasSuffix(key, ".weight") || strings.HasSuffix(key, ".bias")
}

// layoutMethods are the methods whose presence makes an export off-graph
// (get_prefill_chunk_size is required too, but in-graph exports publish it
// as well).
var layoutMethods = []string{MethodNCaches, MethodKVHeads, MethodHeadDims, MethodWindows}

func (info *Info) classify(f *pte.File, forward *pte.Method, hasForward bool, mlx *pte.Delegate) error {
	set := func(k Kind, format string, a ...any) {
		info.Kind, info.KindReason = k, fmt.Sprintf(format, a...)
	}
	var have, missing []string
	for _, name := range layoutMethods {
		if m, ok := f.Method(name); ok && m.IsConstant {
			have = append(have, name)
		} else {
			missing = append(missing, name)
		}
	}
	switch {
	case !hasForward:
		set(Unsupported, "%s", noForward(f))
		return nil
	case mlx == nil:
		ids := []string{}
		for _, d := range forward.Delegates {
			ids = append(ids, d.ID)
		}
		set(Unsupported, "forward is not delegated to %s (delegates: %v)", MLXBackendID, ids)
		return nil
	case len(have) > 0 && len(missing) > 0:
		set(Unsupported, "partial off-graph layout: has %s but not %s", strings.Join(have, ", "), strings.Join(missing, ", "))
		return nil
	case len(missing) == 0 && info.PrefillChunk == 0:
		set(Unsupported, "publishes a cache layout but no largest step (%s or, beside a capacity, %s)", MethodPrefillChunk, MethodMaxSeqLen)
		return nil
	}

	if len(have) == 0 {
		if info.MLX != nil && info.MLX.MutableBufferTensors > 0 {
			set(InGraph, "no cache layout methods; the MLX graph keeps %d mutable buffers (%s)", info.MLX.MutableBufferTensors, strings.Join(info.MLX.MutableBuffers, ", "))
			return nil
		}
		set(Unsupported, "no cache layout methods (%s) and no cache buffers in the MLX graph", strings.Join(layoutMethods, ", "))
		return nil
	}

	l, reason, err := info.layout(f)
	if err != nil {
		return err
	}
	if reason != "" {
		set(Unsupported, "off-graph layout is inconsistent: %s", reason)
		return nil
	}
	if info.MLX != nil {
		if info.MLX.MutableBufferTensors > 0 {
			set(Unsupported, "publishes an off-graph layout but its MLX graph also keeps %d mutable buffers", info.MLX.MutableBufferTensors)
			return nil
		}
		for _, id := range info.MLX.AttentionLayers {
			if id < 0 || id >= len(l.KVHeads) {
				set(Unsupported, "an UpdateAndAttendNode names cache %d but get_n_caches is %d", id, len(l.KVHeads))
				return nil
			}
		}
	}
	info.Layout = l
	set(OffGraph, "publishes get_n_caches=%d, get_kv_heads, get_head_dims, get_windows and %s=%d; the runtime owns the KV cache", len(l.KVHeads), info.Metadata.ChunkFrom, l.PrefillChunk)
	return nil
}

// layout reads and checks the off-graph constants. A constant of the wrong
// type is an error; values that disagree give a reason (the model is then
// unsupported).
func (info *Info) layout(f *pte.File) (*kvcache.Layout, string, error) {
	v, err := f.Constant(MethodNCaches)
	if err != nil {
		return nil, "", err
	}
	n, err := v.Int()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", f.Path, err)
	}
	if n <= 0 || n > 1<<16 {
		return nil, fmt.Sprintf("get_n_caches = %d", n), nil
	}
	l := &kvcache.Layout{PrefillChunk: info.PrefillChunk, MaxCtxLen: info.MaxCtxLen, ActivationDType: info.Metadata.ActivationDType}
	for _, a := range []struct {
		name string
		dst  *[]int
	}{{MethodKVHeads, &l.KVHeads}, {MethodHeadDims, &l.HeadDims}, {MethodWindows, &l.Windows}} {
		xs, err := intsConstant(f, a.name)
		if err != nil {
			return nil, "", err
		}
		if len(xs) != int(n) {
			return nil, fmt.Sprintf("%s has %d entries but get_n_caches is %d", a.name, len(xs), n), nil
		}
		*a.dst = xs
	}
	if err := l.Validate(); err != nil {
		return nil, err.Error(), nil
	}
	return l, "", nil
}

// CacheConfig builds the cache configuration for policy p with
// kvcache.Build. Only off-graph models have one.
func (info *Info) CacheConfig(p kvcache.Policy) (*kvcache.Config, error) {
	if info.Kind != OffGraph || info.Layout == nil {
		return nil, fmt.Errorf("%s: no off-graph cache to configure: the model is %s (%s)", info.Path, info.Kind, info.KindReason)
	}
	cfg, err := kvcache.Build(*info.Layout, p)
	if err != nil {
		return nil, err
	}
	// One UpdateAndAttendNode per model layer, naming the cache it attends:
	// the reports count layers and caches apart from it (Gemma 4's KV
	// sharing has 10 layers on 6 caches). Their ids were checked in range
	// when the kind was decided.
	if info.MLX != nil && len(info.MLX.AttentionLayers) > 0 {
		cfg.LayerCache = append([]int(nil), info.MLX.AttentionLayers...)
	}
	return cfg, nil
}

// NLayers is the model's layer count as its graph shows it (one
// UpdateAndAttendNode per layer), else the cache count; 0 for a model
// without an off-graph layout.
func (info *Info) NLayers() int {
	switch {
	case info.MLX != nil && len(info.MLX.AttentionLayers) > 0:
		return len(info.MLX.AttentionLayers)
	case info.Layout != nil:
		return len(info.Layout.KVHeads)
	}
	return 0
}
