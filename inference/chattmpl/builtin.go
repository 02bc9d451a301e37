package chattmpl

import (
	"fmt"
	"sort"
	"strings"
)

// builtinSpec is one of the runner's fixed wrappings. run_llm_hf.cpp's
// wrap_turn turns a user prompt into
//
//	[bos] + userOpen + prompt + userClose + asstOpen
//
// (BOS only on the first turn), and after generating it commits the
// turn-end token; a whole conversation rendered here is the same token
// stream the runner's cache holds after those turns.
type builtinSpec struct {
	name      string
	bos       string
	userOpen  string
	userClose string
	asstOpen  string
	turnEnd   string // follows each assistant reply
	// system renders a system message as its own turn; when empty, the
	// system text is put before the next user message, separated by a
	// blank line (as Gemma's own template does).
	sysOpen, sysClose string
	// asstClose follows the turn end (chatml's newline).
	asstClose string
}

var builtins = map[string]*builtinSpec{
	"llama3": {
		name: "llama3", bos: "<|begin_of_text|>",
		userOpen: "<|start_header_id|>user<|end_header_id|>\n\n", userClose: "<|eot_id|>",
		asstOpen: "<|start_header_id|>assistant<|end_header_id|>\n\n", turnEnd: "<|eot_id|>",
		sysOpen: "<|start_header_id|>system<|end_header_id|>\n\n", sysClose: "<|eot_id|>",
	},
	"gemma": {
		name: "gemma", bos: "<bos>",
		userOpen: "<start_of_turn>user\n", userClose: "<end_of_turn>\n",
		asstOpen: "<start_of_turn>model\n", turnEnd: "<end_of_turn>",
	},
	"gemma4": {
		name: "gemma4", bos: "<bos>",
		userOpen: "<|turn>user\n", userClose: "<turn|>\n",
		asstOpen: "<|turn>model\n", turnEnd: "<turn|>",
	},
	"chatml": {
		name:     "chatml",
		userOpen: "<|im_start|>user\n", userClose: "<|im_end|>\n",
		asstOpen: "<|im_start|>assistant\n", turnEnd: "<|im_end|>", asstClose: "\n",
		sysOpen: "<|im_start|>system\n", sysClose: "<|im_end|>\n",
	},
	"none": {name: "none"},
}

// BuiltinNames lists the built-in template names Builtin accepts ("0" is
// another name for "none").
func BuiltinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Builtin returns a built-in template: llama3, gemma, gemma4 and 0/none
// are run_llm_hf.cpp's wrap_turn; chatml is the <|im_start|> format of
// Qwen and others.
func Builtin(name string) (*Template, error) {
	key := strings.ToLower(name)
	if key == "0" {
		key = "none"
	}
	b, ok := builtins[key]
	if !ok {
		return nil, fmt.Errorf("unknown built-in chat template %q (expected one of %s, or 0)", name, strings.Join(BuiltinNames(), ", "))
	}
	return &Template{Name: b.name, builtin: b}, nil
}

// TokenizerAddsBOS reports whether the tokenizer should prepend BOS to the
// first turn's tokens: true only for the "none" template, whose text
// carries no BOS of its own (the runner encodes a raw prompt with bos=1).
func (t *Template) TokenizerAddsBOS() bool { return t.builtin != nil && t.builtin.name == "none" }

func (b *builtinSpec) render(messages []Message, opts RenderOptions) (string, error) {
	if len(opts.Tools) > 0 {
		return "", fmt.Errorf("built-in chat template %s does not support tools", b.name)
	}
	var out strings.Builder
	out.WriteString(b.bos)
	pendingSystem := ""
	for i, m := range messages {
		if v, ok := m.Extra["content"]; ok {
			if _, isStr := v.(string); !isStr {
				return "", fmt.Errorf("message %d: built-in chat template %s needs string content", i, b.name)
			}
			m.Content = v.(string)
		}
		switch m.Role {
		case "system":
			if b.sysOpen != "" {
				out.WriteString(b.sysOpen + m.Content + b.sysClose)
			} else if m.Content != "" {
				pendingSystem += m.Content + "\n\n"
			}
		case "user":
			out.WriteString(b.userOpen + pendingSystem + m.Content + b.userClose)
			pendingSystem = ""
		case "assistant":
			out.WriteString(b.asstOpen + m.Content + b.turnEnd + b.asstClose)
		default:
			return "", fmt.Errorf("message %d: built-in chat template %s has no %q role (system, user and assistant only)", i, b.name, m.Role)
		}
	}
	if pendingSystem != "" {
		out.WriteString(b.userOpen + strings.TrimSuffix(pendingSystem, "\n\n") + b.userClose)
	}
	if opts.AddGenerationPrompt {
		out.WriteString(b.asstOpen)
	}
	return out.String(), nil
}
