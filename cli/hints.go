package cli

import (
	"errors"
	"strings"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/store"
)

// hint is what to do about an error a user fixes, chosen by the error's
// type (never its text); "" when there is nothing more to say.
func hint(err error) string {
	var (
		lib   *engine.LibraryError
		cache *inference.CacheConfigError
		tok   *inference.TokenizerError
		vocab *inference.VocabMismatchError
		unsup *inference.UnsupportedModelError
	)
	switch {
	case errors.As(err, &lib):
		return libraryHint(lib)
	case errors.Is(err, engine.ErrNotAvailable):
		return "use --engine cpu, which every build has"
	case errors.As(err, &cache):
		return cacheHint(cache)
	case errors.As(err, &tok):
		if tok.Given {
			return "check the --tokenizer path: it must be the model's tokenizer.json"
		}
		return "put the model's tokenizer.json next to the .pte, or give --tokenizer (with --prompt-ids no tokenizer is needed)"
	case errors.As(err, &vocab):
		return "give the tokenizer.json exported with this model (--tokenizer)"
	case errors.As(err, &unsup):
		return "etchat runs LLMs exported with ExecuTorch's MLX backend (export_llm_hf.py); 'etchat inspect --pte FILE' shows what this file holds"
	case errors.Is(err, inference.ErrPromptTooLong), errors.Is(err, engine.ErrCacheFull):
		return "raise --kv-max-capacity up to what the model allows, or shorten the prompt"
	case errors.Is(err, store.ErrBusy):
		return "another etchat (the app or a command) is writing to the database: wait for it, or point --db at another file"
	case errors.Is(err, store.ErrCorrupt):
		return "move the damaged database aside, or point --db at another file"
	}
	return ""
}

// libraryHint is what to do when the native library does not load, by
// what went wrong.
func libraryHint(lib *engine.LibraryError) string {
	switch lib.Problem {
	case engine.LibraryMissing:
		return "build the native library with scripts/build-native and set ETCHAT_RUNNER to the path it prints (docs/native-engine.md), or use --engine cpu"
	case engine.LibraryABIMismatch:
		return "the library was built from another etchat: rebuild it from this checkout with scripts/build-native, or use --engine cpu"
	case engine.LibraryNoDevice:
		return "MLX could not start its device (its reason is above): 'etchat doctor' shows the metallib and device it found; copy mlx.metallib from the same build beside the library, or use --engine cpu"
	}
	return "the library does not load on this machine (see the loader's message above): rebuild it here with scripts/build-native, or use --engine cpu"
}

// cacheHint names the flags of the cache fields the policy refused.
func cacheHint(cache *inference.CacheConfigError) string {
	var flags []string
	for _, fe := range kvcache.FieldErrors(cache) {
		flags = append(flags, "--"+cacheFlag[fe.Field])
	}
	switch {
	case len(flags) == 0 && cache.Field != "":
		flags = []string{"--" + cacheFlag[cache.Field]}
	case len(flags) == 0:
		flags = []string{"the --kv-* flags"}
	}
	return "check " + strings.Join(flags, ", ") + " against what 'etchat inspect FILE.pte' reports for this model"
}

// explained is a store error with the store's advice as its message; it
// keeps the error's identity for hint and errors.Is.
type explained struct{ err error }

func (e *explained) Error() string { return store.Explain(e.err) }
func (e *explained) Unwrap() error { return e.err }

// storeError is err as the CLI reports a store failure.
func storeError(err error) error { return &explained{err} }
