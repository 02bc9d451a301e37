package app

import (
	"context"
	"fmt"
	"strings"

	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
)

// infoInspector reads models with inference/modelinfo.
type infoInspector struct{ hash bool }

// NewInspector returns the Inspector the window uses. It does not hash the
// files (a multi-gigabyte model would take seconds); the store keys models
// by path.
func NewInspector() Inspector { return infoInspector{} }

func (i infoInspector) Inspect(ctx context.Context, path string) (info *ModelInfo, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil { // a reader bug on a hostile file must not take the window down
			info, err = nil, fmt.Errorf("the file could not be read (the reader failed: %v); it may be damaged or from an unsupported exporter", r)
		}
	}()
	mi, err := modelinfo.Load(path, modelinfo.Options{Hash: i.hash})
	if err != nil {
		return nil, err
	}
	return FromModelInfo(mi), nil
}

// FromModelInfo converts modelinfo's answer to what the library shows.
func FromModelInfo(info *modelinfo.Info) *ModelInfo {
	m := &ModelInfo{
		Path: info.Path, SizeBytes: info.SizeBytes, SHA256: info.SHA256,
		KindReason: info.KindReason, Layout: info.Layout,
		MaxCtxLen: info.MaxCtxLen, PrefillChunk: info.PrefillChunk, VocabSize: info.VocabSize,
		WeightBytes: info.Weights.Bytes, WeightDTypes: info.Weights.DTypes, Params: info.Weights.Params,
		Quantization: info.Quantization.Summary,
		Tokenizer:    info.Companion.Tokenizer, TokenizerConfig: info.Companion.TokenizerConfig,
		HasChatTemplate: info.Companion.HasChatTemplate, ModelType: info.Companion.ModelType,
	}
	switch info.Kind {
	case modelinfo.OffGraph:
		m.Kind = KindOffGraph
		m.BuildCache = func(p kvcache.Policy) (*kvcache.Config, error) { return info.CacheConfig(p) }
	case modelinfo.InGraph:
		m.Kind = KindInGraph
	default:
		m.Kind = KindUnsupported
	}
	for _, meth := range info.Methods {
		m.Methods = append(m.Methods, meth.Name)
	}
	for _, d := range info.Delegates {
		m.Delegates = append(m.Delegates, fmt.Sprintf("%s in %s (%s)", d.ID, d.Method, FormatBytes(d.Size)))
	}
	if info.MLX != nil && info.MLX.Instructions > 0 {
		m.Delegates = append(m.Delegates, fmt.Sprintf("MLX graph: %d instructions, %d constant tensors", info.MLX.Instructions, info.MLX.ConstantTensors))
	}
	if len(info.Companion.Problems) > 0 {
		m.KindReason = strings.TrimSpace(m.KindReason + " " + strings.Join(info.Companion.Problems, "; "))
	}
	return m
}
