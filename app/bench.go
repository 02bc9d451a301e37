package app

import (
	"context"
	"fmt"
	"strconv"
	"sync"
)

// Benchmarks is the plain Benchmarks tab's view-model: the stored run
// history. The window replaces the tab with app/benchmarks (run form,
// history, chart) when the database is open; this one remains for tests and
// as the fallback.
type Benchmarks struct {
	store RunStore

	mu   sync.Mutex
	rows []RunRow
	err  string

	OnChange func()
}

// BenchIntro is the text at the top of the tab.
const BenchIntro = "Stored runs: every chat reply and benchmark recorded in the database, newest first. " +
	"Run benchmarks with etchat bench on the command line, then press Refresh."

// NewBenchmarks makes the view-model; store may be nil.
func NewBenchmarks(store RunStore) *Benchmarks { return &Benchmarks{store: store} }

// Refresh reads the latest runs.
func (b *Benchmarks) Refresh(ctx context.Context) error {
	var rows []RunRow
	var err error
	if b.store == nil {
		err = fmt.Errorf("the run history is not available: the database is not open")
	} else {
		rows, err = b.store.ListRuns(ctx, 500)
		if err != nil {
			err = fmt.Errorf("could not read the run history: %w", err)
		}
	}
	b.mu.Lock()
	b.rows = rows
	b.err = ""
	if err != nil {
		b.err = err.Error()
	}
	b.mu.Unlock()
	if f := b.OnChange; f != nil {
		f()
	}
	return err
}

// RunHeader names the table's columns.
var RunHeader = []string{"started", "kind", "model", "engine", "prompt", "generated", "prefill tok/s", "decode tok/s", "TTFT ms", "error"}

// Table is the rows as text, and the reason it is empty.
func (b *Benchmarks) Table() (rows [][]string, empty string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.rows {
		rows = append(rows, []string{
			r.Started.Local().Format("2006-01-02 15:04:05"), r.Kind, r.Model, r.Engine,
			strconv.Itoa(r.PromptTokens), strconv.Itoa(r.GenTokens),
			fmt.Sprintf("%.1f", r.PrefillTokS), fmt.Sprintf("%.1f", r.DecodeTokS),
			strconv.FormatInt(r.TTFT.Milliseconds(), 10), r.Error,
		})
	}
	switch {
	case b.err != "":
		empty = b.err
	case len(rows) == 0:
		empty = "No runs stored yet."
	}
	return rows, empty
}
