package app

import (
	"context"
	"fmt"
	"strings"

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
	mi.Graph = nil // the library keeps the facts, not the parsed graph (engines read the file again)
	return mi, nil
}

// CheckChat loads the model's tokenizer and picks its chat template as a
// chat does (inference.LoadChat, whose typed errors say what is wrong),
// once per version of the files (library_chatcheck.go). It returns the
// template's name ("none": raw text only).
func (i infoInspector) CheckChat(m *ModelInfo) (string, error) { return checkChatCached(m) }

// companionProblems are what is wrong with the files next to the model.
func companionProblems(m *ModelInfo) string { return strings.Join(m.Companion.Problems, "; ") }

// methodNames are the program's method names.
func methodNames(m *ModelInfo) []string {
	var out []string
	for _, meth := range m.Methods {
		out = append(out, meth.Name)
	}
	return out
}

// delegateLines describe the program's delegates.
func delegateLines(m *ModelInfo) []string {
	var out []string
	for _, d := range m.Delegates {
		out = append(out, fmt.Sprintf("%s in %s (%s)", d.ID, d.Method, FormatBytes(d.Size)))
	}
	if m.MLX != nil && m.MLX.Instructions > 0 {
		out = append(out, fmt.Sprintf("MLX graph: %d instructions, %d constant tensors", m.MLX.Instructions, m.MLX.ConstantTensors))
	}
	return out
}
