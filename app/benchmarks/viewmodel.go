// Package benchmarks is the desktop app's Benchmarks view: a form that
// starts an etchat bench run (with progress and cancel), the stored
// history (sortable, filtered by model), a t/s-over-time chart, and a
// comparison of two runs with a bar chart.
//
// ViewModel holds the state and does the work (packages inference/bench,
// internal/benchstore, the store) without a window, so tests drive it
// headless; NewView builds the Fyne widgets over it. Long work runs on its
// own goroutine and the view redraws through fyne.Do when OnChange fires.
package benchmarks

import (
	"context"
	"errors"
	"etchat/store"
	"fmt"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"etchat/app/advice"
	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/bench/plot"
	"etchat/inference/engine"

	gonumplot "gonum.org/v1/plot"
)

// Form is the run form's fields, as typed (the flags of etchat bench).
type Form struct {
	PTE, Tokenizer string
	Prompts        string // "512,1024"
	Gens           string // "128"
	Depths         string // "0"
	Reps           string // "5"
	NoWarmup       bool
	KVDTypes       string // "bf16,fp16"
	KVCapacities   string // "0"
	KVWindows      string // "SPEC;SPEC"
	Engine         string // auto | cpu | metal
}

// DefaultForm is llama-bench's defaults.
func DefaultForm() Form {
	return Form{Prompts: "512", Gens: "128", Depths: "0", Reps: "5", KVDTypes: "bf16", KVCapacities: "0", Engine: "auto"}
}

// FieldError is a form field that does not parse.
type FieldError struct {
	Field string // the form label, e.g. "Prompt sizes"
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Options turns the form into bench options (without engine and clock).
func (f Form) Options() (bench.Options, error) {
	var o bench.Options
	if strings.TrimSpace(f.PTE) == "" {
		return o, &FieldError{"Model", errors.New("choose a .pte file")}
	}
	o.PTE, o.Tokenizer, o.NoWarmup = strings.TrimSpace(f.PTE), strings.TrimSpace(f.Tokenizer), f.NoWarmup
	var err error
	for _, l := range []struct {
		name string
		in   string
		out  *[]int
	}{{"Prompt sizes", f.Prompts, &o.Prompts}, {"Generation sizes", f.Gens, &o.Gens}, {"Depths", f.Depths, &o.Depths}} {
		if *l.out, err = bench.ParseSizes(l.in); err != nil {
			return o, &FieldError{l.name, err}
		}
	}
	if o.Reps, err = strconv.Atoi(strings.TrimSpace(f.Reps)); err != nil || o.Reps < 1 {
		return o, &FieldError{"Repetitions", fmt.Errorf("%q: want a whole number, at least 1", f.Reps)}
	}
	if o.Caches, err = bench.ParseCacheSpecs(f.KVDTypes, f.KVCapacities, f.KVWindows); err != nil {
		var le *bench.CacheListError
		if errors.As(err, &le) {
			name := map[string]string{"dtype": "KV storage dtypes", "capacity": "KV capacities", "windows": "KV windows"}[le.List]
			return o, &FieldError{name, le.Err}
		}
		return o, err
	}
	if _, err := engine.Canonical(f.Engine); err != nil {
		return o, &FieldError{"Engine", err}
	}
	return o, nil
}

// Explain is err, from starting a run, with what to do next: a field of
// the form by name, else the app's advice for the error's type.
func Explain(err error) string {
	msg := err.Error()
	var fe *FieldError
	if errors.As(err, &fe) {
		return msg + " — correct the " + fe.Field + " field and press Start again"
	}
	if next := advice.For(err, "the form"); next != "" {
		return msg + " — " + next
	}
	return msg + " — check the form's fields and press Start again"
}

// Runs is what the view-model needs of the stored run history
// (internal/benchstore serves it from the database).
type Runs interface {
	// Save stores results as bench runs and sets their RunID.
	Save(ctx context.Context, results []*bench.Result) error
	// List returns up to limit stored bench results, newest first.
	List(ctx context.Context, limit int) ([]*bench.Result, error)
	// Select returns the stored results a selector picks; an error when
	// none match.
	Select(ctx context.Context, sel bench.Selector) ([]*bench.Result, error)
	// APIRuns returns up to limit stored runs of etchat serve, newest first.
	APIRuns(ctx context.Context, limit int) ([]store.Run, error)
}

// Deps are what the view-model works with. Zero fields have defaults.
type Deps struct {
	// Runs stores and lists runs; nil: runs are not saved and there is no
	// history (the view says why).
	Runs Runs
	// OpenEngine picks an engine by kind; nil = inference.OpenEngine.
	OpenEngine func(kind string) (engine.Engine, error)
	// Machine describes this computer; nil = bench.DetectMachine.
	Machine *bench.Machine
	// AppVersion is stored with the runs.
	AppVersion string
}

// Row is one history row: one test of one stored run.
type Row struct {
	RunID   int64
	Started time.Time
	Model   string
	Engine  string
	Test    string
	Cache   string
	AvgTS   float64
	SDTS    float64
	TTFTMs  float64
	Reps    int
	Batch   string
	result  *bench.Result
}

// Columns are the history table's columns; SortBy takes an index.
var Columns = []string{"run", "started", "model", "engine", "test", "cache", "t/s", "± sd", "TTFT ms", "reps"}

// Cells is a row as text, one per column.
func (r Row) Cells() []string {
	return []string{
		strconv.FormatInt(r.RunID, 10), r.Started.Local().Format("2006-01-02 15:04:05"), r.Model, r.Engine, r.Test, r.Cache,
		fmt.Sprintf("%.2f", r.AvgTS), fmt.Sprintf("%.2f", r.SDTS), fmt.Sprintf("%.2f", r.TTFTMs), strconv.Itoa(r.Reps),
	}
}

// ViewModel is the Benchmarks view's state. Its methods are safe to call
// from any goroutine; OnChange (if set) is called after every change, from
// the goroutine that made it.
type ViewModel struct {
	deps Deps

	mu      sync.Mutex
	form    Form
	formVer int    // counts form changes the view did not type itself
	autoTok string // the tokenizer ChooseModel filled in, "" if none
	// autoSizes are the prompt and generation sizes last filled in for
	// the model's context (the defaults at first).
	autoSizes [2]string
	library   []LibraryModel // the app's models the form offers
	running   bool
	cancel    context.CancelFunc
	done      chan struct{}
	progress  bench.Progress
	status    string
	last      []*bench.Result
	runErr    error

	all      []Row
	variants []Variant // perplexity against decode speed (quality.go)
	histErr  error
	filter   string
	sortCol  int
	desc     bool

	// histVer and cmpVer count changes to what the charts draw, so a view
	// redraws a chart only when its data changed.
	histVer, cmpVer int

	cmpText  string
	cmpErr   error
	cmpBase  []*bench.Result
	cmpCand  []*bench.Result
	cmpFlags int

	// chartFG and chartBG are the theme's text and background colours the
	// comparison chart is drawn in (nil: gonum's defaults).
	chartFG, chartBG color.Color

	OnChange func()
}

// ChartColors are the colours the charts are drawn in.
func (vm *ViewModel) ChartColors() (fg, bg color.Color) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.chartFG, vm.chartBG
}

// SetChartColors sets the charts' text and background colours (the
// window's theme).
func (vm *ViewModel) SetChartColors(fg, bg color.Color) {
	vm.mu.Lock()
	vm.chartFG, vm.chartBG = fg, bg
	vm.histVer++
	vm.cmpVer++
	vm.mu.Unlock()
}

// New makes a view-model.
func New(d Deps) *ViewModel {
	if d.OpenEngine == nil {
		d.OpenEngine = func(kind string) (engine.Engine, error) {
			sel, err := inference.OpenEngine(kind)
			return sel.Engine, err
		}
	}
	f := DefaultForm()
	return &ViewModel{deps: d, form: f, autoSizes: [2]string{f.Prompts, f.Gens}, sortCol: 1, desc: true, status: "Ready."}
}

func (vm *ViewModel) changed() {
	if f := vm.OnChange; f != nil {
		f()
	}
}

// Form returns the form's fields.
func (vm *ViewModel) Form() Form {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.form
}

// LibraryModel is a model of the app's library that the run form offers.
type LibraryModel struct {
	Label     string // the library's name for it
	Path      string // the .pte
	Tokenizer string // the tokenizer.json next to it; "" when missing
	MaxCtx    int    // the model's context (0: unknown)
}

// SizesFor are the run form's test sizes for a model of context ctx:
// prompt a quarter of it, generation an eighth (llama-bench's pp512/tg128
// fit none of the tiny models of context 128).
func SizesFor(ctx int) (prompts, gens string) {
	if ctx <= 0 {
		d := DefaultForm()
		return d.Prompts, d.Gens
	}
	return strconv.Itoa(max(1, ctx/4)), strconv.Itoa(max(1, ctx/8))
}

// SetLibrary sets the models the run form offers (the app's library).
func (vm *ViewModel) SetLibrary(models []LibraryModel) {
	vm.mu.Lock()
	same := slices.Equal(vm.library, models)
	vm.library = append([]LibraryModel(nil), models...)
	vm.mu.Unlock()
	if !same {
		vm.changed()
	}
}

// Library returns the models the run form offers.
func (vm *ViewModel) Library() []LibraryModel {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return append([]LibraryModel(nil), vm.library...)
}

// ChooseModel puts path in the form's Model field and defaults the
// tokenizer to the one next to it (the library's, else DIR/tokenizer.json
// when it exists). A tokenizer the user typed stays; one that an earlier
// choice filled in is replaced.
func (vm *ViewModel) ChooseModel(path string) {
	tok, ctx := "", 0
	for _, m := range vm.Library() {
		if m.Path == path {
			tok, ctx = m.Tokenizer, m.MaxCtx
		}
	}
	if tok == "" && path != "" {
		if cand := filepath.Join(filepath.Dir(path), "tokenizer.json"); fileExists(cand) {
			tok = cand
		}
	}
	vm.mu.Lock()
	vm.form.PTE = path
	if t := strings.TrimSpace(vm.form.Tokenizer); t == "" || t == vm.autoTok {
		vm.form.Tokenizer, vm.autoTok = tok, tok
	}
	// Sizes the user has not typed follow the model's context.
	if p, g := vm.form.Prompts, vm.form.Gens; ctx > 0 && (p == vm.autoSizes[0] && g == vm.autoSizes[1]) {
		vm.form.Prompts, vm.form.Gens = SizesFor(ctx)
		vm.autoSizes = [2]string{vm.form.Prompts, vm.form.Gens}
	}
	vm.formVer++
	vm.mu.Unlock()
	vm.changed()
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// FormVersion counts the form changes made by ChooseModel, so a view
// copies the fields back only when they changed under it.
func (vm *ViewModel) FormVersion() int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.formVer
}

// SetForm replaces the form's fields.
func (vm *ViewModel) SetForm(f Form) {
	vm.mu.Lock()
	vm.form = f
	vm.mu.Unlock()
}

// Start checks the form and every test's fit, then runs the benchmark on
// its own goroutine. It returns at once; a bad field is a *FieldError and
// a test that does not fit wraps bench.ErrDoesNotFit, and nothing runs.
func (vm *ViewModel) Start(ctx context.Context) error {
	vm.mu.Lock()
	if vm.running {
		vm.mu.Unlock()
		return errors.New("a benchmark is already running")
	}
	f := vm.form
	vm.mu.Unlock()
	o, err := f.Options()
	if err == nil {
		check := o
		check.Engine = placeholder{}
		_, err = bench.Prepare(check)
	}
	if err != nil {
		vm.mu.Lock()
		vm.status, vm.runErr = "Not started: "+Explain(err), err
		vm.mu.Unlock()
		vm.changed()
		return err
	}
	eng, err := vm.deps.OpenEngine(f.Engine)
	if err != nil {
		vm.mu.Lock()
		vm.status, vm.runErr = "Not started: "+Explain(err), err
		vm.mu.Unlock()
		vm.changed()
		return err
	}
	o.Engine, o.Machine, o.AppVersion = eng, vm.deps.Machine, vm.deps.AppVersion
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	vm.mu.Lock()
	vm.running, vm.cancel, vm.done, vm.runErr, vm.last = true, cancel, done, nil, nil
	vm.progress = bench.Progress{}
	vm.status = "Starting " + eng.Name() + "…"
	vm.mu.Unlock()
	vm.changed()

	var saveErr error
	o.Progress = func(p bench.Progress) {
		vm.mu.Lock()
		vm.progress, vm.status = p, p.String()
		vm.mu.Unlock()
		vm.changed()
	}
	o.Result = func(r *bench.Result) {
		if vm.deps.Runs != nil && saveErr == nil {
			saveErr = vm.deps.Runs.Save(rctx, []*bench.Result{r})
		}
	}
	go func() {
		defer close(done)
		defer cancel()
		results, err := bench.Run(rctx, o)
		if err == nil {
			err = saveErr
		}
		vm.mu.Lock()
		vm.running, vm.last, vm.runErr = false, results, err
		switch {
		case errors.Is(err, context.Canceled):
			vm.status = fmt.Sprintf("Canceled after %d of %d tests.", len(results), vm.progress.Tests)
		case err != nil:
			vm.status = "Failed: " + err.Error()
		case vm.deps.Runs == nil:
			vm.status = fmt.Sprintf("Done: %d tests (not saved: no database).", len(results))
		default:
			vm.status = fmt.Sprintf("Done: %d tests, saved.", len(results))
		}
		vm.mu.Unlock()
		vm.changed()
		if vm.deps.Runs != nil && len(results) > 0 {
			_ = vm.Refresh(ctx) // the error shows in the history
		}
	}()
	return nil
}

// placeholder lets Prepare check a form before an engine is opened.
type placeholder struct{ engine.Engine }

// Cancel stops a running benchmark; the finished tests are kept.
func (vm *ViewModel) Cancel() {
	vm.mu.Lock()
	c := vm.cancel
	vm.mu.Unlock()
	if c != nil {
		c()
	}
}

// Wait blocks until the current run (if any) has ended.
func (vm *ViewModel) Wait() {
	vm.mu.Lock()
	d := vm.done
	vm.mu.Unlock()
	if d != nil {
		<-d
	}
}

// RunState is what the run panel shows.
type RunState struct {
	Running  bool
	Fraction float64 // 0..1 over tests and repetitions
	Status   string
	Err      error
	Results  []*bench.Result // the last run's finished tests
}

// Run returns the run panel's state.
func (vm *ViewModel) Run() RunState {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	s := RunState{Running: vm.running, Status: vm.status, Err: vm.runErr, Results: vm.last}
	if p := vm.progress; p.Tests > 0 && p.Reps > 0 {
		done := float64(p.Test-1) + float64(max(p.Rep-1, 0))/float64(p.Reps)
		if p.Done {
			done = float64(p.Test)
		}
		s.Fraction = done / float64(p.Tests)
	}
	if !vm.running && vm.runErr == nil && len(vm.last) > 0 {
		s.Fraction = 1
	}
	return s
}

// ResultColumns name ResultRows' columns.
var ResultColumns = []string{"test", "cache", "t/s", "± sd", "TTFT ms", "reps"}

// ResultRows are the last run's finished tests, for the table the run
// panel shows after Run.
func (vm *ViewModel) ResultRows() [][]string {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	var out [][]string
	for _, r := range vm.last {
		out = append(out, []string{r.Test.Name(), r.Test.Cache.String(), fmt.Sprintf("%.2f", r.AvgTS()),
			fmt.Sprintf("%.2f", r.StddevTS()), fmt.Sprintf("%.2f", r.AvgTTFTMs()), strconv.Itoa(len(r.Reps))})
	}
	return out
}

// Refresh reloads the stored bench runs.
func (vm *ViewModel) Refresh(ctx context.Context) error {
	var rows []Row
	var rs []*bench.Result
	var err error
	if vm.deps.Runs == nil {
		err = errors.New("the run history is not available: the database is not open")
	} else {
		if rs, err = vm.deps.Runs.List(ctx, 2000); err == nil {
			for _, r := range rs {
				rows = append(rows, Row{RunID: r.RunID, Started: r.TestTime, Model: r.Model.Name, Engine: r.Engine,
					Test: r.Test.Name(), Cache: r.Test.Cache.String(), AvgTS: r.AvgTS(), SDTS: r.StddevTS(),
					TTFTMs: r.AvgTTFTMs(), Reps: len(r.Reps), Batch: r.Batch, result: r})
			}
		}
		if err == nil {
			var api []Row
			if api, err = apiRows(ctx, vm.deps.Runs); err == nil {
				rows = append(rows, api...)
			}
		}
		if err == nil {
			err = vm.refreshVariants(ctx, rs)
		}
		if err != nil {
			err = fmt.Errorf("could not read the run history: %w", err)
		}
	}
	vm.mu.Lock()
	vm.all, vm.histErr = rows, err
	vm.histVer++
	vm.mu.Unlock()
	vm.changed()
	return err
}

// SetFilter shows only the runs of one model ("" = all).
func (vm *ViewModel) SetFilter(model string) {
	vm.mu.Lock()
	vm.filter = model
	vm.histVer++
	vm.mu.Unlock()
	vm.changed()
}

// Filter is the model the history shows ("" = all).
func (vm *ViewModel) Filter() string {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.filter
}

// SortBy orders the history by a column of Columns; desc reverses.
func (vm *ViewModel) SortBy(col int, desc bool) {
	if col < 0 || col >= len(Columns) {
		return
	}
	vm.mu.Lock()
	vm.sortCol, vm.desc = col, desc
	vm.mu.Unlock()
	vm.changed()
}

// Sort returns the current sort column and direction.
func (vm *ViewModel) Sort() (col int, desc bool) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.sortCol, vm.desc
}

// Models lists the model names in the history, sorted.
func (vm *ViewModel) Models() []string {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, r := range vm.all {
		if !seen[r.Model] {
			seen[r.Model] = true
			out = append(out, r.Model)
		}
	}
	sort.Strings(out)
	return out
}

// History returns the filtered, sorted rows and, when there are none, why.
func (vm *ViewModel) History() (rows []Row, empty string) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	for _, r := range vm.all {
		if vm.filter == "" || r.Model == vm.filter {
			rows = append(rows, r)
		}
	}
	col, desc := vm.sortCol, vm.desc
	sort.SliceStable(rows, func(i, j int) bool {
		c := compareRows(rows[i], rows[j], col)
		if desc {
			return c > 0
		}
		return c < 0
	})
	switch {
	case vm.histErr != nil:
		empty = vm.histErr.Error()
	case len(vm.all) == 0:
		empty = "No benchmark runs stored yet: start one above, or run etchat bench."
	case len(rows) == 0:
		empty = "No runs of " + vm.filter + "."
	}
	return rows, empty
}

func compareRows(a, b Row, col int) int {
	cmpF := func(x, y float64) int {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	switch col {
	case 0:
		return cmpF(float64(a.RunID), float64(b.RunID))
	case 1:
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return cmpF(float64(a.RunID), float64(b.RunID))
	case 2:
		return strings.Compare(a.Model, b.Model)
	case 3:
		return strings.Compare(a.Engine, b.Engine)
	case 4:
		return strings.Compare(a.Test, b.Test)
	case 5:
		return strings.Compare(a.Cache, b.Cache)
	case 6:
		return cmpF(a.AvgTS, b.AvgTS)
	case 7:
		return cmpF(a.SDTS, b.SDTS)
	case 8:
		return cmpF(a.TTFTMs, b.TTFTMs)
	case 9:
		return cmpF(float64(a.Reps), float64(b.Reps))
	}
	return 0
}

// allRows is the whole history, unfiltered.
func (vm *ViewModel) allRows() []Row {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return append([]Row(nil), vm.all...)
}

// ChartVersions change whenever the data behind TrendChart (history,
// filter) or CompareChart (the last comparison) changes.
func (vm *ViewModel) ChartVersions() (trend, compare int) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.histVer, vm.cmpVer
}

// TrendChart draws t/s over time for the filtered history's tests of one
// kind ("pp": prompt processing, "tg": generation; "" both), in colours
// (fg on bg) that follow the window's theme: pp and tg rates differ by an
// order of magnitude, so each has its own chart.
func (vm *ViewModel) TrendChart(sz plot.Size, kind string, fg, bg color.Color) (image.Image, error) {
	rows, _ := vm.History()
	var rs []*bench.Result
	for _, r := range rows {
		if r.result == nil {
			continue // a server request, not a benchmark
		}
		isPP := r.result.Test.NGen == 0
		if kind == "" || (kind == "pp") == isPP {
			rs = append(rs, r.result)
		}
	}
	p, err := plot.Trend(rs)
	if err != nil {
		return nil, err
	}
	if kind != "" {
		p.Title.Text = map[string]string{"pp": "prompt processing (pp), t/s", "tg": "generation (tg), t/s"}[kind]
	}
	return themed(p, sz, fg, bg), nil
}

// themed renders p in the given colours.
func themed(p *gonumplot.Plot, sz plot.Size, fg, bg color.Color) image.Image {
	if fg != nil && bg != nil {
		p.BackgroundColor = bg
		p.Title.TextStyle.Color = fg
		p.Legend.TextStyle.Color = fg
		for _, a := range []*gonumplot.Axis{&p.X, &p.Y} {
			a.Color, a.Label.TextStyle.Color, a.Tick.Color, a.Tick.Label.Color = fg, fg, fg, fg
		}
	}
	return plot.Image(p, sz)
}

// Compare compares two selections of stored runs (run ids or filters,
// as etchat compare takes them) and keeps the result for CompareResult
// and CompareChart.
func (vm *ViewModel) Compare(ctx context.Context, baseline, candidate string) error {
	err := vm.compare(ctx, baseline, candidate)
	if err != nil {
		vm.mu.Lock()
		vm.cmpErr, vm.cmpText, vm.cmpBase, vm.cmpCand, vm.cmpFlags = err, "", nil, nil, 0
		vm.cmpVer++
		vm.mu.Unlock()
	}
	vm.changed()
	return err
}

func (vm *ViewModel) compare(ctx context.Context, baseline, candidate string) error {
	if vm.deps.Runs == nil {
		return errors.New("no database: nothing to compare")
	}
	var sides [2][]*bench.Result
	for i, s := range []string{baseline, candidate} {
		name := []string{"Baseline", "Candidate"}[i]
		sel, err := bench.ParseSelector(s)
		if err != nil {
			return &FieldError{name, err}
		}
		if sides[i], err = vm.deps.Runs.Select(ctx, sel); err != nil {
			return &FieldError{name, err}
		}
	}
	changes := bench.Compare(sides[0], sides[1], bench.CompareOptions{})
	var b strings.Builder
	b.WriteString(bench.MatchTable(sides[0], sides[1]))
	b.WriteString("\nSame test and cache, with significance:\n")
	n, err := bench.WriteComparison(&b, sides[0], sides[1], changes)
	if err != nil {
		return err
	}
	vm.mu.Lock()
	vm.cmpErr, vm.cmpText, vm.cmpBase, vm.cmpCand, vm.cmpFlags = nil, b.String(), sides[0], sides[1], n
	vm.cmpVer++
	vm.mu.Unlock()
	return nil
}

// CompareResult is the last comparison's table text, flagged count and error.
func (vm *ViewModel) CompareResult() (text string, flagged int, err error) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.cmpText, vm.cmpFlags, vm.cmpErr
}

// CompareChart draws the last comparison's baseline and candidate bars.
func (vm *ViewModel) CompareChart(sz plot.Size) (image.Image, error) {
	vm.mu.Lock()
	base, cand := vm.cmpBase, vm.cmpCand
	vm.mu.Unlock()
	p, err := plot.Bars(cand, base)
	if err != nil {
		return nil, err
	}
	return themed(p, sz, vm.chartFG, vm.chartBG), nil
}
