package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/store"
)

// Hints are chosen by type, through any wrapping; the message text plays
// no part (the errors below carry misleading text on purpose).
func TestHint(t *testing.T) {
	misleading := errors.New("chat template dtype tokenizer library metal")
	wrap := func(err error) error { return fmt.Errorf("loading: %w", err) }
	for _, c := range []struct {
		err  error
		want string
	}{
		{&engine.NotAvailableError{Name: "mlx", Err: &engine.LibraryError{Problem: engine.LibraryMissing, Err: misleading}}, "scripts/build-native and set ETCHAT_RUNNER"},
		{wrap(&engine.LibraryError{Problem: engine.LibraryABIMismatch, Err: misleading}), "built from another etchat"},
		{wrap(&engine.LibraryError{Problem: engine.LibraryUnloadable, Err: misleading}), "does not load on this machine"},
		{&engine.NotAvailableError{Name: "mlx"}, "use --engine cpu"},
		{wrap(&inference.CacheConfigError{Err: misleading}), "--kv-* flags"},
		{wrap(&inference.CacheConfigError{Field: inference.CacheFieldWindows, Err: misleading}), "check --kv-windows against"},
		{wrap(&inference.CacheConfigError{Field: inference.CacheFieldCapacity, Err: errors.Join(&kvcache.FieldError{Field: kvcache.FieldCapacity, Msg: "too big"},
			&kvcache.FieldError{Field: kvcache.FieldWindows, Msg: "x"})}), "check --kv-max-capacity, --kv-windows against"},
		{wrap(&inference.TokenizerError{Path: "x", Err: os.ErrNotExist}), "next to the .pte"},
		{wrap(&inference.TokenizerError{Path: "x", Given: true, Err: misleading}), "check the --tokenizer path"},
		{wrap(&inference.VocabMismatchError{}), "exported with this model"},
		{wrap(&inference.UnsupportedModelError{}), "export_llm_hf.py"},
		{wrap(&inference.UnsupportedModelError{Newer: true}), "re-export the model with an ExecuTorch of that schema, or update etchat"},
		{wrap(&modelinfo.MetadataError{Msg: "export_llm_hf.py"}), "metadata contradicts itself or forward"},
		{fmt.Errorf("%w: 129 tokens", inference.ErrPromptTooLong), "--kv-max-capacity"},
		{wrap(engine.ErrCacheFull), "--kv-max-capacity"},
		{fmt.Errorf("save: %w", store.ErrBusy), "wait for it"},
		{storeError(fmt.Errorf("open: %w", store.ErrBusy)), "wait for it"},
		{fmt.Errorf("open: %w", store.ErrCorrupt), "move the damaged database aside"},
		{wrap(&engine.MemoryFitError{Fit: engine.Fit{Weights: 1 << 30, Cache: 4 << 30, WorkingSet: 3 << 30}}), "lower --kv-max-capacity"},
		{wrap(&engine.MemoryFitError{Fit: engine.Fit{Weights: 4 << 30, Cache: 1 << 20, WorkingSet: 3 << 30}}), "the weights alone exceed"},
		{misleading, ""},
	} {
		got := hint(c.err)
		if (c.want == "" && got != "") || !strings.Contains(got, c.want) {
			t.Errorf("hint(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
