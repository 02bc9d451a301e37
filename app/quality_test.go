package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"etchat/inference/modelinfo"
	"etchat/inference/quality"
	"etchat/internal/fixtures"
	"etchat/store"
)

// qualityModels are three library entries: llama3, its 4-bit twin (the
// same tokenizer; other random weights) and qwen3 (another tokenizer).
func qualityModels(t *testing.T) (llama, q4, qwen LibraryEntry, all []LibraryEntry) {
	for _, n := range []string{fixtures.Llama3, fixtures.Llama3Q4, fixtures.Qwen3} {
		p := modelCopy(t, n, true)
		all = append(all, LibraryEntry{Path: p, Info: inspect(t, p)})
	}
	return all[0], all[1], all[2], all
}

// TestQualityMeasuresAgainstABase: the view-model offers only models of
// the same tokenizer as bases, measures the base then the model over a
// chosen text, shows PPL and KLD, and stores both runs in the model's and
// the base's history.
func TestQualityMeasuresAgainstABase(t *testing.T) {
	db, _ := testDB(t)
	llama, q4, qwen, all := qualityModels(t)
	vm := NewQuality(quality.Run, dbQuality{db}, "cpu")
	ctx := context.Background()
	sha, err := modelinfo.HashFile(llama.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.InsertRun(ctx, store.Run{Kind: store.RunBench, Engine: "cpu", ModelSHA256: sha,
		Bench: store.BenchTest{NGen: 16, AvgTokS: 42, StddevTokS: 1.5}}, nil); err != nil {
		t.Fatal(err)
	}
	vm.SetModel(ctx, llama, all)
	s := vm.State()
	if len(s.Candidates) != 1 || s.Candidates[0].Path != q4.Path || s.Bench != "tg16 42.0 ± 1.5 t/s (cpu)" {
		t.Fatalf("candidates %v, benchmarks %q", s.Candidates, s.Bench)
	}
	if err := vm.SetBase(qwen.Path); err == nil {
		t.Error("qwen3 (another tokenizer) accepted as a base")
	}
	if err := vm.SetBase(q4.Path); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(text, []byte(quality.DefaultText[:2500]), 0o644); err != nil {
		t.Fatal(err)
	}
	vm.SetText(text)
	var stages = map[string]bool{}
	vm.OnChange = func() { stages[vm.State().Stage] = true }
	if err := vm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	vm.Wait()
	s = vm.State()
	if s.Err != nil || s.Result == nil || s.Result.KLD == nil || s.Running {
		t.Fatalf("state %+v", s)
	}
	k := s.Result.KLD
	t.Logf("%s", s.Result)
	if k.Mean <= 0 || k.Base.Model != "llama3-tiny-q4" || s.Result.Text != text || !stages["base"] || !stages["model"] {
		t.Errorf("result %+v, KLD %+v, stages %v", s.Result, *k, stages)
	}
	if len(s.History) != 1 || s.History[0].Quality.BaseSHA256 == "" || !strings.HasPrefix(s.Status, "Done: PPL") {
		t.Errorf("history %+v, status %q", s.History, s.Status)
	}
	vm.SetModel(ctx, q4, all) // the base's own run is in its history
	if h := vm.State().History; len(h) != 1 || h[0].Quality.BaseSHA256 != "" || h[0].Quality.PPL <= 1 {
		t.Errorf("base history %+v", h)
	}
}

// TestQualityStopAndView: the window shows the model, its bases and, after
// Stop during the first window, "Stopped." with the partial figures, and
// nothing stored.
func TestQualityStopAndView(t *testing.T) {
	db, _ := testDB(t)
	llama, q4, _, all := qualityModels(t)
	a := test.NewTempApp(t)
	u := &UI{App: a, ctx: context.Background(), do: func(f func()) { f() }}
	vm := NewQuality(quality.Run, dbQuality{db}, "cpu")
	v := newQualityView(u, vm, a.NewWindow("quality"))
	vm.SetModel(context.Background(), llama, all)
	if v.model.Text != llama.Label() || len(v.base.Options) != 2 || v.base.Options[1] != q4.Label() || v.history.Text != "none yet" {
		t.Fatalf("view: model %q, bases %v, history %q", v.model.Text, v.base.Options, v.history.Text)
	}
	vm.OnChange = func() {
		u.do(v.refresh)
		if vm.State().Progress.Window == 1 {
			vm.Stop()
		}
	}
	if err := vm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	vm.Wait()
	s := vm.State()
	if s.Status != "Stopped." || s.Result == nil || !s.Result.Stopped || s.Result.Scored == 0 || len(s.History) != 0 {
		t.Errorf("after Stop: %+v", s)
	}
	if !strings.Contains(v.result.Text, "stopped: the figures cover") || v.start.Disabled() {
		t.Errorf("view after Stop: result %q, start disabled %v", v.result.Text, v.start.Disabled())
	}
}
