// Package advice is the app's one table from the typed errors of the
// packages below (engines, loader, cache policy, benchmarks, store) to what
// the user does about them, so that the chat, the Benchmarks tab and the
// window word the same fault the same way. The CLI's counterpart is
// cli/hints.go. Errors are matched by type, never by their text.
package advice

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"etchat/inference"
	"etchat/inference/bench"
	"etchat/inference/engine"
	"etchat/inference/modelinfo"
	"etchat/inference/pte"
	"etchat/store"
)

// For is what to do about err, as a clause ("choose the cpu engine …"),
// or "" when it is none of the errors a user fixes. form names where the
// user changes the failing choice ("the settings sheet", "the form").
func For(err error, form string) string {
	var (
		lib   *engine.LibraryError
		na    *engine.NotAvailableError
		unk   *engine.UnknownError
		tok   *inference.TokenizerError
		tmpl  *inference.TemplateError
		vocab *inference.VocabMismatchError
		cache *inference.CacheConfigError
		unsup *inference.UnsupportedModelError
		meta  *modelinfo.MetadataError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &lib), errors.As(err, &na), errors.Is(err, engine.ErrNotAvailable):
		return "choose the cpu engine in " + form + ", or set the runner library path in Preferences"
	case errors.As(err, &unk):
		return "choose one of " + strings.Join(engine.Choices(), ", ") + " in " + form
	case errors.As(err, &tok), errors.As(err, &vocab):
		return "put the model's own tokenizer.json next to the .pte and Rescan in the Models tab"
	case errors.As(err, &tmpl):
		return "check the chat template in tokenizer_config.json next to the .pte"
	case errors.As(err, &cache):
		return "change the cache fields in " + form
	case errors.As(err, &unsup) && unsup.Newer:
		return "a newer ExecuTorch wrote this file: re-export it with an ExecuTorch of the schema this etchat reads (cff6f4dd), or update etchat"
	case errors.As(err, &meta):
		return "the file's metadata contradicts itself (the message names the constants): re-export the model"
	case errors.Is(err, pte.ErrFormat), errors.As(err, &unsup):
		return "etchat cannot run this file: export it with ExecuTorch's MLX backend and the off-graph cache (export_llm_hf.py --use-offgraph-cache), " +
			"or pick another model (the Models tab says which ones run)"
	case errors.As(err, new(*engine.MemoryFitError)):
		return "choose a smaller KV capacity in " + form + " (the cache is sized for its full capacity), or a smaller or more quantized model"
	case errors.Is(err, bench.ErrDoesNotFit):
		return "use smaller sizes or depths, or a larger KV capacity"
	case errors.Is(err, fs.ErrNotExist):
		return "the file is not there: pick a model of the library, or browse to the .pte"
	}
	return forFiles(err, form)
}

// forFiles is For's part about the database, its backups and the
// server's port.
func forFiles(err error, form string) string {
	var bk *store.BackupError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "another program (perhaps etchat serve) listens on this port: choose another port in " + form + ", or 0 for any free one"
	case errors.As(err, &bk) && errors.Is(err, store.ErrTooNew):
		return "a newer etchat wrote this backup: update etchat to restore it, or pick an older backup"
	case errors.As(err, &bk):
		return "pick a backup etchat wrote (Conversations ▸ Back Up Database…) or another copy of an etchat database"
	case errors.Is(err, store.ErrBusy):
		return "another etchat is using the database: close the other window or command, then restart"
	}
	return ""
}
