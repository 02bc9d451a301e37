package runlog

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"etchat/inference"
	"etchat/store"
)

// StopIncomplete is the stop reason of a reply saved while it streamed and
// never finished (stored with the partial flag).
const StopIncomplete = "incomplete"

// IsPartial reports whether m is such a reply.
func IsPartial(m inference.Message) bool {
	return m.Role == inference.RoleAssistant && m.StopReason == StopIncomplete
}

// storedStats is a reply's stats as JSON in the message's stats column.
type storedStats struct {
	PromptTokens    int     `json:"prompt_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	PrefillTokPerS  float64 `json:"prefill_tok_s"`
	DecodeTokPerS   float64 `json:"decode_tok_s"`
	TTFTMs          float64 `json:"ttft_ms"`
	StopReason      string  `json:"stop_reason,omitempty"`
}

func toInt32(ids []int) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}

func toInt(ids []int32) []int {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int, len(ids))
	for i, v := range ids {
		out[i] = int(v)
	}
	return out
}

// StoreMessages is a transcript as store.DB.SaveTranscript takes it.
func StoreMessages(msgs []inference.Message) ([]store.Message, error) {
	out := make([]store.Message, len(msgs))
	for i, m := range msgs {
		sm := store.Message{Role: m.Role, Text: m.Text, TokenIDs: toInt32(m.IDs), Partial: IsPartial(m)}
		if m.Stats != nil {
			js, err := json.Marshal(storedStats{int(m.Stats.NumPromptTokens), int(m.Stats.NumGeneratedTokens), m.Stats.PrefillRate,
				m.Stats.DecodeRate, m.Stats.TTFTSeconds * 1000, m.StopReason})
			if err != nil {
				return nil, err
			}
			sm.Stats = js
		}
		out[i] = sm
	}
	return out, nil
}

// Messages is a stored path as a conversation's transcript: a partial reply
// gets StopIncomplete, a reply's stats what the store kept of them. Pass it
// through inference.Restored before resuming a conversation on it.
func Messages(path []store.Message) []inference.Message {
	out := make([]inference.Message, 0, len(path))
	for _, m := range path {
		msg := inference.Message{Role: m.Role, Text: m.Text, IDs: toInt(m.TokenIDs), Start: m.PosStart}
		if m.Partial {
			msg.StopReason = StopIncomplete
		}
		var st storedStats
		if len(m.Stats) > 0 && json.Unmarshal(m.Stats, &st) == nil { // unreadable stats are only numbers lost, not the message
			msg.Stats = &inference.Stats{PrefillRate: st.PrefillTokPerS, DecodeRate: st.DecodeTokPerS, TTFTSeconds: st.TTFTMs / 1000}
			msg.Stats.NumPromptTokens, msg.Stats.NumGeneratedTokens = int64(st.PromptTokens), int64(st.GeneratedTokens)
			if !m.Partial {
				msg.StopReason = st.StopReason
			}
		}
		out = append(out, msg)
	}
	return out
}

// Title is a conversation's title from its transcript: its first user
// message, shortened; "" when it has none yet.
func Title(msgs []inference.Message) string {
	for _, m := range msgs {
		if m.Role == inference.RoleUser {
			return ShortTitle(m.Text)
		}
	}
	return ""
}

// ShortTitle shortens a first message to a conversation title.
func ShortTitle(text string) string {
	t := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(t) > 48 {
		r := []rune(t)
		t = string(r[:47]) + "…"
	}
	if t == "" {
		t = "Untitled"
	}
	return t
}

// ChatSettings are a conversation's settings as the store keeps them (its
// settings column, and a chat run's config): the app's settings sheet, and
// what etchat run --interactive ran with, so that either reopens the other's
// conversations. app.Settings converts to it field for field.
type ChatSettings struct {
	Engine          string  `json:"engine"`
	Capacity        int     `json:"capacity"`
	StorageDType    string  `json:"storage_dtype"`
	InitialCapacity int     `json:"initial_capacity"`
	Windows         string  `json:"windows"`
	Temperature     float64 `json:"temperature"`
	TopK            int     `json:"top_k"`
	TopP            float64 `json:"top_p"`
	Seed            int64   `json:"seed"`
	MaxNewTokens    int     `json:"max_new_tokens"`
	SystemPrompt    string  `json:"system_prompt"`
	// Numerics is the CPU engine's numerics mode asked for: "" = fast,
	// the default for quantized weights; "exact".
	Numerics string `json:"numerics,omitempty"`
}
