package kvcache

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Layout is what an off-graph .pte publishes about its cache through its
// constant methods: one entry per cache (layer) in KVHeads, HeadDims and
// Windows (0 = full attention), plus the largest step the program accepts.
type Layout struct {
	KVHeads      []int // get_kv_heads
	HeadDims     []int // get_head_dims
	Windows      []int // get_windows; 0 = flat
	PrefillChunk int   // get_prefill_chunk_size
	MaxCtxLen    int   // get_max_ctx_len; 0 if not published
	// ActivationDType is the export's get_activation_dtype (0 if not
	// published): the storage dtype when the policy names none.
	ActivationDType DType
}

// Validate checks that the layout is self-consistent.
func (l Layout) Validate() error {
	n := len(l.KVHeads)
	switch {
	case n == 0:
		return errors.New("layout has no caches")
	case len(l.HeadDims) != n || len(l.Windows) != n:
		return fmt.Errorf("layout arrays disagree: %d kv_heads, %d head_dims, %d windows", n, len(l.HeadDims), len(l.Windows))
	case l.PrefillChunk <= 0:
		return fmt.Errorf("prefill chunk size %d is not positive", l.PrefillChunk)
	}
	for i := 0; i < n; i++ {
		if l.KVHeads[i] <= 0 || l.HeadDims[i] <= 0 || l.Windows[i] < 0 {
			return fmt.Errorf("cache %d: kv_heads %d, head_dim %d, window %d out of range", i, l.KVHeads[i], l.HeadDims[i], l.Windows[i])
		}
		if l.KVHeads[i] > 1<<12 || l.HeadDims[i] > 1<<14 {
			return fmt.Errorf("cache %d: kv_heads %d or head_dim %d is implausibly large", i, l.KVHeads[i], l.HeadDims[i])
		}
	}
	return nil
}

// DType is a KV storage dtype, numbered as ExecuTorch's ScalarType.
type DType int

// The storage dtypes the cache pools support.
const (
	Float16  DType = 5
	Float32  DType = 6
	BFloat16 DType = 15
)

// ParseDType reads the command-line spelling: bf16, fp16 or fp32.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16":
		return BFloat16, nil
	case "fp16", "f16", "half", "float16":
		return Float16, nil
	case "fp32", "f32", "float", "float32":
		return Float32, nil
	}
	return 0, fmt.Errorf("unknown kv storage dtype %q (bf16|fp16|fp32)", s)
}

// Size is the bytes of one element.
func (d DType) Size() int {
	if d == Float32 {
		return 4
	}
	return 2
}

// Flag is the command-line spelling (bf16, fp16, fp32).
func (d DType) Flag() string {
	switch d {
	case Float16:
		return "fp16"
	case Float32:
		return "fp32"
	case BFloat16:
		return "bf16"
	}
	return "scalar_type_" + strconv.Itoa(int(d))
}

// String is the runner's name for the dtype, as its summary prints it.
func (d DType) String() string {
	switch d {
	case Float16:
		return "Half(fp16)"
	case Float32:
		return "Float(fp32)"
	case BFloat16:
		return "BFloat16"
	}
	return "scalar_type_" + strconv.Itoa(int(d))
}

// Kind says how a cache keeps history.
type Kind int

const (
	// Flat caches keep every token.
	Flat Kind = 0
	// Ring caches keep the last Window tokens in Window+MaxWrite-1 rows.
	Ring Kind = 1
)

// Layer is one cache's geometry and policy.
type Layer struct {
	Kind    Kind
	Window  int // Ring only; 0 for Flat
	KVHeads int
	HeadDim int
}

// Config is a complete cache configuration: the file's geometry with the
// user's policy applied. Both engines and every display use this one value.
type Config struct {
	Capacity        int // most tokens the cache admits
	InitialCapacity int // starting pool size in tokens; pools double up to Capacity
	DType           DType
	// DTypeFrom says where DType came from: DTypeChosen,
	// DTypeFromModel or DTypeDefault (shown beside it).
	DTypeFrom string
	MaxWrite  int     // largest step; 0 = unset (then a ring's window bounds it)
	Layers    []Layer // one per cache (get_n_caches), not per model layer

	// LayerCache is, for each model layer, the cache it attends (its
	// UpdateAndAttendNode's id, in graph order); nil when unknown. With KV
	// sharing (Gemma 4) several layers name one cache, so there are more
	// layers than caches. Only reports read it: the engines key on the
	// cache id the graph passes.
	LayerCache []int
}

// Policy is what the user chooses; zero values mean "the default".
type Policy struct {
	Capacity        int    // 0 = the file's get_max_ctx_len
	StorageDType    string // "" = the model's get_activation_dtype, else bf16
	InitialCapacity int    // -1 = default (512); 0 is a valid choice
	Windows         string // "" = the model's own; "512" or "8,8,0" repeats over the caches
}

// DefaultStorageDType is the runner's KV storage dtype for a model that
// publishes no get_activation_dtype.
const DefaultStorageDType = BFloat16

// Where a Config's DType came from.
const (
	DTypeChosen    = "chosen"               // the policy named it
	DTypeFromModel = "get_activation_dtype" // the export's activation dtype (newer ExecuTorch's runner does the same)
	DTypeDefault   = "default"              // neither: DefaultStorageDType
)

// DefaultPolicy is the runner's defaults, as every front end offers them:
// the storage dtype left to the model (its activation dtype, else bf16).
func DefaultPolicy() Policy {
	return Policy{InitialCapacity: -1}
}

// DefaultInitialCapacity is ExecuTorch CacheConfig's default pool size.
const DefaultInitialCapacity = 512

// MaxCapacity bounds capacities so that sizes computed from them cannot
// overflow (2^24 tokens is far beyond any exported context).
const MaxCapacity = 1 << 24

// storageDType is the KV storage dtype for the policy and where it came
// from: the policy's, else the model's activation dtype, else the default.
func storageDType(l Layout, p Policy) (DType, string) {
	switch {
	case p.StorageDType != "":
		dt, _ := ParseDType(p.StorageDType) // Validate accepted it
		if dt == l.ActivationDType {
			// The app's new chats name the model's dtype; say it is the
			// model's, which it is, rather than a choice.
			return dt, DTypeFromModel
		}
		return dt, DTypeChosen
	case l.ActivationDType != 0:
		return l.ActivationDType, DTypeFromModel
	}
	return DefaultStorageDType, DTypeDefault
}

// Field names a Policy field in errors; the front ends map it to their own
// control (a flag, a settings field).
type Field string

// The Policy's fields.
const (
	FieldCapacity        Field = "capacity"
	FieldStorageDType    Field = "storage_dtype"
	FieldWindows         Field = "windows"
	FieldInitialCapacity Field = "initial_capacity"
)

// FieldError is one Policy field whose value is refused; Msg says why, in
// a sentence that names the field by its meaning (never a flag).
type FieldError struct {
	Field Field
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func fieldErr(f Field, format string, a ...any) *FieldError {
	return &FieldError{Field: f, Msg: fmt.Sprintf(format, a...)}
}

// FieldErrors are the field errors in err (Build's joined error), in field
// order; none when err has none.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case *FieldError:
			out = append(out, x)
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	return out
}

// Validate checks the rules that hold whatever the model: each field's own
// range and spelling. The error joins one *FieldError per bad field. Build
// applies it first; a front end may call it before any file is read.
func (p Policy) Validate() error {
	var errs []error
	switch {
	case p.Capacity < 0:
		errs = append(errs, fieldErr(FieldCapacity, "capacity %d is negative", p.Capacity))
	case p.Capacity > MaxCapacity:
		errs = append(errs, fieldErr(FieldCapacity, "capacity %d is above the limit %d", p.Capacity, MaxCapacity))
	}
	if p.StorageDType != "" {
		if _, err := ParseDType(p.StorageDType); err != nil {
			errs = append(errs, fieldErr(FieldStorageDType, "storage dtype %q is unknown: choose bf16, fp16 or fp32", p.StorageDType))
		}
	}
	if strings.TrimSpace(p.Windows) != "" {
		if _, err := ParseWindows(p.Windows); err != nil {
			errs = append(errs, &FieldError{Field: FieldWindows, Msg: err.Error()})
		}
	}
	switch {
	case p.InitialCapacity < -1:
		errs = append(errs, fieldErr(FieldInitialCapacity, "initial capacity %d is negative (-1 takes the default, %d)", p.InitialCapacity, DefaultInitialCapacity))
	case p.InitialCapacity > MaxCapacity:
		errs = append(errs, fieldErr(FieldInitialCapacity, "initial capacity %d is above the limit %d", p.InitialCapacity, MaxCapacity))
	}
	return errors.Join(errs...)
}

// Build is the one cache-config builder: the CLI flags, the settings sheet,
// the library's memory estimate and both engines all go through it, so the
// numbers the user sees are the numbers the engine uses, and one set of
// rules refuses a policy. A refused policy's error joins one *FieldError per
// bad field (FieldErrors lists them); a bad layout is the file's fault and
// a plain error.
func Build(l Layout, p Policy) (*Config, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("cache layout: %w", err)
	}
	bad := p.Validate()
	// The model's own limit on the capacity, the tighter one when both are
	// passed: it is the one to heed.
	switch {
	case p.Capacity > 0 && l.MaxCtxLen > 0 && p.Capacity > l.MaxCtxLen:
		bad = errors.Join(withoutField(bad, FieldCapacity), fieldErr(FieldCapacity,
			"capacity %d is more than the model's context: at most %d, the model was exported for %d tokens", p.Capacity, l.MaxCtxLen, l.MaxCtxLen))
	case p.Capacity == 0 && l.MaxCtxLen <= 0:
		bad = errors.Join(bad, fieldErr(FieldCapacity, "capacity not given and the model publishes no context length (get_max_ctx_len or get_max_context_len): give one"))
	}
	if bad != nil {
		return nil, sortFields(bad)
	}

	cfg := &Config{MaxWrite: l.PrefillChunk, InitialCapacity: DefaultInitialCapacity, Capacity: p.Capacity}
	cfg.DType, cfg.DTypeFrom = storageDType(l, p)
	if cfg.Capacity == 0 {
		cfg.Capacity = l.MaxCtxLen
	}
	cfg.Layers = make([]Layer, len(l.KVHeads))
	for i := range cfg.Layers {
		cfg.Layers[i] = Layer{Kind: Flat, KVHeads: l.KVHeads[i], HeadDim: l.HeadDims[i]}
		if w := l.Windows[i]; w > 0 {
			cfg.Layers[i].Kind, cfg.Layers[i].Window = Ring, w
		}
	}
	if strings.TrimSpace(p.Windows) != "" {
		if err := cfg.overrideWindows(p.Windows); err != nil {
			return nil, &FieldError{Field: FieldWindows, Msg: err.Error()}
		}
	}
	if p.InitialCapacity >= 0 {
		cfg.InitialCapacity = p.InitialCapacity
	}
	return cfg, nil
}

// withoutField is err's field errors but those of f.
func withoutField(err error, f Field) error {
	var keep []error
	for _, fe := range FieldErrors(err) {
		if fe.Field != f {
			keep = append(keep, fe)
		}
	}
	return errors.Join(keep...)
}

// sortFields puts a joined error's field errors in field order (capacity,
// storage dtype, windows, initial capacity), so messages read the same
// whichever rule found them.
func sortFields(err error) error {
	order := []Field{FieldCapacity, FieldStorageDType, FieldWindows, FieldInitialCapacity}
	fes := FieldErrors(err)
	sort.SliceStable(fes, func(i, j int) bool { return slices.Index(order, fes[i].Field) < slices.Index(order, fes[j].Field) })
	errs := make([]error, len(fes))
	for i, fe := range fes {
		errs[i] = fe
	}
	return errors.Join(errs...)
}

// ParseWindows reads a window spec: comma-separated non-negative window
// sizes (0 = flat).
func ParseWindows(spec string) ([]int, error) {
	parts := strings.Split(spec, ",")
	out := make([]int, 0, len(parts))
	for _, s := range parts {
		s = strings.TrimSpace(s)
		w, err := strconv.Atoi(s)
		if err != nil || w < 0 || w > MaxCapacity {
			return nil, fmt.Errorf("windows %q: %q is not a window size (give whole numbers ≥ 0 separated by commas, 0 = flat; e.g. 512 or 8,8,0)", spec, s)
		}
		out = append(out, w)
	}
	return out, nil
}

// overrideWindows replaces the attention pattern, repeating the list over
// the caches. The geometry stays the file's. The export sizes its chunk to
// the model's own window, so a narrower ring narrows MaxWrite with it.
func (c *Config) overrideWindows(spec string) error {
	pattern, err := ParseWindows(spec)
	if err != nil {
		return err
	}
	for i := range c.Layers {
		w := pattern[i%len(pattern)]
		c.Layers[i].Kind, c.Layers[i].Window = Flat, 0
		if w > 0 {
			c.Layers[i].Kind, c.Layers[i].Window = Ring, w
		}
	}
	narrowest := 0
	for _, w := range pattern {
		if w > 0 && (narrowest == 0 || w < narrowest) {
			narrowest = w
		}
	}
	if c.MaxWrite > 0 && narrowest > 0 && narrowest < c.MaxWrite {
		c.MaxWrite = narrowest
	}
	return nil
}

// Summary is the runner's announcement, without the leading newline: the
// policy line, the caches' shapes and, where layers share caches, a third
// line saying which:
//
//	[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8
//	        4 layers: 1 flat + 3 ring(window 8)
//
//	[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8
//	        10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)
//	        shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9
func (c *Config) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[cache] off-graph seq | capacity=%d initial=%d kv_dtype=%s", c.Capacity, c.InitialCapacity, c.DType)
	if c.MaxWrite > 0 {
		fmt.Fprintf(&b, " max_write=%d", c.MaxWrite)
	}
	b.WriteString("\n        ")
	b.WriteString(c.LayersSummary())
	if sh := c.SharingSummary(); sh != "" {
		b.WriteString("\n        ")
		b.WriteString(sh)
	}
	return b.String()
}

// NLayers is the model's layer count: len(LayerCache), or one layer per
// cache when the map is unknown.
func (c *Config) NLayers() int {
	if c.LayerCache != nil {
		return len(c.LayerCache)
	}
	return len(c.Layers)
}

// Shared reports whether some cache is attended by more than one layer, or
// the layer count is not the cache count.
func (c *Config) Shared() bool {
	if c.LayerCache == nil {
		return false
	}
	if len(c.LayerCache) != len(c.Layers) {
		return true
	}
	seen := make(map[int]bool, len(c.LayerCache))
	for _, id := range c.LayerCache {
		if seen[id] {
			return true
		}
		seen[id] = true
	}
	return false
}

// CacheLayers is, for each cache, the model layers that attend it, in
// order (nil entries for a cache no layer names); nil when LayerCache is.
func (c *Config) CacheLayers() [][]int {
	if c.LayerCache == nil {
		return nil
	}
	out := make([][]int, len(c.Layers))
	for layer, id := range c.LayerCache {
		if id >= 0 && id < len(out) {
			out[id] = append(out[id], layer)
		}
	}
	return out
}

// uniformShape reports whether every cache has the same heads and head size.
func (c *Config) uniformShape() bool {
	for _, l := range c.Layers {
		if l.KVHeads != c.Layers[0].KVHeads || l.HeadDim != c.Layers[0].HeadDim {
			return false
		}
	}
	return true
}

type cacheGroup struct {
	kind                  Kind
	window, heads, dim, n int
}

// groups counts the caches by kind and window (flat first, then rings
// narrowest first) and, when the shapes differ, by shape too (widest first).
func (c *Config) groups(byShape bool) []cacheGroup {
	var gs []cacheGroup
	for _, l := range c.Layers {
		g := cacheGroup{kind: l.Kind, window: l.Window}
		if byShape {
			g.heads, g.dim = l.KVHeads, l.HeadDim
		}
		found := false
		for i := range gs {
			if gs[i].kind == g.kind && gs[i].window == g.window && gs[i].heads == g.heads && gs[i].dim == g.dim {
				gs[i].n++
				found = true
				break
			}
		}
		if !found {
			g.n = 1
			gs = append(gs, g)
		}
	}
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		if (a.kind == Ring) != (b.kind == Ring) {
			return a.kind != Ring
		}
		if a.window != b.window {
			return a.window < b.window
		}
		return a.heads*a.dim > b.heads*b.dim
	})
	return gs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// LayersSummary is the shape line. With one cache per layer and one shape
// it is the runner's "4 layers: 1 flat + 3 ring(window 8)" (ring caches
// grouped by window, narrowest first; "0 flat" kept). Otherwise it counts
// layers and caches apart and gives each group its shape:
// "10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)".
func (c *Config) LayersSummary() string {
	byShape := !c.uniformShape()
	gs := c.groups(byShape)
	var b strings.Builder
	if c.NLayers() == len(c.Layers) && !c.Shared() {
		fmt.Fprintf(&b, "%d layers: ", len(c.Layers))
	} else {
		fmt.Fprintf(&b, "%d layers, %d %s: ", c.NLayers(), len(c.Layers), plural(len(c.Layers), "cache", "caches"))
	}
	shape := func(g cacheGroup) string {
		if !byShape {
			return ""
		}
		return fmt.Sprintf(" (%d %s × %d)", g.heads, plural(g.heads, "kv head", "kv heads"), g.dim)
	}
	flat := 0
	for _, g := range gs {
		if g.kind != Ring {
			flat += g.n
		}
	}
	sep := ""
	if flat == 0 {
		b.WriteString("0 flat")
		sep = " + "
	}
	for _, g := range gs {
		b.WriteString(sep)
		sep = " + "
		if g.kind == Ring {
			fmt.Fprintf(&b, "%d ring(window %d)%s", g.n, g.window, shape(g))
		} else {
			fmt.Fprintf(&b, "%d flat%s", g.n, shape(g))
		}
	}
	return b.String()
}

// SharingSummary names the caches more than one layer attends: "shared:
// cache 4 by layers 4,6,7,8; cache 5 by layers 5,9"; "" when none is, and
// it names caches no layer attends ("cache 3 unused").
func (c *Config) SharingSummary() string {
	if !c.Shared() {
		return ""
	}
	var parts []string
	for id, ls := range c.CacheLayers() {
		switch len(ls) {
		case 0:
			parts = append(parts, fmt.Sprintf("cache %d unused", id))
		case 1:
		default:
			parts = append(parts, fmt.Sprintf("cache %d by layers %s", id, joinInts(ls, ",")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "shared: " + strings.Join(parts, "; ")
}

// ShortSummary is the one-line form for lists: the LayersSummary of a
// model without sharing or mixed shapes, else e.g. "10 layers, 6 caches: 5
// ring(8) ×1h ×16d + 1 flat ×2h ×32d, 4 layers share" (kv heads and head
// size where they differ between caches).
func (c *Config) ShortSummary() string {
	byShape := !c.uniformShape()
	if !byShape && !c.Shared() {
		return c.LayersSummary()
	}
	gs := c.groups(byShape)
	// Rings first here: in a list the common kind leads.
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].kind == Ring && gs[j].kind != Ring })
	// Only the part of the shape that differs between caches is shown.
	heads, dims := false, false
	for _, l := range c.Layers {
		heads = heads || l.KVHeads != c.Layers[0].KVHeads
		dims = dims || l.HeadDim != c.Layers[0].HeadDim
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d layers, %d %s: ", c.NLayers(), len(c.Layers), plural(len(c.Layers), "cache", "caches"))
	for i, g := range gs {
		if i > 0 {
			b.WriteString(" + ")
		}
		if g.kind == Ring {
			fmt.Fprintf(&b, "%d ring(%d)", g.n, g.window)
		} else {
			fmt.Fprintf(&b, "%d flat", g.n)
		}
		if heads {
			fmt.Fprintf(&b, " ×%dh", g.heads)
		}
		if dims {
			fmt.Fprintf(&b, " ×%dd", g.dim)
		}
	}
	if n := c.sharingLayers(); n > 0 {
		fmt.Fprintf(&b, ", %d %s", n, plural(n, "layer shares", "layers share"))
	}
	return b.String()
}

// sharingLayers counts the layers that attend a cache an earlier layer
// already attends.
func (c *Config) sharingLayers() int {
	n := 0
	seen := map[int]bool{}
	for _, id := range c.LayerCache {
		if seen[id] {
			n++
		}
		seen[id] = true
	}
	return n
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}

// RingRows is the number of rows a ring layer keeps: window + max_write - 1
// (max_write defaults to the window when unset).
func (c *Config) RingRows(l Layer) int {
	mw := c.MaxWrite
	if mw <= 0 {
		mw = l.Window
	}
	return l.Window + mw - 1
}

// Rows is the most rows layer l ever holds.
func (c *Config) Rows(l Layer) int {
	if l.Kind == Ring {
		return c.RingRows(l)
	}
	return c.Capacity
}

// LayerBytes is the K+V bytes of layer l holding rows rows.
func (c *Config) LayerBytes(l Layer, rows int) int64 {
	return int64(rows) * int64(l.KVHeads) * int64(l.HeadDim) * 2 * int64(c.DType.Size())
}

// LayerMemory is one layer's K+V bytes at the initial pool size and at full
// capacity.
type LayerMemory struct {
	Rows, InitialRows int
	Initial, Full     int64
}

// Memory estimates every layer's KV bytes. Flat layers hold capacity rows
// when full and min(initial, capacity) at the start; ring layers hold
// window+max_write-1 rows from the start (see PoolRows).
func (c *Config) Memory() (layers []LayerMemory, initial, full int64) {
	layers = make([]LayerMemory, len(c.Layers))
	for i, l := range c.Layers {
		rows := c.Rows(l)
		init := c.PoolRows(l, 0)
		layers[i] = LayerMemory{Rows: rows, InitialRows: init, Initial: c.LayerBytes(l, init), Full: c.LayerBytes(l, rows)}
		initial += layers[i].Initial
		full += layers[i].Full
	}
	return layers, initial, full
}

// Validate checks a config that did not come from Build (a stored setting,
// a config passed across the C ABI).
func (c *Config) Validate() error {
	switch {
	case c == nil:
		return errors.New("no cache config")
	case c.Capacity <= 0 || c.Capacity > MaxCapacity:
		return fmt.Errorf("capacity %d out of range (1..%d)", c.Capacity, MaxCapacity)
	case c.InitialCapacity < 0 || c.InitialCapacity > MaxCapacity:
		return fmt.Errorf("initial capacity %d out of range", c.InitialCapacity)
	case len(c.Layers) == 0:
		return errors.New("the cache config lists no caches")
	case c.MaxWrite < 0:
		return fmt.Errorf("max_write %d is negative", c.MaxWrite)
	}
	if _, err := ParseDType(c.DType.Flag()); err != nil {
		return err
	}
	for i, l := range c.Layers {
		if l.KVHeads <= 0 || l.HeadDim <= 0 {
			return fmt.Errorf("cache %d: kv_heads %d, head_dim %d", i, l.KVHeads, l.HeadDim)
		}
		if (l.Kind == Ring) != (l.Window > 0) || (l.Kind != Ring && l.Kind != Flat) {
			return fmt.Errorf("cache %d: kind %d with window %d", i, l.Kind, l.Window)
		}
	}
	return nil
}
