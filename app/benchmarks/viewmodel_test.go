package benchmarks

import (
	"context"
	"errors"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"etchat/inference/bench"
	"etchat/inference/bench/plot"
	"etchat/inference/cpu"
	"etchat/inference/engine"
	"etchat/internal/benchstore"
	"etchat/internal/fixtures"
	"etchat/store"
)

func testDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "etchat.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testVM(t *testing.T, db *store.DB) *ViewModel {
	t.Helper()
	var runs Runs // nil without a database: a nil *benchstore.Runs would not be
	if db != nil {
		runs = benchstore.NewRuns(db)
	}
	return New(Deps{
		Runs:       runs,
		OpenEngine: func(string) (engine.Engine, error) { return cpu.New(cpu.Options{}), nil },
		Machine:    &bench.Machine{CPU: "Test CPU", Cores: 2, OS: "linux"},
		AppVersion: "test",
	})
}

func smallForm() Form {
	f := DefaultForm()
	f.PTE, f.Prompts, f.Gens, f.Reps, f.Engine = fixtures.PTE(fixtures.Llama3), "8", "4", "2", "cpu"
	return f
}

func TestFormErrors(t *testing.T) {
	for field, mod := range map[string]func(f *Form){
		"Model":             func(f *Form) { f.PTE = " " },
		"Prompt sizes":      func(f *Form) { f.Prompts = "abc" },
		"Generation sizes":  func(f *Form) { f.Gens = "-1" },
		"Depths":            func(f *Form) { f.Depths = "0,,1" },
		"Repetitions":       func(f *Form) { f.Reps = "0" },
		"KV storage dtypes": func(f *Form) { f.KVDTypes = "int4" },
		"KV capacities":     func(f *Form) { f.KVCapacities = "lots" },
		"KV windows":        func(f *Form) { f.KVWindows = "8;x" },
		"Engine":            func(f *Form) { f.Engine = "gpu" },
	} {
		f := smallForm()
		mod(&f)
		_, err := f.Options()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	o, err := smallForm().Options()
	if err != nil || o.Reps != 2 || len(o.Prompts) != 1 || o.Prompts[0] != 8 || len(o.Caches) != 1 {
		t.Fatalf("%+v %v", o, err)
	}
}

func nonBlank(t *testing.T, img image.Image) {
	t.Helper()
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(seen) < 6 {
		t.Errorf("chart has %d colors: blank", len(seen))
	}
}

func TestRunHistoryChartCompare(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	vm := testVM(t, db)
	var changes atomic.Int32
	vm.OnChange = func() { changes.Add(1) }

	if _, empty := vm.History(); empty == "" {
		t.Error("an empty history should say so")
	}
	for i := range 2 {
		f := smallForm()
		if i == 1 {
			f.Prompts = "16"
		}
		vm.SetForm(f)
		if err := vm.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := vm.Start(ctx); i == 0 && err == nil && vm.Run().Running {
			t.Error("a second Start while running was accepted")
		}
		vm.Wait()
		st := vm.Run()
		if st.Running || st.Err != nil || st.Fraction != 1 || !strings.Contains(st.Status, "Done: 2 tests, saved") || len(st.Results) != 2 {
			t.Fatalf("run %d: %+v", i, st)
		}
		// The results show after Run, one row per test.
		if rr := vm.ResultRows(); len(rr) != 2 || rr[0][0] != st.Results[0].Test.Name() || rr[0][2] == "0.00" {
			t.Errorf("run %d results %v", i, rr)
		}
	}
	if changes.Load() < 10 {
		t.Errorf("only %d change notifications", changes.Load())
	}
	rows, empty := vm.History()
	if empty != "" || len(rows) != 4 {
		t.Fatalf("%d rows, %q", len(rows), empty)
	}
	// Newest first by default: the second run's tests.
	if rows[0].RunID < rows[3].RunID || (rows[0].Test != "pp16" && rows[0].Test != "tg4") {
		t.Errorf("order: %+v", rows)
	}
	vm.SortBy(4, false) // test name, ascending
	rows, _ = vm.History()
	var tests []string
	for _, r := range rows {
		tests = append(tests, r.Test)
	}
	if strings.Join(tests, ",") != "pp16,pp8,tg4,tg4" {
		t.Errorf("sorted by test: %v", tests)
	}
	vm.SortBy(6, true)
	rows, _ = vm.History()
	for i := 1; i < len(rows); i++ {
		if rows[i].AvgTS > rows[i-1].AvgTS {
			t.Errorf("t/s not descending: %v", rows)
		}
	}
	if c := rows[0].Cells(); len(c) != len(Columns) || c[2] != "llama3-tiny-offgraph" {
		t.Errorf("cells %v", c)
	}

	if m := vm.Models(); len(m) != 1 || m[0] != "llama3-tiny-offgraph" {
		t.Errorf("models %v", m)
	}
	tv, cv := vm.ChartVersions()
	vm.SetFilter("other-model")
	if tv2, cv2 := vm.ChartVersions(); tv2 == tv || cv2 != cv {
		t.Errorf("versions %d,%d → %d,%d after a filter change", tv, cv, tv2, cv2)
	}
	if rows, empty := vm.History(); len(rows) != 0 || !strings.Contains(empty, "other-model") {
		t.Errorf("filter: %d rows %q", len(rows), empty)
	}
	vm.SetFilter("llama3-tiny-offgraph")
	img, err := vm.TrendChart(plot.Size{W: 400, H: 300}, "pp", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	nonBlank(t, img)
	// In the dark theme's colours the chart's background is dark.
	dark := color.NRGBA{0x17, 0x17, 0x18, 0xff}
	img, err = vm.TrendChart(plot.Size{W: 400, H: 300}, "tg", color.White, dark)
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(2, 2).RGBA(); r>>8 != 0x17 || g>>8 != 0x17 || b>>8 != 0x18 {
		t.Errorf("dark chart's corner is %x %x %x", r>>8, g>>8, b>>8)
	}

	first, second := rows[len(rows)-1], rows[0]
	if first.Batch == second.Batch {
		// pick rows of different runs
		for _, r := range rows {
			if r.Batch != second.Batch {
				first = r
			}
		}
	}
	if err := vm.Compare(ctx, first.Selector(rows), second.Selector(rows)); err != nil {
		t.Fatal(err)
	}
	text, _, err := vm.CompareResult()
	if err != nil || !strings.Contains(text, "baseline :") || !strings.Contains(text, "| tg4 ") || !strings.Contains(text, "not in") {
		t.Errorf("comparison %v:\n%s", err, text)
	}
	// Picked by run id; tests matched by kind and size, cache a column.
	if sel := first.Selector(rows); !strings.Contains(","+sel+",", ","+strconv.FormatInt(first.RunID, 10)+",") || strings.Contains(sel, "batch") ||
		!strings.Contains(text, "baseline cache") || !strings.Contains(text, "pp16") {
		t.Errorf("selector %q, text\n%s", sel, text)
	}
	img, err = vm.CompareChart(plot.Size{W: 400, H: 300})
	if err != nil {
		t.Fatal(err)
	}
	nonBlank(t, img)

	err = vm.Compare(ctx, "color=red", "latest")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Baseline" {
		t.Errorf("bad selector: %v", err)
	}
	if _, _, err := vm.CompareResult(); err == nil {
		t.Error("the failed comparison's error is not kept")
	}
}

func TestStartRefusesMisfitAndCancels(t *testing.T) {
	ctx := context.Background()
	vm := testVM(t, testDB(t))
	f := smallForm()
	f.Depths = "0,125"
	vm.SetForm(f)
	if err := vm.Start(ctx); !errors.Is(err, bench.ErrDoesNotFit) {
		t.Fatalf("misfit: %v", err)
	}
	if st := vm.Run(); st.Running || !strings.Contains(st.Status, "Not started") {
		t.Errorf("%+v", st)
	}

	f = smallForm()
	f.Prompts, f.Gens, f.Reps = "32", "32", "200"
	vm.SetForm(f)
	var canceled atomic.Bool
	vm.OnChange = func() {
		if st := vm.Run(); st.Running && st.Fraction > 0 && !canceled.Load() {
			canceled.Store(true)
			vm.Cancel()
		}
	}
	if err := vm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	vm.Wait()
	st := vm.Run()
	if st.Running || !errors.Is(st.Err, context.Canceled) || !strings.Contains(st.Status, "Canceled after 0 of 2 tests") {
		t.Errorf("%+v", st)
	}
}

func TestNoDatabase(t *testing.T) {
	vm := testVM(t, nil)
	if err := vm.Refresh(context.Background()); err == nil {
		t.Error("no error without a database")
	}
	if _, empty := vm.History(); !strings.Contains(empty, "database is not open") {
		t.Errorf("empty %q", empty)
	}
	f := smallForm()
	f.Gens, f.Reps = "0", "1"
	vm.SetForm(f)
	if err := vm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	vm.Wait()
	if st := vm.Run(); !strings.Contains(st.Status, "not saved") || len(st.Results) != 1 {
		t.Errorf("%+v", st)
	}
	if err := vm.Compare(context.Background(), "1", "2"); err == nil {
		t.Error("compare without a database")
	}
}

func TestChooseModelDefaultsTheTokenizerNextToIt(t *testing.T) {
	vm := testVM(t, nil)
	llama := filepath.Join(fixtures.Unpacked(t, fixtures.Llama3), "model.pte")
	gemma := filepath.Join(fixtures.Unpacked(t, fixtures.Gemma3), "model.pte")
	bare := filepath.Join(t.TempDir(), "bare.pte") // no tokenizer next to it
	vm.SetLibrary([]LibraryModel{{Label: "gemma", Path: gemma, Tokenizer: "/lib/knows/gemma/tokenizer.json"}})

	// Not in the library: the tokenizer.json next to the file.
	vm.ChooseModel(llama)
	if f := vm.Form(); f.PTE != llama || f.Tokenizer != filepath.Join(filepath.Dir(llama), "tokenizer.json") {
		t.Fatalf("form %+v", f)
	}
	// In the library: the library's tokenizer replaces the one filled in.
	vm.ChooseModel(gemma)
	if f := vm.Form(); f.PTE != gemma || f.Tokenizer != "/lib/knows/gemma/tokenizer.json" {
		t.Fatalf("form %+v", f)
	}
	// None next to it: the field empties (the run then goes without one).
	vm.ChooseModel(bare)
	if f := vm.Form(); f.PTE != bare || f.Tokenizer != "" {
		t.Fatalf("form %+v", f)
	}
	// A tokenizer the user typed stays.
	f := vm.Form()
	f.Tokenizer = "/my/tokenizer.json"
	vm.SetForm(f)
	v0 := vm.FormVersion()
	vm.ChooseModel(llama)
	if f := vm.Form(); f.PTE != llama || f.Tokenizer != "/my/tokenizer.json" || vm.FormVersion() == v0 {
		t.Fatalf("form %+v version %d", f, vm.FormVersion())
	}
}

// A run that cannot start says why and what to do next.
func TestStartRefusalSaysWhatToDo(t *testing.T) {
	vm := testVM(t, nil)
	bad := filepath.Join(t.TempDir(), "bad.pte")
	if err := os.WriteFile(bad, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pte, prompts, want string
	}{
		{bad, "4", "pick another model"},
		{filepath.Join(t.TempDir(), "gone.pte"), "4", "the file is not there"},
		{fixtures.PTE(fixtures.Llama3), "x", "correct the Prompt sizes field"},
		{fixtures.PTE(fixtures.Llama3), "4096", "use smaller sizes"},
	} {
		f := smallForm()
		f.PTE, f.Prompts = c.pte, c.prompts
		vm.SetForm(f)
		err := vm.Start(context.Background())
		if err == nil || !strings.Contains(Explain(err), c.want) || !strings.Contains(vm.Run().Status, c.want) {
			t.Errorf("%s %s: %v; status %q", filepath.Base(c.pte), c.prompts, err, vm.Run().Status)
		}
	}
}

func TestSizesFollowTheModelsContext(t *testing.T) {
	if p, g := SizesFor(128); p != "32" || g != "16" {
		t.Errorf("ctx 128: pp%s tg%s", p, g)
	}
	if p, g := SizesFor(0); p != "512" || g != "128" {
		t.Errorf("unknown ctx: pp%s tg%s", p, g)
	}
	vm := New(Deps{})
	vm.SetLibrary([]LibraryModel{{Label: "tiny", Path: "/m/tiny.pte", MaxCtx: 128}, {Label: "big", Path: "/m/big.pte", MaxCtx: 4096}})
	vm.ChooseModel("/m/tiny.pte")
	if f := vm.Form(); f.Prompts != "32" || f.Gens != "16" {
		t.Errorf("tiny: %+v", f)
	}
	vm.ChooseModel("/m/big.pte")
	if f := vm.Form(); f.Prompts != "1024" || f.Gens != "512" {
		t.Errorf("big: %+v", f)
	}
	f := vm.Form()
	f.Prompts = "7" // typed by the user: kept
	vm.SetForm(f)
	vm.ChooseModel("/m/tiny.pte")
	if f := vm.Form(); f.Prompts != "7" {
		t.Errorf("typed size replaced: %+v", f)
	}
}

// TestHistoryShowsAPIRuns: requests answered by etchat serve are history
// rows with their endpoint, cached tokens, decode rate and TTFT, filtered
// by model like the benchmarks, and the trend chart leaves them out.
func TestHistoryShowsAPIRuns(t *testing.T) {
	db := testDB(t)
	ctx := context.Background()
	if _, err := db.InsertRun(ctx, store.Run{Kind: store.RunAPI, Engine: "cpu", ModelName: "served-model",
		Config: []byte(`{"endpoint":"/v1/chat/completions","cached_tokens":17}`), DecodeTokS: 321.5, TTFTMs: 12.5}, nil); err != nil {
		t.Fatal(err)
	}
	vm := testVM(t, db)
	if err := vm.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	vm.SetFilter("served-model")
	rows, _ := vm.History()
	if len(rows) != 1 || rows[0].Test != "api chat/completions, 17 cached" || rows[0].AvgTS != 321.5 || rows[0].TTFTMs != 12.5 || rows[0].Engine != "cpu" {
		t.Fatalf("rows %+v", rows)
	}
	// A row without a benchmark result must not reach the chart (it would
	// dereference nil); with only that row there is nothing to draw.
	_, _ = vm.TrendChart(plot.Size{W: 200, H: 100}, "", color.White, color.Black)
}
