package inference

import (
	"fmt"
	"strings"

	"etchat/inference/kvcache"
)

// The errors below are what a user fixes (a flag, a file); the edges (the
// CLI, the app) map them to hints with errors.As.

// UnsupportedModelError: the .pte is not a program etchat can run. Newer
// says a newer ExecuTorch wrote it (modelinfo.Info.NewerExport): then
// re-exporting or updating etchat fixes it.
type UnsupportedModelError struct {
	Path, Reason string
	Newer        bool
}

func (e *UnsupportedModelError) Error() string {
	return fmt.Sprintf("%s: etchat cannot run this program: %s", e.Path, e.Reason)
}

// CacheConfigError: the cache policy does not fit the model. Err is
// kvcache.Build's, one *kvcache.FieldError per bad field
// (kvcache.FieldErrors lists them); Field is the first of them ("" when the
// fault is the file's layout, not a field).
type CacheConfigError struct {
	Field kvcache.Field
	Err   error
}

// The cache policy's fields, as CacheConfigError names them.
const (
	CacheFieldCapacity        = kvcache.FieldCapacity
	CacheFieldStorageDType    = kvcache.FieldStorageDType
	CacheFieldWindows         = kvcache.FieldWindows
	CacheFieldInitialCapacity = kvcache.FieldInitialCapacity
)

// Error is one line: several field errors are joined with "; ".
func (e *CacheConfigError) Error() string {
	fes := kvcache.FieldErrors(e.Err)
	if len(fes) < 2 {
		return "cache config: " + e.Err.Error()
	}
	msgs := make([]string, len(fes))
	for i, fe := range fes {
		msgs[i] = fe.Msg
	}
	return "cache config: " + strings.Join(msgs, "; ")
}
func (e *CacheConfigError) Unwrap() error { return e.Err }

// TokenizerError: the tokenizer is missing or unreadable. Given says it
// was named explicitly (not looked for beside the model).
type TokenizerError struct {
	Path  string
	Given bool
	Err   error
}

func (e *TokenizerError) Error() string { return fmt.Sprintf("tokenizer %s: %v", e.Path, e.Err) }
func (e *TokenizerError) Unwrap() error { return e.Err }

// TemplateError: the chat template asked for, or the model's own, cannot be
// used.
type TemplateError struct {
	Choice string
	Err    error
}

func (e *TemplateError) Error() string { return "chat template: " + e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// VocabMismatchError: the tokenizer has more tokens than the model's
// vocabulary: it belongs to another model.
type VocabMismatchError struct {
	Tokenizer      string
	TokenizerVocab int
	Model          string
	ModelVocab     int
}

func (e *VocabMismatchError) Error() string {
	return fmt.Sprintf("the tokenizer %s has %d tokens but the model's vocabulary is %d: it does not belong to %s",
		e.Tokenizer, e.TokenizerVocab, e.ModelVocab, e.Model)
}
