package inference

import (
	"fmt"
	"path/filepath"

	"etchat/inference/chattmpl"
	"etchat/inference/tokenizer"
)

// HFTokenizer adapts a tokenizer.json tokenizer to Tokenizer.
type HFTokenizer struct{ *tokenizer.Tokenizer }

// Encode encodes text; addSpecial applies the post-processor (a BOS).
func (t HFTokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	return t.Tokenizer.Encode(text, addSpecial), nil
}

// ChatTemplate adapts a chattmpl template to Template.
type ChatTemplate struct {
	T    *chattmpl.Template
	Vars map[string]any // extra template variables (enable_thinking, …)
}

// Render renders the messages with the template.
func (c ChatTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	return c.RenderTools(msgs, addGenerationPrompt, nil)
}

// ToolTemplate is a Template that can render tool definitions and says
// the format its model calls them in (ChatTemplate is one).
type ToolTemplate interface {
	RenderTools(msgs []Message, addGenerationPrompt bool, tools []any) (string, error)
	// ToolFormat is the call format, or a *chattmpl.NoToolsError.
	ToolFormat() (string, error)
}

// RenderTools renders the messages, their tool calls and results, and
// tools (OpenAI's tool objects; none when empty).
func (c ChatTemplate) RenderTools(msgs []Message, addGenerationPrompt bool, tools []any) (string, error) {
	cm := make([]chattmpl.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chattmpl.Message{Role: m.Role, Content: m.Text}
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
			cm[i].Extra = map[string]any{}
		}
		if len(m.ToolCalls) > 0 {
			cm[i].Extra["tool_calls"] = chattmpl.ToolCallsValue(m.ToolCalls)
		}
		if m.ToolCallID != "" {
			cm[i].Extra["tool_call_id"] = m.ToolCallID
		}
	}
	return c.T.Render(cm, chattmpl.RenderOptions{AddGenerationPrompt: addGenerationPrompt, Vars: c.Vars, Tools: tools})
}

// ToolFormat is the template's tool-call format (chattmpl's).
func (c ChatTemplate) ToolFormat() (string, error) { return c.T.ToolFormat() }

// Chat is what talking to a model needs besides the engine: its
// tokenizer, its chat template (nil for raw text), and the tokens that end
// a reply.
type Chat struct {
	Path      string // the tokenizer.json
	HF        *tokenizer.Tokenizer
	Tokenizer Tokenizer
	Template  Template // nil: raw text, encoded with the tokenizer's special tokens
	// TemplateName and Why say which template was chosen and why.
	TemplateName, Why string
	// StopIDs: generation_config.json's eos_token_id (int or list) ∪ the
	// tokenizer's EOS ∪ the template's turn end, plus any extra given to
	// LoadChat (the .pte's get_eos_ids).
	StopIDs []int
	// TurnEndIDs: the template's turn-end token, committed to the cache.
	TurnEndIDs []int

	grammarVocab grammarVocab // structured output: see GrammarVocab
}

// LoadChat loads the tokenizer at tokenizerPath and picks the chat
// template for the model folder modelDir by chat ("auto", a built-in name:
// llama3, gemma, gemma4, chatml, or "0"/"none" for raw text). extraStop are
// more stop ids (the .pte's own EOS ids).
func LoadChat(tokenizerPath, modelDir, chat string, extraStop []int) (*Chat, error) {
	tok, err := tokenizer.Load(tokenizerPath)
	if err != nil {
		return nil, &TokenizerError{Path: tokenizerPath, Given: true, Err: err}
	}
	if modelDir == "" {
		modelDir = filepath.Dir(tokenizerPath)
	}
	if chat == "" {
		chat = "auto"
	}
	tmpl, why, err := chattmpl.Choose(modelDir, chat)
	if err != nil {
		return nil, &TemplateError{Choice: chat, Err: err}
	}
	c := &Chat{Path: tokenizerPath, HF: tok, Tokenizer: HFTokenizer{tok}, TemplateName: tmpl.Name, Why: why}
	if tmpl.Name != "none" {
		c.Template = ChatTemplate{T: tmpl}
	}
	stop, err := chattmpl.StopTokens(modelDir, tmpl, tok)
	if err != nil {
		return nil, fmt.Errorf("stop tokens: %w", err)
	}
	seen := map[int]bool{}
	add := func(ids ...int) {
		for _, id := range ids {
			if id >= 0 && !seen[id] {
				seen[id] = true
				c.StopIDs = append(c.StopIDs, id)
			}
		}
	}
	add(stop...)
	if id, ok := tok.EOS(); ok {
		add(id)
	}
	add(extraStop...)
	if te := tmpl.TurnEnd(); te != "" {
		if id, ok := tok.TokenID(te); ok {
			add(id)
			c.TurnEndIDs = []int{id}
		}
	}
	return c, nil
}

// Encode is the prompt for a single user message, as the runner builds
// it: rendered with the template (add_generation_prompt) and encoded
// without special tokens, or, for raw text, encoded with them.
func (c *Chat) Encode(prompt string) ([]int, error) {
	if c.Template == nil {
		return c.Tokenizer.Encode(prompt, true)
	}
	text, err := c.Template.Render([]Message{{Role: RoleUser, Text: prompt}}, true)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return c.Tokenizer.Encode(text, false)
}
