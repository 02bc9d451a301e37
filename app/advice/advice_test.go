package advice

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/engine"
	"etchat/inference/modelinfo"
	"etchat/store"
)

// Advice follows the error's type through wrapping; its text (here made to
// mislead) plays no part.
func TestFor(t *testing.T) {
	misleading := errors.New("tokenizer dtype engine database busy")
	wrap := func(err error) error { return fmt.Errorf("loading: %w", err) }
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap(&engine.LibraryError{Problem: engine.LibraryMissing, Err: misleading}), "choose the cpu engine in the sheet, or set the runner library path in Preferences"},
		{wrap(&engine.UnknownError{Name: "tpu"}), "choose one of"},
		{wrap(&inference.TokenizerError{Path: "x", Err: fs.ErrNotExist}), "tokenizer.json next to the .pte"},
		{wrap(&inference.VocabMismatchError{}), "tokenizer.json next to the .pte"},
		{wrap(&inference.CacheConfigError{Err: misleading}), "change the cache fields in the sheet"},
		{wrap(&inference.UnsupportedModelError{}), "export_llm_hf.py"},
		{wrap(&inference.UnsupportedModelError{Newer: true}), "a newer ExecuTorch wrote this file: re-export it"},
		{wrap(&modelinfo.MetadataError{Msg: "export_llm_hf.py"}), "metadata contradicts itself"},
		{wrap(bench.ErrDoesNotFit), "smaller sizes"},
		{wrap(&engine.MemoryFitError{Model: "tokenizer dtype", Fit: engine.Fit{Weights: 1, Cache: 2, WorkingSet: 2}}), "choose a smaller KV capacity in the sheet"},
		{wrap(fs.ErrNotExist), "the file is not there"},
		{wrap(store.ErrBusy), "close the other window"},
		{wrap(&net.OpError{Op: "listen", Err: &os.SyscallError{Syscall: "bind", Err: syscall.EADDRINUSE}}), "choose another port in the sheet"},
		{wrap(&store.BackupError{Path: "b.db", Reason: "backup busy port", Err: store.ErrCorrupt}), "pick a backup etchat wrote"},
		{wrap(&store.BackupError{Path: "b.db", Reason: "x", Err: store.ErrTooNew}), "update etchat to restore it"},
		{misleading, ""},
		{nil, ""},
	} {
		got := For(c.err, "the sheet")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
