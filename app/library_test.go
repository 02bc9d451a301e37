package app

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

func names(es []LibraryEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestLibraryAddShowRemovePersist(t *testing.T) {
	ctx := context.Background()
	b, db := testBackend(t)
	lib := NewLibrary(b.Inspector, b.Library)
	changes := 0
	lib.Subscribe(func() { changes++ })

	// A folder of three models (one without a tokenizer), a stray file, a
	// broken .pte and a path that does not exist.
	root := t.TempDir()
	for _, n := range []string{fixtures.Llama3, fixtures.Gemma3} {
		p := modelCopy(t, n, true)
		if err := os.Rename(filepath.Dir(p), filepath.Join(root, n)); err != nil {
			t.Fatal(err)
		}
	}
	ingraph := modelCopy(t, fixtures.InGraph, false)
	broken := filepath.Join(root, "broken.pte")
	if err := os.WriteFile(broken, []byte("this is not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("x"), 0o644)

	res := lib.Add(ctx, root, ingraph, notes, filepath.Join(root, "missing.pte"))
	if len(res.Added) != 4 {
		t.Fatalf("added %v", res.Added)
	}
	if len(res.Problems) != 2 || !strings.Contains(res.Problems[0].Error(), "notes.txt is not a .pte file") ||
		!strings.Contains(res.Problems[1].Error(), "missing.pte: cannot read it") {
		t.Errorf("problems %v", res.Problems)
	}
	if msg := res.Message(); !strings.Contains(msg, "Added 4 model(s)") || !strings.Contains(msg, "notes.txt") {
		t.Errorf("message %q", msg)
	}
	if changes == 0 {
		t.Error("subscriber not called")
	}
	// Adding again changes nothing.
	if again := lib.Add(ctx, ingraph); len(again.Added) != 0 || len(again.Already) != 1 {
		t.Errorf("re-add: %+v", again)
	}

	es := lib.Entries()
	if got := names(es); !slices.Equal(got, []string{"broken", fixtures.Gemma3, fixtures.InGraph, fixtures.Llama3}) {
		t.Fatalf("entries %v", got)
	}
	byName := map[string]LibraryEntry{}
	for _, e := range es {
		byName[e.Name()] = e
	}
	if e := byName["broken"]; e.Info != nil || e.Badge() != "unreadable" || e.Runnable() || e.Reason() == "" {
		t.Errorf("broken: badge %q reason %q", e.Badge(), e.Reason())
	}
	if e := byName[fixtures.Llama3]; e.Badge() != "off-graph" || !e.Runnable() ||
		e.Row() != "tokenizer found, template found · 7.9 MiB · fp32 · 2 layers: 2 flat · ctx 128 · chunk 32" {
		t.Errorf("llama3: %q %q", e.Badge(), e.Row())
	}
	if e := byName[fixtures.Gemma3]; !strings.Contains(e.Row(), "4 layers: 1 flat + 3 ring(window 8)") || !strings.Contains(e.Row(), "chunk 8") {
		t.Errorf("gemma3 row %q", e.Row())
	}
	if e := byName[fixtures.InGraph]; e.Badge() != "in-graph" || !strings.Contains(e.Row(), "tokenizer missing, template missing") {
		t.Errorf("in-graph: %q %q", e.Badge(), e.Row())
	}

	// The store has them; a new view-model over it reads the same list.
	ms, err := db.ListModels(ctx)
	if err != nil || len(ms) != 4 {
		t.Fatalf("stored %d models, %v", len(ms), err)
	}
	for _, m := range ms {
		if m.DisplayName == fixtures.Llama3 && m.SHA256 != llamaSHA {
			t.Errorf("llama3 stored with hash %q", m.SHA256)
		}
	}
	lib2 := NewLibrary(b.Inspector, b.Library)
	if err := lib2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(lib2.Entries()), names(es)) {
		t.Errorf("reloaded %v", names(lib2.Entries()))
	}

	// Remove forgets the model and keeps the file.
	if err := lib.Remove(ctx, broken); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(broken); err != nil {
		t.Errorf("remove touched the file: %v", err)
	}
	if _, ok := lib.Entry(broken); ok {
		t.Error("still listed")
	}
	if ms, _ := db.ListModels(ctx); len(ms) != 3 {
		t.Errorf("store has %d models after remove", len(ms))
	}

	// DeleteFile removes the file too (the view asks first).
	victim := filepath.Join(t.TempDir(), "victim.pte")
	data, _ := os.ReadFile(fixtures.PTE(fixtures.Llama3))
	os.WriteFile(victim, data, 0o644)
	lib.Add(ctx, victim)
	if err := lib.DeleteFile(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file still there: %v", err)
	}
	if _, ok := lib.Entry(victim); ok {
		t.Error("deleted file still listed")
	}
}

func TestLibraryRescanSeesChanges(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, b.Library)
	path := modelCopy(t, fixtures.Llama3, false)
	lib.Add(ctx, path)
	if e, _ := lib.Entry(path); e.Info == nil || e.Info.Companion.Tokenizer != "" {
		t.Fatalf("before: %+v", e)
	}
	// the user puts the tokenizer next to the model and rescans
	src := fixtures.Tokenizer(t, fixtures.Llama3)
	if err := os.Symlink(src, filepath.Join(filepath.Dir(path), "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	lib.Rescan(ctx)
	if e, _ := lib.Entry(path); e.Info == nil || e.Info.Companion.Tokenizer == "" {
		t.Errorf("rescan did not find the tokenizer")
	}
	// the file goes away: the entry says so and stays until removed
	moved := path + ".moved"
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	lib.Rescan(ctx)
	e, ok := lib.Entry(path)
	if !ok || e.Badge() != "missing" || !strings.Contains(e.Reason(), "remove it from the library") {
		t.Errorf("missing file: ok %v badge %q reason %q", ok, e.Badge(), e.Reason())
	}
}

func TestLibraryDetailsFollowEstimate(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, nil) // no store: still works
	gemma := modelCopy(t, fixtures.Gemma3, true)
	lib.Add(ctx, gemma)
	if _, ok := lib.Details(); !ok {
		t.Fatal("the added model is not selected")
	}
	d, _ := lib.Details()
	if len(d.Layers) != 4 || d.CacheErr != "" {
		t.Fatalf("layers %v err %q", d.Layers, d.CacheErr)
	}
	m := inspect(t, gemma)
	l := m.Layout
	// ring layers hold window + chunk - 1 rows; flat ones the capacity
	for i, row := range d.Layers {
		want := "128"
		if l.Windows[i] > 0 {
			want = itoa(l.Windows[i] + l.PrefillChunk - 1)
		}
		if row[5] != want {
			t.Errorf("layer %d rows %s, want %s", i, row[5], want)
		}
	}
	bf16 := d.Memory

	lib.SetEstimate("64", "fp32")
	d, _ = lib.Details()
	if d.Memory == bf16 || !strings.Contains(d.Memory, "capacity 64, fp32") {
		t.Errorf("memory did not follow: %q", d.Memory)
	}
	// the flat layer at 64 fp32 rows: 64 * heads * dim * 2 * 4 bytes
	flat := 2
	want := FormatBytes(int64(64 * l.KVHeads[flat] * l.HeadDims[flat] * 2 * 4))
	if d.Layers[flat][7] != want {
		t.Errorf("flat layer at capacity %s, want %s", d.Layers[flat][7], want)
	}
	if !strings.Contains(d.Summary, "capacity=64") || !strings.Contains(d.Summary, "Float(fp32)") {
		t.Errorf("summary %q", d.Summary)
	}

	lib.SetEstimate("many", "fp16")
	d, _ = lib.Details()
	if d.CacheErr == "" || len(d.Layers) != 0 || !strings.Contains(d.Memory, `"many"`) {
		t.Errorf("bad capacity: %q %q", d.CacheErr, d.Memory)
	}
	lib.SetEstimate("", "fp64")
	d, _ = lib.Details()
	if !strings.Contains(d.CacheErr, "is unknown: choose bf16, fp16 or fp32") {
		t.Errorf("bad dtype: %q", d.CacheErr)
	}

	// facts name the companions and the weights
	lib.SetEstimate("", "bf16")
	d, _ = lib.Details()
	facts := map[string]string{}
	for _, f := range d.Facts {
		facts[f[0]] = f[1]
	}
	if !strings.HasSuffix(facts["Tokenizer"], "tokenizer.json") || facts["Chat template"] != "found" ||
		!strings.Contains(facts["Methods"], "get_windows") || !strings.Contains(facts["Weights"], "parameters") ||
		!strings.Contains(facts["Delegates"], "MLXBackend") || facts["Max context"] != "128 tokens" {
		t.Errorf("facts %v", facts)
	}

	// in-graph: no estimate, an explanation instead
	ig := modelCopy(t, fixtures.InGraph, false)
	lib.Add(ctx, ig)
	d, _ = lib.Details()
	if len(d.Layers) != 0 || !strings.Contains(d.Memory, "inside the graph") {
		t.Errorf("in-graph details %q", d.Memory)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestLibraryStoreFailureIsReported(t *testing.T) {
	ctx := context.Background()
	b, db := testBackend(t)
	db.Close() // the database goes away under the library
	lib := NewLibrary(b.Inspector, b.Library)
	if err := lib.Load(ctx); err == nil || !strings.Contains(err.Error(), "could not read the model library") {
		t.Errorf("load: %v", err)
	}
	res := lib.Add(ctx, modelCopy(t, fixtures.Llama3, true))
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Error(), "was not saved in the library") {
		t.Errorf("add: %v", res.Problems)
	}
	if len(lib.Entries()) != 1 { // still shown for this session
		t.Errorf("entries %d", len(lib.Entries()))
	}
}

// gemma4-tiny: the list row and the details count the model's 10 layers
// and its 6 caches apart, with their shapes, and size the memory per cache.
func TestLibraryGemma4Caches(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	lib := NewLibrary(b.Inspector, nil)
	path := modelCopy(t, fixtures.Gemma4, true)
	lib.Add(ctx, path)
	e, ok := lib.Entry(path)
	if !ok || !strings.Contains(e.Row(), " · 10 layers, 6 caches: 5 ring(8) ×1h ×16d + 1 flat ×2h ×32d, 4 layers share · ctx 128 · chunk 8") {
		t.Errorf("row %q", e.Row())
	}
	d, ok := lib.Details()
	if !ok || len(d.Layers) != 6 || d.CacheErr != "" {
		t.Fatalf("details: %d rows, %q", len(d.Layers), d.CacheErr)
	}
	for i, want := range [][]string{
		{"0", "ring", "8", "1", "16", "15", "960 B", "960 B"},
		{"4 (4,6,7,8)", "ring", "8", "1", "16", "15", "960 B", "960 B"},
		{"5 (5,9)", "flat", "—", "2", "32", "128", "32.0 KiB", "32.0 KiB"},
	} {
		row := d.Layers[[]int{0, 4, 5}[i]]
		if !slices.Equal(row, want) {
			t.Errorf("cache row %v, want %v", row, want)
		}
	}
	if !strings.Contains(d.Summary, "\n        10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)\n        shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9") ||
		!strings.Contains(d.Memory, "36.7 KiB at start, 36.7 KiB when full") {
		t.Errorf("summary %q, memory %q", d.Summary, d.Memory)
	}
}
