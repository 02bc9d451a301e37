// The chat's model picker (issue 40 item 3): each model with what decides
// the choice, and the models that cannot chat with the reason.

package app

import (
	"strconv"
	"strings"

	"etchat/inference/kvcache"
)

// ModelChoice is one model in the chat's picker: its library entry, its
// facts (size, quantization, context, cache kind) and, for a model left
// out, why it cannot chat.
type ModelChoice struct {
	Entry LibraryEntry
	Facts string // "65.2 MB · 4-bit · context 128 · off-graph cache: 4 layers flat"
	Why   string // "" for a model the chat can open
}

// ModelChoices splits the library into the models the chat can open and
// those it cannot: no tokenizer next to it, one that cannot be used, no
// chat template (neither next to the model nor recognised from its
// tokenizer: it can only continue raw text), a program etchat cannot run.
func ModelChoices(entries []LibraryEntry) (chat, left []ModelChoice) {
	for _, e := range entries {
		c := ModelChoice{Entry: e, Facts: modelChoiceFacts(e), Why: chatWhyNot(e)}
		if c.Why == "" {
			chat = append(chat, c)
		} else {
			left = append(left, c)
		}
	}
	return chat, left
}

// CanChat reports whether the chat offers e: ModelChoices' test.
func CanChat(e LibraryEntry) bool { return chatWhyNot(e) == "" }

// chatWhyNot is why the chat cannot open e, or "".
func chatWhyNot(e LibraryEntry) string {
	switch {
	case !e.Chattable():
		return strings.TrimPrefix(e.ChatBlocked(), "Chat is not available: ")
	case e.Template == "none":
		return "no chat template: none next to it (tokenizer_config.json, chat_template.jinja) and none recognised from its tokenizer — it can only continue raw text (etchat run --chat 0)"
	}
	return ""
}

// modelChoiceFacts is what the picker says of a model: size,
// quantization, context and cache kind.
func modelChoiceFacts(e LibraryEntry) string {
	m := e.Info
	if m == nil {
		return e.Badge()
	}
	parts := []string{FormatBytes(m.SizeBytes)}
	if q := m.Quantization.Summary; q != "" {
		parts = append(parts, q)
	}
	if m.MaxCtxLen > 0 {
		parts = append(parts, "context "+strconv.Itoa(m.MaxCtxLen))
	}
	cache := e.Badge() + " cache"
	if m.Layout != nil {
		if cfg, err := m.CacheConfig(kvcache.DefaultPolicy()); err == nil {
			cache += ": " + cfg.ShortSummary()
		}
	}
	return strings.Join(append(parts, cache), " · ")
}
