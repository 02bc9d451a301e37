package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/pte"
)

const inspectSynopsis = "[--json] [--no-sha256] [--kv-max-capacity N] [--kv-storage-dtype D] [--kv-initial-capacity N] [--kv-windows SPEC] FILE.pte…"

// runInspect reports on each .pte: a readable report, or with --json an
// array of stable documents (InspectDoc). A file that cannot be read is
// reported and the others still are; the exit status is then 1.
func runInspect(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "inspect", inspectSynopsis)
	asJSON := fs.Bool("json", false, "print a JSON array, one document per file")
	noHash := fs.Bool("no-sha256", false, "skip the SHA-256 (which reads the whole file)")
	var cf cacheFlags
	cf.register(fs)

	// Flags may come before or after the files.
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 {
		fs.Usage()
		return Usagef("no .pte file given")
	}
	if err := cf.check(); err != nil {
		return err
	}
	p := cf.policy()

	docs := make([]*InspectDoc, 0, len(files))
	failed := 0
	for i, path := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc := Inspect(path, p, !*noHash)
		docs = append(docs, doc)
		if doc.Error != "" {
			failed++
			fmt.Fprintf(env.Stderr, "etchat inspect: %s\n", doc.Error)
		}
		if !*asJSON && (doc.Error == "" || doc.Kind != "") {
			if i > 0 {
				fmt.Fprintln(env.Stdout)
			}
			writeReport(env.Stdout, doc)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(docs); err != nil {
			return err
		}
	}
	if failed > 0 {
		return errSilentFailure
	}
	return nil
}

// InspectDoc is inspect's JSON document for one file. Its field names are
// stable; fields may be added.
type InspectDoc struct {
	Path       string `json:"path"`
	SizeBytes  int64  `json:"size_bytes"`
	SHA256     string `json:"sha256,omitempty"`
	Error      string `json:"error,omitempty"` // the file could not be read (or its cache flags not applied)
	Kind       string `json:"kind,omitempty"`  // off-graph, in-graph, unsupported
	KindReason string `json:"kind_reason,omitempty"`

	Program          *ProgramDoc   `json:"program,omitempty"`
	Methods          []MethodDoc   `json:"methods"`
	ConstantMethods  []ConstantDoc `json:"constant_methods"`
	Delegates        []DelegateDoc `json:"delegates"`
	NamedData        int           `json:"named_data"`
	MaxCtxLen        int           `json:"max_ctx_len"`
	PrefillChunkSize int           `json:"prefill_chunk_size"`
	VocabSize        int           `json:"vocab_size"`
	LogitsDType      string        `json:"logits_dtype,omitempty"`
	// Metadata: where the limits came from, and newer exports' own word
	// on the vocabulary, activation dtype and logits rows (issue 45).
	Metadata   *MetadataDoc       `json:"metadata,omitempty"`
	EOSIDs     []int              `json:"eos_ids"`
	EOSSource  string             `json:"eos_source,omitempty"`
	NLayers    int                `json:"n_layers"` // the model's layers (UpdateAndAttend nodes); 0 unless off-graph
	Cache      *CacheDoc          `json:"cache"`
	CacheError string             `json:"cache_error,omitempty"`
	Companions *CompanionsDoc     `json:"companions,omitempty"`
	MLX        *modelinfo.MLX     `json:"mlx"`
	Weights    *modelinfo.Weights `json:"weights,omitempty"`
	BytesRead  int64              `json:"bytes_read"`

	// Quantization per weight group and a summary ("4-bit", "bf16").
	Quantization *modelinfo.Quantization `json:"quantization,omitempty"`
}

// MetadataDoc is the program's model metadata as read through modelinfo's
// one table of names (both generations: docs/inspect.md's compatibility
// table). Fields the file does not publish are "" / 0 / false.
type MetadataDoc struct {
	ChunkFrom       string `json:"chunk_from"`       // get_prefill_chunk_size or get_max_seq_len
	CapacityFrom    string `json:"capacity_from"`    // get_max_ctx_len, get_max_context_len or (older llama exports) get_max_seq_len
	VocabSize       int    `json:"vocab_size"`       // get_vocab_size
	ActivationDType string `json:"activation_dtype"` // get_activation_dtype: Half, Float or BFloat16
	// LogitsToKeep is get_logits_to_keep_mode by name (full, last,
	// selected; full when not published) and LogitsToKeepMode its number.
	LogitsToKeep          string `json:"logits_to_keep"`
	LogitsToKeepMode      int    `json:"logits_to_keep_mode"`
	LogitsToKeepPublished bool   `json:"logits_to_keep_published"`
}

func metadataDoc(md modelinfo.Metadata) *MetadataDoc {
	d := &MetadataDoc{ChunkFrom: md.ChunkFrom, CapacityFrom: md.CapacityFrom, VocabSize: md.VocabSize,
		LogitsToKeep: md.LogitsMode.String(), LogitsToKeepMode: int(md.LogitsMode), LogitsToKeepPublished: md.LogitsPublished}
	if md.ActivationDType != 0 {
		d.ActivationDType = md.ActivationDType.String()
	}
	return d
}

// ProgramDoc is the container: header and segment table.
type ProgramDoc struct {
	Version           uint32 `json:"version"`
	ProgramSize       int64  `json:"program_size"`
	SegmentBaseOffset int64  `json:"segment_base_offset"`
	SegmentDataSize   int64  `json:"segment_data_size"`
	Segments          int    `json:"segments"`
}

// MethodDoc is one method.
type MethodDoc struct {
	Name         string           `json:"name"`
	Signature    string           `json:"signature"`
	Inputs       []pte.TensorInfo `json:"inputs"`
	Outputs      []pte.TensorInfo `json:"outputs"`
	Instructions int              `json:"instructions"`
	Delegates    int              `json:"delegates"`
	Kernels      []string         `json:"kernels"`
	Constant     bool             `json:"constant"`
}

// ConstantDoc is a constant method's value: a number, a string, a bool,
// or a list (a tensor's elements).
type ConstantDoc struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Value any    `json:"value"`
	Text  string `json:"-"` // as the report prints it
}

// DelegateDoc is where a delegate's blob is.
type DelegateDoc struct {
	Method       string            `json:"method"`
	ID           string            `json:"id"`
	Segment      int               `json:"segment"` // -1: inline in the program
	Offset       int64             `json:"offset"`  // absolute file offset
	Size         int64             `json:"size"`
	CompileSpecs map[string]string `json:"compile_specs"` // value as text, or hex when not UTF-8
}

// CacheDoc is the off-graph cache: the file's layout with the flags applied.
// Its entries are caches (get_n_caches), which with KV sharing are fewer
// than the model's layers.
type CacheDoc struct {
	NLayers         int        `json:"n_layers"` // the cache count, as before n_caches existed (= n_caches)
	NCaches         int        `json:"n_caches"`
	LayerCaches     []int      `json:"layer_caches"` // per model layer, the cache it attends
	Shared          string     `json:"shared"`       // which caches several layers attend; "" when none
	ShortSummary    string     `json:"short_summary"`
	KVHeads         []int      `json:"kv_heads"`
	HeadDims        []int      `json:"head_dims"`
	Windows         []int      `json:"windows"` // the file's own
	Capacity        int        `json:"capacity"`
	InitialCapacity int        `json:"initial_capacity"`
	KVDType         string     `json:"kv_dtype"`
	KVDTypeFrom     string     `json:"kv_dtype_from"` // chosen (a flag), get_activation_dtype, or default (bf16)
	MaxWrite        int        `json:"max_write"`
	Summary         string     `json:"summary"`
	LayersSummary   string     `json:"layers_summary"`
	BytesInitial    int64      `json:"bytes_initial"`
	BytesAtCapacity int64      `json:"bytes_at_capacity"`
	Layers          []LayerDoc `json:"layers"`
}

// LayerDoc is one cache as configured.
type LayerDoc struct {
	Index           int    `json:"index"`        // the cache id
	ModelLayers     []int  `json:"model_layers"` // the model layers that attend it
	Kind            string `json:"kind"`         // flat or ring
	Window          int    `json:"window"`
	KVHeads         int    `json:"kv_heads"`
	HeadDim         int    `json:"head_dim"`
	Rows            int    `json:"rows"`
	InitialRows     int    `json:"initial_rows"`
	BytesInitial    int64  `json:"bytes_initial"`
	BytesAtCapacity int64  `json:"bytes_at_capacity"`
}

// CompanionsDoc says which files sit next to the .pte.
type CompanionsDoc struct {
	Dir              string   `json:"dir"`
	Tokenizer        string   `json:"tokenizer"`
	TokenizerConfig  string   `json:"tokenizer_config"`
	GenerationConfig string   `json:"generation_config"`
	Config           string   `json:"config"`
	HasChatTemplate  bool     `json:"has_chat_template"`
	ModelType        string   `json:"model_type"`
	Problems         []string `json:"problems"`
}

// Inspect builds the document for one file. On failure Error is set and
// the rest is as far as it got.
func Inspect(path string, p kvcache.Policy, hash bool) *InspectDoc {
	doc := &InspectDoc{Path: path}
	info, err := modelinfo.Load(path, modelinfo.Options{Hash: hash})
	if err != nil {
		doc.Error = err.Error()
		if st, serr := os.Stat(path); serr == nil && st.Mode().IsRegular() {
			doc.SizeBytes = st.Size()
		}
		return doc
	}
	doc.SizeBytes, doc.SHA256 = info.SizeBytes, info.SHA256
	doc.Kind, doc.KindReason = string(info.Kind), info.KindReason
	h := info.Header
	doc.Program = &ProgramDoc{Version: info.File.Version, ProgramSize: h.ProgramSize, SegmentBaseOffset: h.SegmentBaseOffset,
		SegmentDataSize: h.SegmentDataSize, Segments: info.Segments}
	doc.Methods = []MethodDoc{}
	for _, m := range info.Methods {
		doc.Methods = append(doc.Methods, MethodDoc{Name: m.Name, Signature: m.Describe(), Inputs: nonNil(m.Inputs), Outputs: nonNil(m.Outputs),
			Instructions: m.NumInstructions, Delegates: len(m.Delegates), Kernels: nonNilS(m.Kernels), Constant: m.IsConstant})
	}
	doc.ConstantMethods = []ConstantDoc{}
	for _, c := range info.Constants {
		doc.ConstantMethods = append(doc.ConstantMethods, ConstantDoc{Name: c.Name, Kind: c.Kind, Value: c.Value.Any(), Text: c.Value.String()})
	}
	doc.Delegates = []DelegateDoc{}
	for _, d := range info.Delegates {
		specs := map[string]string{}
		for _, s := range d.CompileSpecs {
			if utf8.Valid(s.Value) {
				specs[s.Key] = string(s.Value)
			} else {
				specs[s.Key] = fmt.Sprintf("%x", s.Value)
			}
		}
		doc.Delegates = append(doc.Delegates, DelegateDoc{Method: d.Method, ID: d.ID, Segment: d.Segment, Offset: d.Offset, Size: d.Size, CompileSpecs: specs})
	}
	doc.NamedData = info.NamedData
	doc.MaxCtxLen, doc.PrefillChunkSize, doc.VocabSize, doc.LogitsDType = info.MaxCtxLen, info.PrefillChunk, info.VocabSize, info.LogitsDType
	doc.Metadata = metadataDoc(info.Metadata)
	doc.EOSIDs, doc.EOSSource = info.EOSIDs, info.EOSSource
	if doc.EOSIDs == nil {
		doc.EOSIDs = []int{}
	}
	c := info.Companion
	doc.Companions = &CompanionsDoc{Dir: c.Dir, Tokenizer: c.Tokenizer, TokenizerConfig: c.TokenizerConfig, GenerationConfig: c.GenerationConfig,
		Config: c.Config, HasChatTemplate: c.HasChatTemplate, ModelType: c.ModelType, Problems: nonNilS(c.Problems)}
	doc.MLX = info.MLX
	w := info.Weights
	doc.Weights = &w
	q := info.Quantization
	doc.Quantization = &q

	if info.Kind == modelinfo.OffGraph {
		cfg, err := info.CacheConfig(p)
		if err != nil {
			doc.CacheError = err.Error()
			doc.Error = fmt.Sprintf("%s: cache flags: %v", path, err)
		} else {
			doc.Cache = cacheDoc(info.Layout, cfg)
		}
		doc.NLayers = info.NLayers()
	}
	doc.BytesRead = info.BytesRead
	return doc
}

func cacheDoc(l *kvcache.Layout, cfg *kvcache.Config) *CacheDoc {
	layers, initial, full := cfg.Memory()
	cd := &CacheDoc{
		NLayers: len(cfg.Layers), NCaches: len(cfg.Layers), KVHeads: l.KVHeads, HeadDims: l.HeadDims, Windows: l.Windows,
		Capacity: cfg.Capacity, InitialCapacity: cfg.InitialCapacity, KVDType: cfg.DType.String(), KVDTypeFrom: cfg.DTypeFrom, MaxWrite: cfg.MaxWrite,
		Summary: cfg.Summary(), LayersSummary: cfg.LayersSummary(), BytesInitial: initial, BytesAtCapacity: full,
		Shared: cfg.SharingSummary(), ShortSummary: cfg.ShortSummary(), LayerCaches: cfg.LayerCache,
	}
	// Without a layer map (no MLX graph read) each cache is one layer's.
	byCache := cfg.CacheLayers()
	if cd.LayerCaches == nil {
		for i := range cfg.Layers {
			cd.LayerCaches = append(cd.LayerCaches, i)
			byCache = append(byCache, []int{i})
		}
	}
	for i, l := range cfg.Layers {
		kind := "flat"
		if l.Kind == kvcache.Ring {
			kind = "ring"
		}
		cd.Layers = append(cd.Layers, LayerDoc{Index: i, ModelLayers: nonNilI(byCache[i]), Kind: kind, Window: l.Window, KVHeads: l.KVHeads, HeadDim: l.HeadDim,
			Rows: layers[i].Rows, InitialRows: layers[i].InitialRows, BytesInitial: layers[i].Initial, BytesAtCapacity: layers[i].Full})
	}
	return cd
}

func nonNil(x []pte.TensorInfo) []pte.TensorInfo {
	if x == nil {
		return []pte.TensorInfo{}
	}
	return x
}

func nonNilI(x []int) []int {
	if x == nil {
		return []int{}
	}
	return x
}

func nonNilS(x []string) []string {
	if x == nil {
		return []string{}
	}
	return x
}

func bytesStr(n int64) string {
	if n < 0 {
		n = 0
	}
	return humanize.IBytes(uint64(n))
}

// writeReport prints the readable report: one labelled section after
// another.
func writeReport(w io.Writer, d *InspectDoc) {
	r := report{w}
	r.head(d)
	r.methods(d)
	r.limits(d)
	r.delegates(d.Delegates)
	r.weights(d.Weights, d.Quantization)
	r.mlx(d.MLX)
	r.cache(d)
	r.companions(d.Companions)
}

// report writes the readable report's rows: a label, then the value; more
// continues the row above.
type report struct{ w io.Writer }

func (r report) row(label, format string, a ...any) {
	fmt.Fprintf(r.w, "  %-12s%s\n", label, fmt.Sprintf(format, a...))
}

func (r report) more(format string, a ...any) { r.row("", format, a...) }

// firstLabel is label for a list's first row, "" for the rest.
func firstLabel(i int, label string) string {
	if i == 0 {
		return label
	}
	return ""
}

// head is the file, its hash, its kind and the Program's layout.
func (r report) head(d *InspectDoc) {
	fmt.Fprintf(r.w, "%s  (%s, %s bytes)\n", d.Path, bytesStr(d.SizeBytes), humanize.Comma(d.SizeBytes))
	if d.SHA256 != "" {
		r.row("sha256", "%s", d.SHA256)
	}
	r.row("kind", "%s: %s", d.Kind, d.KindReason)
	if pr := d.Program; pr != nil {
		r.row("program", "%s Program flatbuffer (version %d), %d segments, %s of segment data from offset %d",
			bytesStr(pr.ProgramSize), pr.Version, pr.Segments, bytesStr(pr.SegmentDataSize), pr.SegmentBaseOffset)
	}
}

// methods are the executable methods, then the constant ones with their
// values.
func (r report) methods(d *InspectDoc) {
	for i, m := range d.Methods {
		extra := ""
		switch {
		case m.Constant:
			extra = "  (constant)"
		case m.Instructions > 0:
			extra = fmt.Sprintf("  (%s, %s", plural(m.Instructions, "instruction"), plural(m.Delegates, "delegate"))
			if len(m.Kernels) > 0 {
				extra += ", kernels " + strings.Join(m.Kernels, " ")
			}
			extra += ")"
		}
		r.row(firstLabel(i, "methods"), "%s%s", m.Signature, extra)
	}
	for i, c := range d.ConstantMethods {
		r.row(firstLabel(i, "constants"), "%s = %s", c.Name, c.Text)
	}
}

// limits are the context, the prefill chunk, the vocabulary and the stop
// tokens.
func (r report) limits(d *InspectDoc) {
	limits := []string{}
	md := d.Metadata
	if md == nil {
		md = &MetadataDoc{}
	}
	// The source is said where it is not the older exports' name.
	from := func(name string) string {
		if name == "" || name == modelinfo.MethodMaxCtxLen || name == modelinfo.MethodPrefillChunk {
			return ""
		}
		return " (" + name + ")"
	}
	if d.MaxCtxLen > 0 {
		limits = append(limits, fmt.Sprintf("max context %d%s", d.MaxCtxLen, from(md.CapacityFrom)))
	}
	if d.PrefillChunkSize > 0 {
		limits = append(limits, fmt.Sprintf("prefill chunk %d%s", d.PrefillChunkSize, from(md.ChunkFrom)))
	}
	if d.VocabSize > 0 {
		limits = append(limits, fmt.Sprintf("vocab %s (%s logits)", humanize.Comma(int64(d.VocabSize)), d.LogitsDType))
	}
	r.row("limits", "%s", strings.Join(limits, ", "))
	r.metadata(md)
	if len(d.EOSIDs) > 0 {
		r.row("eos", "%v (from %s)", d.EOSIDs, d.EOSSource)
	} else {
		r.row("eos", "none published")
	}
}

// metadata is what newer exports publish about themselves (a row only
// when the file publishes any of it).
func (r report) metadata(md *MetadataDoc) {
	var parts []string
	if md.VocabSize > 0 {
		parts = append(parts, fmt.Sprintf("vocab %s (get_vocab_size, = forward's logits)", humanize.Comma(int64(md.VocabSize))))
	}
	if md.ActivationDType != "" {
		parts = append(parts, "activations "+md.ActivationDType)
	}
	if md.LogitsToKeepPublished {
		rows := map[string]string{"full": "every position", "last": "the last position only", "selected": "the rows a third input selects"}[md.LogitsToKeep]
		parts = append(parts, fmt.Sprintf("logits to keep %d (%s: %s)", md.LogitsToKeepMode, md.LogitsToKeep, rows))
	}
	if len(parts) > 0 {
		r.row("metadata", "%s", strings.Join(parts, ", "))
	}
}

func (r report) delegates(ds []DelegateDoc) {
	for i, dl := range ds {
		where := fmt.Sprintf("segment %d", dl.Segment)
		if dl.Segment < 0 {
			where = "inline"
		}
		r.row(firstLabel(i, "delegates"), "%s: %s, %s at offset %d, %s", dl.Method, dl.ID, where, dl.Offset, bytesStr(dl.Size))
		for _, k := range sortedKeys(dl.CompileSpecs) {
			r.more("  compile spec %s = %q", k, dl.CompileSpecs[k])
		}
	}
}

// weights are the named tensors by dtype, then the precision groups.
func (r report) weights(wt *modelinfo.Weights, q *modelinfo.Quantization) {
	if wt != nil {
		dts := make([]string, len(wt.DTypes))
		for i, dt := range wt.DTypes {
			dts[i] = fmt.Sprintf("%s ×%d", dt, wt.Counts[dt])
		}
		r.row("weights", "%d named tensors, %s; %s parameters; %s", wt.Tensors, bytesStr(wt.Bytes),
			humanize.Comma(wt.Params), orNone(strings.Join(dts, ", ")))
	}
	if q == nil || q.Summary == "" {
		return
	}
	r.row("precision", "%s", q.Summary)
	for _, g := range q.Groups {
		size := bytesStr(g.Bytes)
		if g.Bytes == 0 {
			size = "its bytes counted above (shared)"
		}
		r.more("  %s, %s", g, size)
	}
}

// mlx is the MLX graph: its sizes, its ops most used first (six a row),
// its mutable buffers.
func (r report) mlx(m *modelinfo.MLX) {
	if m == nil {
		return
	}
	r.row("mlx graph", "version %s, %d instructions; tensors: %d constant, %d input, %d output, %d mutable, %d temp; %d values",
		m.Version, m.Instructions, m.ConstantTensors, m.InputTensors, m.OutputTensors, m.MutableBufferTensors, m.TempTensors, m.Values)
	ops := sortedKeys(m.OpHistogram)
	sort.SliceStable(ops, func(i, j int) bool { return m.OpHistogram[ops[i]] > m.OpHistogram[ops[j]] })
	line := []string{}
	for _, op := range ops {
		line = append(line, fmt.Sprintf("%s %d", op, m.OpHistogram[op]))
	}
	for len(line) > 0 {
		n := min(len(line), 6)
		r.more("%s", strings.Join(line[:n], ", "))
		line = line[n:]
	}
	if len(m.MutableBuffers) > 0 {
		r.more("mutable buffers: %s", strings.Join(m.MutableBuffers, ", "))
	}
}

// cache is the KV cache the flags build, or why there is none.
func (r report) cache(d *InspectDoc) {
	switch {
	case d.Cache != nil:
		r.cacheLayout(d.Cache)
	case d.CacheError != "":
		r.row("cache", "cannot apply the cache flags: %s", d.CacheError)
	case d.Kind == string(modelinfo.InGraph):
		r.row("cache", "inside the program (in-graph); the --kv-* flags do not apply")
	default:
		r.row("cache", "none (unsupported model)")
	}
}

// cacheLayout is the cache's summary, its memory, and a line per cache.
func (r report) cacheLayout(c *CacheDoc) {
	lines := strings.Split(c.Summary, "\n")
	r.row("cache", "%s", lines[0])
	for _, l := range lines[1:] {
		r.more("%s", l)
	}
	r.more("KV storage %s (%s)", c.KVDType, kvDTypeFrom(c.KVDTypeFrom))
	r.more("KV memory: %s at the initial size, %s at capacity (%d tokens)", bytesStr(c.BytesInitial), bytesStr(c.BytesAtCapacity), c.Capacity)
	for _, l := range c.Layers {
		kind := "flat"
		if l.Kind == "ring" {
			kind = fmt.Sprintf("ring(window %d)", l.Window)
		}
		// Per cache; which layers attend it is said where it is not
		// just the layer of the same number.
		who := ""
		if len(l.ModelLayers) != 1 || l.ModelLayers[0] != l.Index {
			who = " (layers " + joinInts(l.ModelLayers) + ")"
			if len(l.ModelLayers) == 0 {
				who = " (no layer attends it)"
			}
		}
		r.more("  cache %d%s: %s, %d kv heads × %d, %d rows: %s initial, %s full", l.Index, who, kind, l.KVHeads, l.HeadDim, l.Rows,
			bytesStr(l.BytesInitial), bytesStr(l.BytesAtCapacity))
	}
}

// kvDTypeFrom says where the KV storage dtype came from, in words.
func kvDTypeFrom(from string) string {
	switch from {
	case kvcache.DTypeChosen:
		return "chosen with --kv-storage-dtype"
	case kvcache.DTypeFromModel:
		return "the model's get_activation_dtype"
	}
	return "the default; the model publishes no get_activation_dtype"
}

// companions are the files beside the .pte that the loader reads.
func (r report) companions(c *CompanionsDoc) {
	if c == nil {
		return
	}
	mark := func(name, p string) string {
		if p == "" {
			return name + " missing"
		}
		return name + " ✓"
	}
	tc := mark("tokenizer_config.json", c.TokenizerConfig)
	if c.HasChatTemplate {
		tc += " (chat template)"
	} else if c.TokenizerConfig != "" {
		tc += " (no chat template)"
	}
	cfg := mark("config.json", c.Config)
	if c.ModelType != "" {
		cfg += " (model_type " + c.ModelType + ")"
	}
	r.row("companions", "%s, %s, %s, %s", mark("tokenizer.json", c.Tokenizer), tc, mark("generation_config.json", c.GenerationConfig), cfg)
	for _, p := range c.Problems {
		r.more("problem: %s", p)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orNone(s string) string {
	if s == "" {
		return "dtypes unknown"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
