package mlx

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/pte/ptetest"
	"etchat/internal/fixtures"
)

// A program that selects its logits rows through a third forward input
// (get_logits_to_keep_mode 2) is refused at open, before the library loads
// it: the runner library feeds two inputs. The file's metadata is read
// through modelinfo's table (a synthetic program; no export has the mode).
func TestOpenRefusesSelectedRows(t *testing.T) {
	prog := ptetest.FullProgram(ptetest.SmallGraph())
	prog.Methods = append(prog.Methods, ptetest.Constant("get_logits_to_keep_mode", ptetest.IntValue(2)))
	path := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(path, ptetest.Build(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, fakeLib(t))
	_, err := e.Open(context.Background(), path, testConfig())
	if !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), "get_logits_to_keep_mode 2") ||
		!strings.Contains(err.Error(), "the CPU engine does") {
		t.Errorf("mode 2 on the native engine: %v", err)
	}
	// Metadata that contradicts itself is refused the same way.
	prog.Methods = append(prog.Methods[:len(prog.Methods)-1], ptetest.Constant("get_max_ctx_len", ptetest.IntValue(64)),
		ptetest.Constant("get_max_context_len", ptetest.IntValue(32)))
	if err := os.WriteFile(path, ptetest.Build(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Open(context.Background(), path, testConfig()); err == nil || !strings.Contains(err.Error(), "get_max_ctx_len = 64 and get_max_context_len = 32 disagree") {
		t.Errorf("conflicting capacities: %v", err)
	}
}

// The runner library reads the capacity by modelinfo's table: the meta2
// twin with its get_max_seq_len renamed get_max_ctx_len publishes two
// capacities that disagree (32 and get_max_context_len's 128), which the
// library refuses when it opens the program, naming both; the twin itself
// opens.
func TestLibraryCapacityNames(t *testing.T) {
	e := realEngine(t)
	b, err := os.ReadFile(fixtures.PTE(fixtures.Llama3Q4Meta2))
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.lib.openProgram(fixtures.PTE(fixtures.Llama3Q4Meta2))
	if err != nil {
		t.Fatalf("the twin: %v", err)
	}
	e.lib.closeProgram(p)
	i := bytes.Index(b[:16<<10], []byte("get_max_seq_len\x00"))
	if i < 0 {
		t.Fatal("get_max_seq_len not in the program")
	}
	copy(b[i:], "get_max_ctx_len")
	path := filepath.Join(t.TempDir(), "model.pte")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = e.lib.openProgram(path)
	if err == nil {
		e.lib.closeProgram(p)
	}
	if err == nil || !strings.Contains(err.Error(), "get_max_ctx_len = 32 and get_max_context_len = 128 disagree") {
		t.Errorf("conflicting capacities in the library: %v", err)
	}
}
