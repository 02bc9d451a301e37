package benchmarks

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"etchat/inference/bench/plot"
	"etchat/internal/fixtures"
	"gonum.org/v1/plot/vg"
)

// eventually polls cond (running queued fyne.Do work) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
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
	v := newView(context.Background(), vm, w)
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
		eventually(t, "the run to start", func() bool { return vm.Run().Running || vm.Run().Fraction == 1 })
		vm.Wait()
		eventually(t, "the history", func() bool {
			var n int
			v.locked(func() { n = len(v.rows) })
			return n == 2*(i+1)
		})
	}
	v.locked(func() {
		if !strings.Contains(v.status.Text, "Done: 2 tests, saved") || v.progress.Value != 1 || v.start.Disabled() {
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
	})

	// Selecting two rows of different runs fills the comparison.
	var a, b int
	v.locked(func() {
		for i, r := range v.rows {
			if r.Batch != v.rows[0].Batch {
				b = i
			}
		}
		v.table.Select(widgetCell(a))
		v.table.Select(widgetCell(b))
	})
	if !strings.HasPrefix(v.base.Text, "batch=") || !strings.HasPrefix(v.cand.Text, "batch=") || v.base.Text == v.cand.Text {
		t.Fatalf("selectors %q %q", v.base.Text, v.cand.Text)
	}
	tabs := v.root.(*container.AppTabs)
	tabs.SelectIndex(3)
	test.Tap(v.compare)
	eventually(t, "the comparison", func() bool {
		var s string
		v.locked(func() { s = v.cmpText.Text })
		return strings.Contains(s, "baseline :")
	})
	v.locked(func() {
		if v.cmpChart.Image == nil {
			_, err := vm.CompareChart(plot.Size{W: 7 * vg.Inch, H: 3.5 * vg.Inch})
			t.Errorf("no comparison chart: %v", err)
		}
	})

	// A bad field shows in the status and nothing runs.
	v.reps.SetText("0")
	test.Tap(v.start)
	eventually(t, "the refusal", func() bool {
		var s string
		v.locked(func() { s = v.status.Text })
		return strings.Contains(s, "Repetitions")
	})
}

func widgetCell(row int) widget.TableCellID { return widget.TableCellID{Row: row, Col: 0} }

// locked runs f while no redraw runs.
func (v *View) locked(f func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f()
}
