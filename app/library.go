package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
)

// LibraryEntry is one model of the library: what could be read of it, or
// why not.
type LibraryEntry struct {
	Path string
	Info *ModelInfo // nil when the file could not be read
	Err  error      // why Info is nil
	// ChatErr is why the tokenizer or chat template next to the model
	// cannot be used (not JSON, no template to pick), found when scanning.
	ChatErr error
	// Template is the chat template the check chose ("none": the model
	// can only continue raw text; "" when not checked).
	Template string

	label string
}

// Name is the entry's display name.
func (e LibraryEntry) Name() string { return ModelName(e.Path) }

// Label is the name, with the folder added when two entries share a name,
// so that every entry of the library has its own label.
func (e LibraryEntry) Label() string {
	if e.label != "" {
		return e.label
	}
	return e.Name()
}

// ChatBlocked says why the chat cannot open the model ("" when it can).
func (e LibraryEntry) ChatBlocked() string {
	switch {
	case e.Chattable():
		return ""
	case e.Info == nil || !e.Runnable():
		if r := e.Reason(); r != "" {
			return "Chat is not available: " + r
		}
		return "Chat is not available: etchat cannot run this file"
	}
	if e.ChatErr != nil {
		return "Chat is not available: " + e.ChatErr.Error() + " — fix or replace the file, then Rescan"
	}
	return "Chat is not available: there is no tokenizer.json next to the .pte — put the model's tokenizer.json (and tokenizer_config.json) there, then Rescan"
}

// Runnable reports whether the chat can open the model.
func (e LibraryEntry) Runnable() bool {
	return e.Info != nil && (e.Info.Kind == modelinfo.OffGraph || e.Info.Kind == modelinfo.InGraph)
}

// Chattable reports whether the chat can open the model now: runnable and
// with a tokenizer next to it.
func (e LibraryEntry) Chattable() bool {
	return e.Runnable() && e.Info.Companion.Tokenizer != "" && e.ChatErr == nil
}

// Badge is the kind label, "unreadable" or "missing" for files that failed.
func (e LibraryEntry) Badge() string {
	if e.Info == nil {
		if errors.Is(e.Err, fs.ErrNotExist) {
			return "missing"
		}
		return "unreadable"
	}
	return kindBadge(e.Info.Kind)
}

// Reason explains the badge: why a model cannot run, or "".
func (e LibraryEntry) Reason() string {
	if e.Info == nil {
		if e.Err == nil {
			return ""
		}
		if errors.Is(e.Err, fs.ErrNotExist) {
			return "the file is gone; rescan after putting it back, or remove it from the library"
		}
		return e.Err.Error()
	}
	reason := ""
	if e.Info.Kind == modelinfo.Unsupported || e.Info.Kind == modelinfo.InGraph {
		reason = e.Info.KindReason
	}
	return reason
}

// Row is the list line: size, cache, limits and companions.
func (e LibraryEntry) Row() string {
	if e.Info == nil {
		return e.Reason()
	}
	m := e.Info
	// The companions first: they decide whether the model can chat, and
	// the end of a long row is what a narrow list cuts off.
	parts := []string{companionText(e), FormatBytes(m.SizeBytes)}
	if m.Quantization.Summary != "" {
		parts = append(parts, m.Quantization.Summary)
	}
	if m.Layout != nil {
		if cfg, err := m.CacheConfig(kvcache.DefaultPolicy()); err == nil {
			// Layers and caches apart where they differ (KV sharing).
			parts = append(parts, cfg.ShortSummary())
		}
	}
	if m.MaxCtxLen > 0 {
		parts = append(parts, "ctx "+strconv.Itoa(m.MaxCtxLen))
	}
	if m.PrefillChunk > 0 {
		parts = append(parts, "chunk "+strconv.Itoa(m.PrefillChunk))
	}
	return strings.Join(parts, " · ")
}

// exportMetadata is what a newer ExecuTorch's export (PR #22655) says of
// itself beyond its limits, and what etchat does with it ("" for older
// exports, which publish none of it).
func exportMetadata(m *ModelInfo) string {
	md := m.Metadata
	var parts []string
	if md.ChunkFrom == modelinfo.MethodMaxSeqLen || md.CapacityFrom == modelinfo.MethodMaxContextLen {
		parts = append(parts, "limits from "+md.ChunkFrom+" and "+md.CapacityFrom)
	}
	if md.ActivationDType != 0 {
		parts = append(parts, "activations "+md.ActivationDType.Flag()+" (the KV cache stores "+md.ActivationDType.Flag()+" unless the settings choose)")
	}
	if md.LogitsPublished {
		parts = append(parts, map[engine.LogitsMode]string{engine.LogitsFull: "logits for every position",
			engine.LogitsLast: "logits for the last position only", engine.LogitsSelected: "logits for selected rows"}[md.LogitsMode])
	}
	return strings.Join(parts, "; ")
}

func companionText(e LibraryEntry) string {
	m := e.Info
	tok := "tokenizer missing"
	switch {
	case m.Companion.Tokenizer != "" && e.ChatErr != nil:
		tok = "tokenizer unusable"
	case m.Companion.Tokenizer != "":
		tok = "tokenizer found"
	}
	tmpl := "template missing"
	if m.Companion.HasChatTemplate {
		tmpl = "template found"
	}
	return tok + ", " + tmpl
}

// Library is the model library's view-model: the list, the selection, and
// the details pane's memory estimate at the capacity and dtype the user
// picks. It is safe for concurrent use; subscribers (Subscribe) are called after
// every change, from whichever goroutine made it.
type Library struct {
	inspect Inspector
	store   LibraryStore

	mu       sync.Mutex
	entries  []LibraryEntry
	selected string // path
	capacity string // details pane: text of the capacity field
	dtype    string
	// scanDone of scanTotal models have been read by the running Load,
	// Add or Rescan; scanTotal is 0 when none runs.
	scanDone, scanTotal int
	scanName            string  // the model being read
	fit                 FitFunc // the device's fit of the selection (nil: not shown)

	subs []func()
}

// NewLibrary makes a library view-model; store may be nil (nothing is
// persisted, as when the database could not be opened).
func NewLibrary(inspect Inspector, store LibraryStore) *Library {
	return &Library{inspect: inspect, store: store, dtype: "bf16"}
}

// Subscribe adds f to the functions called after every change (from
// whichever goroutine made it); each view subscribes on its own.
func (l *Library) Subscribe(f func()) {
	l.mu.Lock()
	l.subs = append(l.subs, f)
	l.mu.Unlock()
}

func (l *Library) changed() {
	l.mu.Lock()
	subs := append([]func(){}, l.subs...)
	l.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// Entries returns a copy of the list, sorted by name.
func (l *Library) Entries() []LibraryEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LibraryEntry(nil), l.entries...)
}

// Entry returns the entry for path.
func (l *Library) Entry(path string) (LibraryEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.Path == path {
			return e, true
		}
	}
	return LibraryEntry{}, false
}

// Load reads the stored library and inspects every model in it.
func (l *Library) Load(ctx context.Context) error {
	if l.store == nil {
		return nil
	}
	paths, err := l.store.ListModels(ctx)
	if err != nil {
		return fmt.Errorf("could not read the model library: %w", err)
	}
	// The list fills model by model, with the progress beside it.
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	defer l.scanEnd()
	for i, p := range paths {
		l.scanStep(i, len(paths), p)
		e := l.read(ctx, p)
		l.mu.Lock()
		l.entries = append(l.entries, e)
		l.sortLocked()
		l.mu.Unlock()
	}
	return nil
}

// scanStep reports that done of total models have been read and path is
// read next.
func (l *Library) scanStep(done, total int, path string) {
	l.mu.Lock()
	l.scanDone, l.scanTotal, l.scanName = done, total, ModelName(path)
	l.mu.Unlock()
	l.changed()
}

func (l *Library) scanEnd() {
	l.mu.Lock()
	l.scanDone, l.scanTotal, l.scanName = 0, 0, ""
	l.mu.Unlock()
	l.changed()
}

// Scan is the progress of reading models (at start, adding, rescanning).
type Scan struct {
	Done, Total int    // Total 0: nothing is being read
	Name        string // the model being read
}

// Active reports whether models are being read.
func (s Scan) Active() bool { return s.Total > 0 }

// Fraction is Done/Total.
func (s Scan) Fraction() float64 {
	if s.Total == 0 {
		return 0
	}
	return float64(s.Done) / float64(s.Total)
}

// Text is the status line: "Inspecting 2 of 5: gemma3…".
func (s Scan) Text() string {
	if s.Total == 0 {
		return ""
	}
	return fmt.Sprintf("Inspecting %d of %d: %s…", s.Done+1, s.Total, s.Name)
}

// Scanning returns the progress of reading models.
func (l *Library) Scanning() Scan {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Scan{Done: l.scanDone, Total: l.scanTotal, Name: l.scanName}
}

func (l *Library) read(ctx context.Context, path string) LibraryEntry {
	info, err := l.inspect.Inspect(ctx, path)
	if err != nil {
		return LibraryEntry{Path: path, Err: err}
	}
	e := LibraryEntry{Path: path, Info: info}
	if c, ok := l.inspect.(ChatChecker); ok && e.Runnable() && info.Companion.Tokenizer != "" {
		e.Template, e.ChatErr = c.CheckChat(info)
	}
	return e
}

// ChatChecker loads a model's tokenizer and chat template as a chat
// would, so the library says at scan time, not at the first send, that
// they cannot be used (the real inspector has it).
type ChatChecker interface {
	CheckChat(m *ModelInfo) (template string, err error)
}

func (l *Library) sortLocked() {
	sort.SliceStable(l.entries, func(i, j int) bool {
		a, b := strings.ToLower(l.entries[i].Name()), strings.ToLower(l.entries[j].Name())
		if a != b {
			return a < b
		}
		return l.entries[i].Path < l.entries[j].Path
	})
	count := map[string]int{}
	for _, e := range l.entries {
		count[e.Name()]++
	}
	for i, e := range l.entries {
		l.entries[i].label = ""
		if count[e.Name()] > 1 {
			dir := filepath.Dir(e.Path)
			if strings.EqualFold(filepath.Base(e.Path), "model.pte") {
				dir = filepath.Dir(dir)
			}
			l.entries[i].label = e.Name() + " (" + dir + ")"
		}
	}
}

// AddResult says what Add did.
type AddResult struct {
	Added    []string // paths new to the library
	Already  []string // paths it had
	Problems []error  // paths that are not .pte files, unreadable folders, store failures
}

// Message is a one-paragraph account for a dialog, "" when all went well.
func (r AddResult) Message() string {
	if len(r.Problems) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Added %d model(s).", len(r.Added))
	for _, p := range r.Problems {
		b.WriteString("\n• ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Add puts .pte files in the library. A folder adds every .pte under it.
// Files that fail to parse are added too, marked unreadable with the
// reason, so the user sees what is wrong; files that are not .pte are
// refused. The first added model becomes the selection.
func (l *Library) Add(ctx context.Context, paths ...string) AddResult {
	var res AddResult
	var files []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			res.Problems = append(res.Problems, fmt.Errorf("%s: %w", p, err))
			continue
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			res.Problems = append(res.Problems, fmt.Errorf("%s: cannot read it (%v)", abs, unwrapPathErr(err)))
		case fi.IsDir():
			found, err := findPTE(ctx, abs)
			if err != nil {
				res.Problems = append(res.Problems, fmt.Errorf("folder %s: %v", abs, err))
			}
			if len(found) == 0 && err == nil {
				res.Problems = append(res.Problems, fmt.Errorf("folder %s holds no .pte files", abs))
			}
			files = append(files, found...)
		case !strings.EqualFold(filepath.Ext(abs), ".pte"):
			res.Problems = append(res.Problems, fmt.Errorf("%s is not a .pte file; etchat opens ExecuTorch programs exported for the MLX backend", filepath.Base(abs)))
		default:
			files = append(files, abs)
		}
	}
	if len(files) > 0 {
		defer l.scanEnd()
	}
	for i, f := range files {
		if _, ok := l.Entry(f); ok {
			res.Already = append(res.Already, f)
			continue
		}
		l.scanStep(i, len(files), f)
		e := l.read(ctx, f)
		if l.store != nil {
			if err := l.store.SaveModel(ctx, f, e.Info); err != nil {
				res.Problems = append(res.Problems, fmt.Errorf("%s was not saved in the library: %w", filepath.Base(f), err))
			}
		}
		l.mu.Lock()
		l.entries = append(l.entries, e)
		l.sortLocked()
		if len(res.Added) == 0 {
			l.selected = f
		}
		l.mu.Unlock()
		res.Added = append(res.Added, f)
	}
	return res
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// findPTE lists the .pte files under dir, skipping hidden folders.
func findPTE(ctx context.Context, dir string) ([]string, error) {
	var out []string
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // a dropped link to a folder: walk the folder
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable subfolder: skip it
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".pte") {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Rescan reads every model again (a file replaced, a tokenizer added).
func (l *Library) Rescan(ctx context.Context) {
	l.mu.Lock()
	paths := make([]string, len(l.entries))
	for i, e := range l.entries {
		paths[i] = e.Path
	}
	l.mu.Unlock()
	fresh := make(map[string]LibraryEntry, len(paths))
	for i, p := range paths {
		l.scanStep(i, len(paths), p)
		fresh[p] = l.read(ctx, p)
		if l.store != nil && fresh[p].Info != nil {
			_ = l.store.SaveModel(ctx, p, fresh[p].Info) // refresh the stored metadata; the entry is there already
		}
	}
	l.mu.Lock()
	for i, e := range l.entries {
		if f, ok := fresh[e.Path]; ok {
			l.entries[i] = f
		}
	}
	l.sortLocked()
	l.scanDone, l.scanTotal, l.scanName = 0, 0, ""
	l.mu.Unlock()
	l.changed()
}

// Remove forgets path; the file stays on disk.
func (l *Library) Remove(ctx context.Context, path string) error {
	if l.store != nil {
		if err := l.store.RemoveModel(ctx, path); err != nil {
			return fmt.Errorf("could not remove %s from the library: %w", ModelName(path), err)
		}
	}
	l.mu.Lock()
	for i, e := range l.entries {
		if e.Path == path {
			l.entries = append(l.entries[:i], l.entries[i+1:]...)
			break
		}
	}
	l.sortLocked()
	if l.selected == path {
		l.selected = ""
	}
	l.mu.Unlock()
	l.changed()
	return nil
}

// DeleteFile removes path from the library and deletes the file. The view
// asks the user to confirm first; nothing else calls it.
func (l *Library) DeleteFile(ctx context.Context, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("could not delete %s: %v; it stays in the library", path, unwrapPathErr(err))
	}
	return l.Remove(ctx, path)
}

// Select makes path the entry the details pane shows ("" for none).
func (l *Library) Select(path string) {
	l.mu.Lock()
	l.selected = path
	l.mu.Unlock()
	l.changed()
}

// Selected is the selected entry.
func (l *Library) Selected() (LibraryEntry, bool) {
	l.mu.Lock()
	p := l.selected
	l.mu.Unlock()
	if p == "" {
		return LibraryEntry{}, false
	}
	return l.Entry(p)
}

// SetEstimate sets the capacity ("" = the model's maximum) and storage
// dtype the details pane estimates KV memory for.
func (l *Library) SetEstimate(capacity, dtype string) {
	l.mu.Lock()
	l.capacity, l.dtype = capacity, dtype
	l.mu.Unlock()
	l.changed()
}

// Estimate returns the details pane's capacity and dtype fields.
func (l *Library) Estimate() (capacity, dtype string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.capacity, l.dtype
}

// Details is the details pane of the selected model.
type Details struct {
	Title  string
	Facts  [][2]string // label, value
	Layers [][]string  // per-layer geometry rows (LayerHeader columns)
	// Memory is the KV total at the chosen capacity and dtype, or the
	// reason there is none; CacheErr is set when the choice is invalid.
	Memory   string
	CacheErr string
	Summary  string // the runner's two-line cache announcement
	// Configurable: the estimate's capacity and dtype apply (off-graph).
	Configurable bool
	// ChatBlocked is why Chat is disabled ("" when it is not).
	ChatBlocked string
}

// LayerHeader names the columns of Details.Layers. Short headers, so
// that the table fits the details pane at 800×600 without scrolling
// sideways ("KV start" and "KV full": the cache's bytes at start and at
// capacity).
var LayerHeader = []string{"layer", "kind", "window", "heads", "dim", "rows", "KV start", "KV full"}

// Details computes the pane for the selection.
func (l *Library) Details() (Details, bool) {
	e, ok := l.Selected()
	if !ok {
		return Details{}, false
	}
	d := Details{Title: e.Label(), ChatBlocked: e.ChatBlocked()}
	if e.Info == nil {
		d.Facts = [][2]string{{"File", e.Path}, {"Status", e.Badge()}, {"Problem", e.Reason()}}
		d.Memory = "No estimate: the file could not be read."
		return d, true
	}
	d.Facts = modelFacts(e)
	if e.Info.Layout == nil {
		d.Memory = "The program keeps its cache inside the graph: capacity and dtype are fixed by the export, so there is nothing to estimate here."
		return d, true
	}
	d.Configurable = true
	capText, dtype := l.Estimate()
	cfg, err := estimateConfig(e.Info, capText, dtype)
	if err != nil {
		d.CacheErr = err.Error()
		d.Memory = "No estimate: " + d.CacheErr
		return d, true
	}
	var initial, full int64
	d.Layers, initial, full = layerRows(cfg)
	d.Memory = fmt.Sprintf("KV cache at capacity %d, %s: %s at start, %s when full", cfg.Capacity, cfg.DType.Flag(), FormatBytes(initial), FormatBytes(full))
	d.Memory += l.fitLine(e.Path, full)
	d.Summary = CacheSummary(cfg)
	return d, true
}

// modelFacts are the details pane's label/value lines of a readable model.
func modelFacts(e LibraryEntry) [][2]string {
	m := e.Info
	var facts [][2]string
	fact := func(k, v string) { facts = append(facts, [2]string{k, v}) }
	// optional adds a line only when its number is known.
	optional := func(k string, n int, unit string) {
		if n > 0 {
			fact(k, strconv.Itoa(n)+unit)
		}
	}
	fact("File", e.Path)
	fact("Size", FormatBytes(m.SizeBytes))
	kind := kindBadge(m.Kind)
	if r := e.Reason(); r != "" {
		kind += " — " + r
	}
	fact("Kind", kind)
	if m.Companion.ModelType != "" {
		fact("Model type", m.Companion.ModelType)
	}
	optional("Max context", m.MaxCtxLen, " tokens")
	optional("Prefill chunk", m.PrefillChunk, " tokens")
	optional("Vocabulary", m.VocabSize, "")
	if md := exportMetadata(m); md != "" {
		fact("Export metadata", md)
	}
	fact("Weights", weightsLine(m))
	if m.Quantization.Summary != "" {
		fact("Quantization", m.Quantization.Summary)
	}
	fact("Methods", strings.Join(methodNames(m), ", "))
	if len(delegateLines(m)) > 0 {
		fact("Delegates", strings.Join(delegateLines(m), "; "))
	}
	tok := orMissing(m.Companion.Tokenizer, "missing — put tokenizer.json next to the .pte to chat")
	if e.ChatErr != nil {
		tok += " — cannot be used: " + e.ChatErr.Error()
	}
	fact("Tokenizer", tok)
	fact("Tokenizer config", orMissing(m.Companion.TokenizerConfig, "missing"))
	if p := companionProblems(m); p != "" {
		// Where it belongs, not in the Kind row: the program is fine.
		fact("Companion files", p)
	}
	template := "missing — chat sends raw text"
	if m.Companion.HasChatTemplate {
		template = "found"
	}
	fact("Chat template", template)
	if m.SHA256 != "" {
		fact("SHA-256", m.SHA256)
	}
	return facts
}

// weightsLine is "16.0 MiB (bf16), 8.4M parameters".
func weightsLine(m *ModelInfo) string {
	w := FormatBytes(m.Weights.Bytes)
	if len(m.Weights.DTypes) > 0 {
		w += " (" + strings.Join(m.Weights.DTypes, ", ") + ")"
	}
	if m.Weights.Params > 0 {
		w += fmt.Sprintf(", %s parameters", humanCount(m.Weights.Params))
	}
	return w
}

// estimateConfig is the cache configuration the estimate fields ask for:
// the typed capacity (empty: the model's default) and storage dtype.
func estimateConfig(m *ModelInfo, capText, dtype string) (*kvcache.Config, error) {
	p := kvcache.DefaultPolicy()
	p.StorageDType = dtype
	if t := strings.TrimSpace(capText); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("capacity %q is not a positive whole number", t)
		}
		p.Capacity = n
	}
	return m.CacheConfig(p)
}

// layerRows are the per-layer table (LayerHeader's columns) and the
// cache's bytes at start and when full.
func layerRows(cfg *kvcache.Config) (rows [][]string, initial, full int64) {
	layers, initial, full := cfg.Memory()
	byCache := cfg.CacheLayers()
	for i, lm := range layers {
		ly := cfg.Layers[i]
		kind, win := "flat", "—"
		if ly.Kind == kvcache.Ring {
			kind, win = "ring", strconv.Itoa(ly.Window)
		}
		// One row per cache; a shared one lists its layers: "4 (4,6,7,8)".
		id := strconv.Itoa(i)
		if byCache != nil && (len(byCache[i]) != 1 || byCache[i][0] != i) {
			ls := make([]string, len(byCache[i]))
			for j, x := range byCache[i] {
				ls[j] = strconv.Itoa(x)
			}
			id += " (" + strings.Join(ls, ",") + ")"
		}
		rows = append(rows, []string{id, kind, win, strconv.Itoa(ly.KVHeads), strconv.Itoa(ly.HeadDim),
			strconv.Itoa(lm.Rows), FormatBytes(lm.Initial), FormatBytes(lm.Full)})
	}
	return rows, initial, full
}

func orMissing(s, missing string) string {
	if s == "" {
		return missing
	}
	return s
}

func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f K", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

// CacheSummary is the runner's cache announcement, plus a line saying that
// the pools start at the capacity when it is below the initial size.
func CacheSummary(cfg *kvcache.Config) string {
	s := cfg.Summary()
	initial := cfg.InitialCapacity
	if initial < 0 {
		initial = kvcache.DefaultInitialCapacity
	}
	if initial > cfg.Capacity {
		s += fmt.Sprintf("\n        (the pools start at the capacity, %d: it is below the initial size %d)", cfg.Capacity, initial)
	}
	return s
}
