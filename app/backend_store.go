package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/store"
)

// storeAdapter serves the library, chat and run ports from the etchat
// database.
type storeAdapter struct {
	db *store.DB
}

// NewStoreAdapter adapts db to the app's ports.
func NewStoreAdapter(db *store.DB) *storeAdapter { return &storeAdapter{db: db} }

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

func (s *storeAdapter) SaveModel(ctx context.Context, path string, info *ModelInfo) error {
	m := store.Model{Path: path, DisplayName: ModelName(path)}
	if fi, err := os.Stat(path); err == nil {
		m.Size, m.ModTime = fi.Size(), fi.ModTime()
	}
	if info != nil {
		m.SHA256, m.Kind, m.TokenizerPath = info.SHA256, kindBadge(info.Kind), info.Companion.Tokenizer
		if m.SHA256 == "" {
			// The hash names the model in conversations and runs. Reuse the
			// stored one while the file is unchanged; else read the file once.
			old, ok, err := s.modelByPath(ctx, path)
			if err == nil && ok && old.SHA256 != "" && old.Size == m.Size && old.ModTime.UnixMilli() == m.ModTime.UnixMilli() {
				m.SHA256 = old.SHA256
			} else if sum, err := modelinfo.HashFile(path); err == nil {
				m.SHA256 = sum
			}
		}
		meta, err := json.Marshal(modelMeta{Kind: kindBadge(info.Kind), KindReason: info.KindReason, MaxCtxLen: info.MaxCtxLen,
			PrefillChunk: info.PrefillChunk, VocabSize: info.VocabSize, Methods: methodNames(info)})
		if err != nil {
			return err
		}
		m.Metadata = meta
	} else {
		m.Kind = "unreadable"
	}
	_, err := s.db.UpsertModel(ctx, m)
	return err
}

func (s *storeAdapter) ListModels(ctx context.Context) ([]string, error) {
	ms, err := s.db.ListModels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Path
	}
	return out, nil
}

func (s *storeAdapter) modelByPath(ctx context.Context, path string) (store.Model, bool, error) {
	ms, err := s.db.ListModels(ctx)
	if err != nil {
		return store.Model{}, false, err
	}
	for _, m := range ms {
		if m.Path == path {
			return m, true, nil
		}
	}
	return store.Model{}, false, nil
}

func (s *storeAdapter) RemoveModel(ctx context.Context, path string) error {
	m, ok, err := s.modelByPath(ctx, path)
	if err != nil || !ok {
		return err
	}
	return s.db.RemoveModel(ctx, m.ID)
}

func (s *storeAdapter) ListConversations(ctx context.Context, modelPath string) ([]ConversationSummary, error) {
	m, ok, err := s.modelByPath(ctx, modelPath)
	if err != nil || !ok {
		return nil, err
	}
	cs, err := s.db.ListConversations(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	out := make([]ConversationSummary, len(cs))
	for i, c := range cs {
		out[i] = ConversationSummary{ID: c.ID, ModelPath: modelPath, Title: c.Title, Updated: c.Updated}
	}
	return out, nil
}

func (s *storeAdapter) CreateConversation(ctx context.Context, modelPath, title string, set Settings) (int64, error) {
	m, ok, err := s.modelByPath(ctx, modelPath)
	if err != nil {
		return 0, err
	}
	if !ok { // the model was removed from the library meanwhile: put it back
		if err := s.SaveModel(ctx, modelPath, nil); err != nil {
			return 0, err
		}
		if m, _, err = s.modelByPath(ctx, modelPath); err != nil {
			return 0, err
		}
	}
	js, err := json.Marshal(set)
	if err != nil {
		return 0, err
	}
	c, err := s.db.CreateConversation(ctx, store.Conversation{ModelID: m.ID, Title: title, Settings: js})
	if err != nil {
		return 0, err
	}
	_ = s.db.TouchModel(ctx, m.ID)
	return c.ID, nil
}

// storedStats is a reply's Reply as JSON in the message's stats column.
type storedStats struct {
	PromptTokens    int     `json:"prompt_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	PrefillTokPerS  float64 `json:"prefill_tok_s"`
	DecodeTokPerS   float64 `json:"decode_tok_s"`
	TTFTMs          float64 `json:"ttft_ms"`
	StopReason      string  `json:"stop_reason,omitempty"`
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}

func toInt(ids []int32) []int {
	out := make([]int, len(ids))
	for i, v := range ids {
		out[i] = int(v)
	}
	return out
}

// sameMessage: b is the stored a, perhaps holding other tokens now (a
// reply re-rendered as text by a later turn); branches differ in text.
func sameMessage(a store.Message, b Message) bool {
	return a.Role == b.Role && a.Text == b.Text && a.Partial == IsPartial(b)
}

// continues reports whether b is a later version of the reply a, which was
// saved while it streamed: the same role, and one's tokens start the
// other's (the last token sampled may not have reached the cache).
func continues(a store.Message, b Message) bool {
	if !a.Partial || a.Role != b.Role {
		return false
	}
	ids := toInt(a.TokenIDs)
	n := min(len(ids), len(b.IDs))
	return slices.Equal(ids[:n], b.IDs[:n])
}

func messageStats(m Message) (json.RawMessage, error) {
	if m.Stats == nil {
		return nil, nil
	}
	return json.Marshal(storedStats{int(m.Stats.NumPromptTokens), int(m.Stats.NumGeneratedTokens), m.Stats.PrefillRate,
		m.Stats.DecodeRate, m.Stats.TTFTSeconds * 1000, m.StopReason})
}

// SaveTranscript keeps the longest stored prefix that matches msgs and
// branches off there: undo moves the current leaf back, an edit or a
// regeneration adds a sibling, and the earlier branch stays in the tree.
// A reply saved while streaming (Partial) is updated in place as it grows
// and when it completes.
func (s *storeAdapter) SaveTranscript(ctx context.Context, id int64, msgs []Message) error {
	_, path, err := s.db.CurrentPath(ctx, id)
	if err != nil {
		return err
	}
	common := 0
	for common < len(path) && common < len(msgs) && sameMessage(path[common], msgs[common]) {
		common++
	}
	// The kept messages take the tokens they hold now.
	pos := 0
	for i := range common {
		sm, m := path[i], msgs[i]
		if !slices.Equal(toInt(sm.TokenIDs), m.IDs) || sm.PosStart != pos {
			sm.TokenIDs, sm.PosStart, sm.PosEnd = toInt32(m.IDs), pos, pos+len(m.IDs)
			if sm.Stats, err = messageStats(m); err != nil {
				return err
			}
			if err := s.db.UpdateMessage(ctx, sm); err != nil {
				return err
			}
			path[i] = sm
		}
		pos += len(m.IDs)
	}
	var parent int64
	if common > 0 {
		parent = path[common-1].ID
	}
	if common == len(path)-1 && common < len(msgs) && continues(path[common], msgs[common]) {
		m := msgs[common]
		sm := path[common]
		sm.Text, sm.TokenIDs, sm.PosStart, sm.PosEnd, sm.Partial = m.Text, toInt32(m.IDs), pos, pos+len(m.IDs), IsPartial(m)
		if sm.Stats, err = messageStats(m); err != nil {
			return err
		}
		if err := s.db.UpdateMessage(ctx, sm); err != nil {
			return err
		}
		parent, pos = sm.ID, sm.PosEnd
		common++
	}
	if common < len(path) {
		if err := s.db.SetCurrentLeaf(ctx, id, parent); err != nil {
			return err
		}
	}
	for _, m := range msgs[common:] {
		sm := store.Message{ConversationID: id, ParentID: parent, Role: m.Role, Text: m.Text,
			TokenIDs: toInt32(m.IDs), PosStart: pos, PosEnd: pos + len(m.IDs), Partial: IsPartial(m)}
		if sm.Stats, err = messageStats(m); err != nil {
			return err
		}
		added, err := s.db.AddMessage(ctx, sm)
		if err != nil {
			return err
		}
		parent, pos = added.ID, sm.PosEnd
	}
	if title := titleOf(msgs); title != "" {
		c, err := s.db.GetConversation(ctx, id)
		if err == nil && (c.Title == "" || c.Title == "New conversation") {
			return s.db.RenameConversation(ctx, id, title)
		}
	}
	return nil
}

func titleOf(msgs []Message) string {
	if i := firstUser(msgs); i >= 0 {
		return Title(msgs[i].Text)
	}
	return ""
}

func (s *storeAdapter) SaveSettings(ctx context.Context, id int64, set Settings) error {
	js, err := json.Marshal(set)
	if err != nil {
		return err
	}
	return s.db.SetConversationSettings(ctx, id, js)
}

func (s *storeAdapter) RecordRun(ctx context.Context, id int64, m *ModelInfo, engine string, set Settings, r inference.Stats) error {
	cfg, err := json.Marshal(set)
	if err != nil {
		return err
	}
	sha := m.SHA256
	if sha == "" {
		if stored, ok, err := s.modelByPath(ctx, m.Path); err == nil && ok {
			sha = stored.SHA256
		}
	}
	run := store.Run{Kind: "chat", Engine: engine, ModelSHA256: sha, ModelPath: m.Path, ModelName: ModelName(m.Path),
		ConversationID: id, Config: cfg, AppVersion: Version,
		Started: time.UnixMilli(r.InferenceStartMs), Ended: time.UnixMilli(r.InferenceEndMs),
		Stats: r.Stats, PrefillTokS: r.PrefillRate, DecodeTokS: r.DecodeRate, TTFTMs: r.TTFTSeconds * 1000}
	if r.InferenceStartMs == 0 {
		run.Started, run.Ended = time.Now(), time.Now()
	}
	_, err = s.db.InsertRun(ctx, run, nil)
	return err
}

func (s *storeAdapter) LoadConversation(ctx context.Context, id int64) (ConversationSummary, Settings, []Message, error) {
	c, path, err := s.db.CurrentPath(ctx, id)
	if err != nil {
		return ConversationSummary{}, Settings{}, nil, err
	}
	set := DefaultSettings("auto")
	if len(c.Settings) > 0 && string(c.Settings) != "{}" {
		if err := json.Unmarshal(c.Settings, &set); err != nil {
			return ConversationSummary{}, Settings{}, nil, fmt.Errorf("conversation %d has unreadable settings (%v); start a new conversation", id, err)
		}
	}
	msgs := make([]Message, 0, len(path))
	for _, m := range path {
		msg := Message{Role: m.Role, Text: m.Text, IDs: toInt(m.TokenIDs), Start: m.PosStart}
		if len(msg.IDs) == 0 {
			msg.IDs = nil
		}
		if m.Partial {
			msg.StopReason = StopIncomplete
		}
		if len(m.Stats) > 0 {
			var st storedStats
			if json.Unmarshal(m.Stats, &st) == nil {
				msg.Stats = &inference.Stats{PrefillRate: st.PrefillTokPerS, DecodeRate: st.DecodeTokPerS, TTFTSeconds: st.TTFTMs / 1000}
				msg.Stats.NumPromptTokens, msg.Stats.NumGeneratedTokens = int64(st.PromptTokens), int64(st.GeneratedTokens)
				if !m.Partial {
					msg.StopReason = st.StopReason
				}
			}
		}
		msgs = append(msgs, msg)
	}
	sum := ConversationSummary{ID: c.ID, Title: c.Title, Updated: c.Updated}
	return sum, set, msgs, nil
}

func (s *storeAdapter) DeleteConversation(ctx context.Context, id int64) error {
	return s.db.DeleteConversation(ctx, id)
}

// siblings are the alternatives of a stored message: its parent's
// children, or the conversation's first messages.
func (s *storeAdapter) siblings(ctx context.Context, id int64, m store.Message) ([]store.Message, error) {
	if m.ParentID != 0 {
		return s.db.Children(ctx, m.ParentID)
	}
	all, err := s.db.Messages(ctx, id)
	if err != nil {
		return nil, err
	}
	var roots []store.Message
	for _, x := range all {
		if x.ParentID == 0 {
			roots = append(roots, x)
		}
	}
	return roots, nil
}

func (s *storeAdapter) Branches(ctx context.Context, id int64) ([]Branch, error) {
	_, path, err := s.db.CurrentPath(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]Branch, len(path))
	for i, m := range path {
		sib, err := s.siblings(ctx, id, m)
		if err != nil {
			return nil, err
		}
		out[i] = Branch{N: len(sib)}
		for k, x := range sib {
			if x.ID == m.ID {
				out[i].K = k + 1
			}
		}
	}
	return out, nil
}

func (s *storeAdapter) SwitchBranch(ctx context.Context, id int64, index, step int) ([]Message, error) {
	_, path, err := s.db.CurrentPath(ctx, id)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(path) {
		return nil, fmt.Errorf("message %d is not on the conversation's path", index)
	}
	sib, err := s.siblings(ctx, id, path[index])
	if err != nil {
		return nil, err
	}
	k := slices.IndexFunc(sib, func(x store.Message) bool { return x.ID == path[index].ID })
	k += step
	if k < 0 || k >= len(sib) {
		return nil, fmt.Errorf("there is no other branch that way (%d of %d)", k+1-step, len(sib))
	}
	// Follow the chosen branch down its latest messages to a leaf.
	leaf := sib[k]
	for {
		kids, err := s.db.Children(ctx, leaf.ID)
		if err != nil {
			return nil, err
		}
		if len(kids) == 0 {
			break
		}
		leaf = kids[len(kids)-1]
	}
	if err := s.db.SetCurrentLeaf(ctx, id, leaf.ID); err != nil {
		return nil, err
	}
	_, _, msgs, err := s.LoadConversation(ctx, id)
	return msgs, err
}
