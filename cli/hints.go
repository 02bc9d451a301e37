package cli

import (
	"errors"
	"fmt"
	"strings"

	"etchat/inference"
	"etchat/inference/engine"
	"etchat/inference/grammar"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/inference/quality"
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
	case errors.Is(err, inference.ErrPromptTooLong), errors.Is(err, engine.ErrCacheFull):
		return "raise --kv-max-capacity up to what the model allows, or shorten the prompt"
	case errors.Is(err, store.ErrBusy):
		return "another etchat (the app or a command) is writing to the database: wait for it, or point --db at another file"
	case errors.Is(err, store.ErrCorrupt):
		return "move the damaged database aside, or point --db at another file"
	}
	for _, more := range []func(error) string{programHint, constraintHint, qualityHint, numericsHint, memoryHint} {
		if h := more(err); h != "" {
			return h
		}
	}
	return ""
}

// memoryHint is what to do about a model that does not fit the device's
// working set (the native engine refuses it before loading).
func memoryHint(err error) string {
	var fit *engine.MemoryFitError
	if !errors.As(err, &fit) {
		return ""
	}
	if fit.Fit.Cache > 0 && fit.Fit.Weights < fit.Fit.WorkingSet {
		return "lower --kv-max-capacity (the cache is sized for its full capacity), or pick a smaller or more quantized model"
	}
	return "the weights alone exceed the device's working set: pick a smaller or more quantized model (--engine cpu maps the weights from the file instead)"
}

// programHint is what to do about a .pte etchat cannot run as it is.
func programHint(err error) string {
	var (
		unsup *inference.UnsupportedModelError
		meta  *modelinfo.MetadataError
	)
	switch {
	case errors.As(err, &unsup) && unsup.Newer:
		return "this etchat reads exports of ExecuTorch cff6f4dd's schema: re-export the model with an ExecuTorch of that schema, or update etchat (docs/inspect.md, compatibility)"
	case errors.As(err, &meta):
		return "the file's metadata contradicts itself or forward (the message names the constants): re-export the model; docs/inspect.md lists the metadata etchat reads"
	case errors.As(err, &unsup):
		return "etchat runs LLMs exported with ExecuTorch's MLX backend (export_llm_hf.py); 'etchat inspect --pte FILE' shows what this file holds"
	}
	return ""
}

// constraintHint is what to do about a grammar or JSON Schema that
// constrained output (--grammar, --json-schema) refused.
func constraintHint(err error) string {
	var (
		gsyn *grammar.SyntaxError
		gsch *grammar.SchemaError
	)
	switch {
	case errors.As(err, &gsyn):
		return "fix the grammar at that line: GBNF rules are name ::= alternatives, the start rule is root (docs/serve.md#structured-output)"
	case errors.As(err, &gsch):
		return "docs/serve.md#structured-output lists the JSON Schema keywords etchat enforces; remove or rewrite the one named"
	case errors.Is(err, inference.ErrNoTokenizer):
		return "constrained output needs the model's tokenizer.json: put it next to the .pte or give --tokenizer"
	}
	return ""
}

// qualityHint is what to do about etchat perplexity's errors.
func qualityHint(err error) string {
	var (
		base  *quality.BaseMismatchError
		bfile *quality.BaseFormatError
		win   *quality.WindowError
		short *quality.TooShortError
	)
	switch {
	case errors.As(err, &base):
		return "make the base with --save-logits from the same text or ids and --ctx, with a model of the same tokenizer"
	case errors.As(err, &bfile):
		return "give --kl-base a file that 'etchat perplexity --save-logits' wrote completely (an interrupted run writes none)"
	case errors.As(err, &win):
		return fmt.Sprintf("give --ctx %d or less, or raise --kv-max-capacity up to what the model allows", win.Capacity)
	case errors.As(err, &short):
		return "give a longer text, or a smaller --ctx"
	case errors.Is(err, quality.ErrRowsUnavailable):
		return "leave out --no-stepwise to score this program one token per step (slower, the same figures)"
	}
	return ""
}

// numericsHint is what to do about a --numerics the engine refused.
func numericsHint(err error) string {
	var num *engine.NumericsError
	if !errors.As(err, &num) {
		return ""
	}
	if num.Engine != "" {
		return "leave --numerics out with --engine mlx, or use --engine cpu"
	}
	return "--numerics takes " + strings.Join(engine.NumericsModes(), " or ")
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
