package mlx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/pte/ptetest"
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
