// Package chattmpl renders chat conversations into prompt text the way Hugging
// Face transformers' apply_chat_template does: a model's own Jinja chat
// template from tokenizer_config.json (rendered by the sandboxed engine in the
// jinja subpackage), or one of the built-in wrappings of ExecuTorch's MLX
// runner (run_llm_hf.cpp's --chat llama3 / gemma / gemma4 / 0, plus chatml).
// It also picks a template for a model folder (--chat auto) and gathers the
// model's stop tokens.
//
// Typical use:
//
//	tmpl, why, err := chattmpl.Choose(modelDir, "auto")
//	prompt, err := tmpl.Render(msgs, chattmpl.RenderOptions{AddGenerationPrompt: true})
//	stops, err := chattmpl.StopTokens(modelDir, tmpl, tokenizer)
//
// The rendered text carries its own BOS where the template puts one (model
// templates, and the first turn of the llama3/gemma/gemma4 built-ins), so it
// is encoded without adding special tokens, as transformers does; only the
// "none" built-in leaves BOS to the tokenizer (Template.TokenizerAddsBOS).
// Rendering a whole conversation again after each turn gives a text whose
// earlier part is the previous rendering for the built-ins and for most
// model templates, so a caller keeping a KV cache can feed just the new
// suffix when the old text is a prefix of the new one.
package chattmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"etchat/inference/chattmpl/jinja"
)

// Message is one chat turn. Content is the usual text; Extra carries any
// other fields a template may read (tool_calls, name, reasoning_content,
// tool_call_id, ...). An Extra["content"] entry replaces Content, for
// content that is not a string (a list of parts, or nil).
type Message struct {
	Role    string
	Content string
	Extra   map[string]any

	order []string // key order of the JSON object this came from
}

// UnmarshalJSON reads a message object, keeping every field and the
// order of nested objects (which tojson reproduces).
func (m *Message) UnmarshalJSON(b []byte) error {
	v, err := jinja.DecodeJSON(b)
	if err != nil {
		return err
	}
	d, ok := v.(*jinja.Dict)
	if !ok {
		return errors.New("chattmpl: a message must be a JSON object")
	}
	*m = Message{}
	for _, k := range d.Keys() {
		ks := k.(string)
		val, _ := d.Get(k)
		m.order = append(m.order, ks)
		switch {
		case ks == "role":
			s, ok := val.(string)
			if !ok {
				return errors.New("chattmpl: a message's role must be a string")
			}
			m.Role = s
		case ks == "content":
			if s, ok := val.(string); ok {
				m.Content = s
				continue
			}
			fallthrough
		default:
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[ks] = val
		}
	}
	if _, ok := d.Get("role"); !ok {
		return errors.New("chattmpl: a message needs a role")
	}
	return nil
}

// MarshalJSON writes the message as an object.
func (m Message) MarshalJSON() ([]byte, error) {
	d, err := m.toDict()
	if err != nil {
		return nil, err
	}
	return json.Marshal(plain(d))
}

func plain(v any) any {
	switch x := v.(type) {
	case *jinja.Dict:
		m := map[string]any{}
		for _, k := range x.Keys() {
			val, _ := x.Get(k)
			m[fmt.Sprint(k)] = plain(val)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// toDict is the message as the template sees it.
func (m Message) toDict() (*jinja.Dict, error) {
	d := jinja.NewDict()
	keys := []string{"role", "content"}
	seen := map[string]bool{"role": true, "content": true}
	for _, k := range m.order {
		if !seen[k] {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range m.Extra {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	for _, k := range keys {
		switch k {
		case "role":
			d.Set("role", m.Role)
		case "content":
			if v, ok := m.Extra["content"]; ok {
				c, err := jinja.FromGo(v)
				if err != nil {
					return nil, fmt.Errorf("message content: %w", err)
				}
				d.Set("content", c)
			} else {
				d.Set("content", m.Content)
			}
		default:
			v, ok := m.Extra[k]
			if !ok {
				continue
			}
			c, err := jinja.FromGo(v)
			if err != nil {
				return nil, fmt.Errorf("message field %q: %w", k, err)
			}
			d.Set(k, c)
		}
	}
	return d, nil
}

// RenderOptions are apply_chat_template's other inputs.
type RenderOptions struct {
	// AddGenerationPrompt appends the header that opens the assistant's
	// reply.
	AddGenerationPrompt bool
	// Tools are tool (function) definitions, passed to the template as
	// "tools" (None when empty).
	Tools []any
	// Vars are extra template variables (enable_thinking, ...); they
	// override the special tokens of the same name.
	Vars map[string]any
}

// Template renders conversations: a model's Jinja template or a built-in.
type Template struct {
	// Name says which template this is: "llama3", "gemma", "gemma4",
	// "chatml", "none" for built-ins; "default" or a named template's
	// name for a model's own.
	Name string
	// Source is the Jinja source of a model template (empty for built-ins).
	Source string
	// Now is the clock strftime_now reads; nil means time.Now.
	Now func() time.Time
	// Limits bound each rendering (zero: the jinja defaults).
	Limits jinja.Limits

	tmpl    *jinja.Template
	tokens  map[string]any // special-token variables
	eos     string
	builtin *builtinSpec

	turnEndOnce sync.Once
	turnEnd     string

	toolFormatOnce sync.Once // ToolFormat renders probes once per template
	toolFormat     string
	toolFormatErr  error
}

// IsBuiltin reports whether t is one of the runner's built-in wrappings.
func (t *Template) IsBuiltin() bool { return t.builtin != nil }

// NewTemplate compiles a model's Jinja chat template. tokens are the
// special-token variables (bos_token, eos_token, ...) it may read.
func NewTemplate(name, source string, tokens map[string]any) (*Template, error) {
	jt, err := jinja.Parse(source)
	if err != nil {
		return nil, fmt.Errorf("chat template %q: %w", name, err)
	}
	t := &Template{Name: name, Source: source, tmpl: jt, tokens: map[string]any{}}
	for k, v := range tokens {
		t.tokens[k] = v
	}
	if s, ok := tokens["eos_token"].(string); ok {
		t.eos = s
	}
	return t, nil
}

// Render renders a conversation. A template's own raise_exception comes
// back as a *jinja.RaisedError whose message is the template's.
func (t *Template) Render(messages []Message, opts RenderOptions) (string, error) {
	if t.builtin != nil {
		return t.builtin.render(messages, opts)
	}
	if t.tmpl == nil {
		return "", errors.New("chattmpl: template not initialised")
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		d, err := m.toDict()
		if err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = d
	}
	vars := map[string]any{}
	for k, v := range t.tokens {
		vars[k] = v
	}
	vars["messages"] = msgs
	vars["add_generation_prompt"] = opts.AddGenerationPrompt
	vars["tools"] = nil
	vars["documents"] = nil
	if len(opts.Tools) > 0 {
		tools, err := jinja.FromGo(opts.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		vars["tools"] = tools
	}
	for k, v := range opts.Vars {
		vars[k] = v
	}
	return t.tmpl.Render(vars, &jinja.Options{Limits: t.Limits, Now: t.Now})
}

// TurnEnd is the token text that ends an assistant turn (<|eot_id|>,
// <end_of_turn>, <|im_end|>, ...), or "" when there is none. For a model
// template it is read off a rendering: what follows an assistant reply's
// content, up to the end of its first special-token-like marker.
func (t *Template) TurnEnd() string {
	if t.builtin != nil {
		return t.builtin.turnEnd
	}
	t.turnEndOnce.Do(func() { t.turnEnd = t.findTurnEnd() })
	return t.turnEnd
}

func (t *Template) findTurnEnd() string {
	const probe = "\x00etchat-probe\x00"
	convs := [][]Message{
		{{Role: "user", Content: "hi"}, {Role: "assistant", Content: probe}},
		{{Role: "system", Content: "s"}, {Role: "user", Content: "hi"}, {Role: "assistant", Content: probe}},
		{{Role: "user", Content: "hi"}, {Role: "assistant", Content: probe}, {Role: "user", Content: "again"}},
	}
	for _, c := range convs {
		out, err := t.Render(c, RenderOptions{})
		if err != nil {
			continue
		}
		i := strings.Index(out, probe)
		if i < 0 {
			continue
		}
		if m := leadingMarker(out[i+len(probe):]); m != "" {
			return m
		}
	}
	for _, m := range knownTurnEnds {
		if strings.Contains(t.Source, m) {
			return m
		}
	}
	return t.eos
}

// knownTurnEnds are the turn-end markers of common chat formats.
var knownTurnEnds = []string{"<|eot_id|>", "<end_of_turn>", "<|im_end|>", "<turn|>", "<|end|>", "<|endoftext|>", "</s>"}

// leadingMarker returns the special-token-like text at the start of s:
// a "<...>" with no whitespace inside, or one of the known markers.
func leadingMarker(s string) string {
	for _, m := range knownTurnEnds {
		if strings.HasPrefix(s, m) {
			return m
		}
	}
	if !strings.HasPrefix(s, "<") {
		return ""
	}
	j := strings.IndexByte(s, '>')
	if j < 0 {
		return ""
	}
	m := s[:j+1]
	if strings.ContainsAny(m[1:], " \t\n<") {
		return ""
	}
	return m
}
