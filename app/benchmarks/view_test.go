package benchmarks

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/internal/fixtures"
)

// uiQueue stands in for the driver's UI goroutine: updates posted from
// the view-model's goroutines wait here until the test goroutine runs them.
type uiQueue struct {
	mu  sync.Mutex
	fns []func()
}

func (q *uiQueue) post(f func()) {
	q.mu.Lock()
	q.fns = append(q.fns, f)
	q.mu.Unlock()
}

// run runs the queued updates on the calling (test) goroutine.
func (q *uiQueue) run() {
	for {
		q.mu.Lock()
		fns := q.fns
		q.fns = nil
		q.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, f := range fns {
			f()
		}
	}
}

// eventually runs queued updates and polls cond until it holds.
func eventually(t *testing.T, q *uiQueue, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for q.run(); !cond(); q.run() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestViewRendersRunsAndCompares(t *testing.T) {
	test.NewTempApp(t)
	vm := testVM(t, testDB(t))
	w := test.NewWindow(nil)
	defer w.Close()
	q := &uiQueue{}
	v := newView(context.Background(), vm, w, q.post)
	w.SetContent(v.root)
	w.Resize(fyne.NewSize(1000, 760))

	// The run form, filled and started by tapping.
	test.Type(v.pte, fixtures.PTE(fixtures.Llama3))
	v.prompts.SetText("8")
	v.gens.SetText("4")
	v.reps.SetText("2")
	v.engine.SetSelected("cpu")
	if v.cancel.Disabled() == false {
		t.Error("cancel enabled with nothing running")
	}
	img := w.Canvas().Capture()
	colors := map[[4]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 4 {
		for x := 0; x < img.Bounds().Dx(); x += 4 {
			r, g, b, a := img.At(x, y).RGBA()
			colors[[4]uint32{r, g, b, a}] = true
		}
	}
	if len(colors) < 5 {
		t.Errorf("the view renders %d colors", len(colors))
	}

	for i := range 2 {
		test.Tap(v.start)
		eventually(t, q, "the run to start", func() bool { return vm.Run().Running || vm.Run().Fraction == 1 })
		vm.Wait()
		eventually(t, q, "the history", func() bool { return len(v.rows) == 2*(i+1) })
	}
	if !strings.Contains(v.status.Text, "Done: 2 tests, saved") || v.progress.Value != 1 || v.start.Disabled() || !v.cancel.Disabled() {
		t.Errorf("status %q progress %v", v.status.Text, v.progress.Value)
	}
	if v.empty.Visible() {
		t.Errorf("empty note shown: %q", v.empty.Text)
	}
	if len(v.filter.Options) != 2 || v.filter.Options[1] != "llama3-tiny-offgraph" {
		t.Errorf("filter options %v", v.filter.Options)
	}
	if v.trend.Image == nil {
		t.Error("no trend chart")
	}

	// Selecting rows of two different runs fills the comparison.
	other := 0
	for i, r := range v.rows {
		if r.Batch != v.rows[0].Batch {
			other = i
		}
	}
	v.table.Select(widgetCell(0))
	v.table.Select(widgetCell(other))
	if v.base.Text == "" || v.cand.Text == "" || strings.Contains(v.base.Text+v.cand.Text, "batch=") || v.base.Text == v.cand.Text {
		t.Fatalf("selectors %q %q", v.base.Text, v.cand.Text)
	}
	v.root.(*container.AppTabs).SelectIndex(3)
	test.Tap(v.compare)
	eventually(t, q, "the comparison", func() bool { return strings.Contains(v.cmpText.Text, "baseline :") })
	if v.cmpChart.Image == nil {
		t.Error("no comparison chart")
	}

	// A bad field shows in the status and nothing runs.
	v.reps.SetText("0")
	test.Tap(v.start)
	eventually(t, q, "the refusal", func() bool { return strings.Contains(v.status.Text, "Repetitions") })
	if vm.Run().Running {
		t.Error("a run started with 0 repetitions")
	}
	// … and in a dialog that says what to do.
	if top := w.Canvas().Overlays().Top(); top == nil || !strings.Contains(test.RenderObjectToMarkup(top), "correct the Repetitions field") {
		t.Error("no dialog for the refused run")
	}
}

func widgetCell(row int) widget.TableCellID { return widget.TableCellID{Row: row, Col: 0} }

func TestViewOffersTheLibrarysModels(t *testing.T) {
	test.NewTempApp(t)
	vm := testVM(t, nil)
	w := test.NewWindow(nil)
	defer w.Close()
	q := &uiQueue{}
	v := newView(context.Background(), vm, w, q.post)
	w.SetContent(v.root)
	dir := fixtures.Unpacked(t, fixtures.Llama3)
	pte := filepath.Join(dir, "model.pte")
	vm.SetLibrary([]LibraryModel{{Label: "llama3-tiny-offgraph", Path: pte, Tokenizer: filepath.Join(dir, "tokenizer.json")}})
	eventually(t, q, "the library in the select", func() bool { return len(v.model.Options) == 1 })
	if v.model.Selected != "" {
		t.Errorf("selected %q with an empty Model field", v.model.Selected)
	}

	v.model.SetSelected("llama3-tiny-offgraph")
	eventually(t, q, "the fields", func() bool { return v.pte.Text == pte })
	if v.tok.Text != filepath.Join(dir, "tokenizer.json") {
		t.Errorf("tokenizer %q", v.tok.Text)
	}
	// The choice is what Start uses.
	v.prompts.SetText("4")
	v.gens.SetText("2")
	v.reps.SetText("1")
	if f := v.formValue(); f.PTE != pte || f.Tokenizer != v.tok.Text {
		t.Errorf("form %+v", f)
	}

	// A path typed by hand that is not in the library clears the choice.
	v.choose(filepath.Join(t.TempDir(), "other.pte"))
	eventually(t, q, "the select to clear", func() bool { return v.model.Selected == "" })
	if v.tok.Text != "" {
		t.Errorf("tokenizer %q kept for a model without one", v.tok.Text)
	}
}
