package runlog

import (
	"context"
	"encoding/json"
	"errors"
	"os"

	"etchat/inference/modelinfo"
	"etchat/store"
)

// KindLabel is the library's short label of a model's kind.
func KindLabel(k modelinfo.Kind) string {
	switch k {
	case modelinfo.OffGraph:
		return "off-graph"
	case modelinfo.InGraph:
		return "in-graph"
	case modelinfo.Unsupported:
		return "not runnable"
	}
	return "unreadable"
}

// modelMeta is what the library keeps of a model's inspection in the
// store's metadata column (for the CLI's listing and a future offline view).
type modelMeta struct {
	Kind         string   `json:"kind"`
	KindReason   string   `json:"kind_reason,omitempty"`
	MaxCtxLen    int      `json:"max_ctx_len,omitempty"`
	PrefillChunk int      `json:"prefill_chunk,omitempty"`
	VocabSize    int      `json:"vocab_size,omitempty"`
	Methods      []string `json:"methods,omitempty"`
}

// SaveModel records path in db's library with what was read of it (info;
// nil: the file could not be read) and returns the stored row. The sha256
// names the model in conversations and runs: info's, else the stored one
// while the file is unchanged, else the file is read once to hash it.
func SaveModel(ctx context.Context, db *store.DB, path string, info *modelinfo.Info) (store.Model, error) {
	m := store.Model{Path: path, DisplayName: modelinfo.DisplayName(path), Kind: "unreadable"}
	if fi, err := os.Stat(path); err == nil {
		m.Size, m.ModTime = fi.Size(), fi.ModTime()
	}
	if info != nil {
		m.SHA256, m.Kind, m.TokenizerPath = info.SHA256, KindLabel(info.Kind), info.Companion.Tokenizer
		if m.SHA256 == "" {
			old, err := db.ModelByPath(ctx, path)
			switch {
			case err == nil && old.SHA256 != "" && old.Size == m.Size && old.ModTime.UnixMilli() == m.ModTime.UnixMilli():
				m.SHA256 = old.SHA256
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return store.Model{}, err
			default:
				if sum, err := modelinfo.HashFile(path); err == nil {
					m.SHA256 = sum
				}
			}
		}
		methods := make([]string, 0, len(info.Methods))
		for _, meth := range info.Methods {
			methods = append(methods, meth.Name)
		}
		if len(methods) == 0 {
			methods = nil
		}
		meta, err := json.Marshal(modelMeta{Kind: m.Kind, KindReason: info.KindReason, MaxCtxLen: info.MaxCtxLen,
			PrefillChunk: info.PrefillChunk, VocabSize: info.VocabSize, Methods: methods})
		if err != nil {
			return store.Model{}, err
		}
		m.Metadata = meta
	}
	return db.UpsertModel(ctx, m)
}
