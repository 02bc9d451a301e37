package app

import (
	"context"
	"encoding/json"
	"fmt"

	"etchat/inference"
	"etchat/internal/runlog"
	"etchat/store"
)

// storeAdapter serves the library, chat and run ports from the etchat
// database.
type storeAdapter struct {
	db *store.DB
}

// NewStoreAdapter adapts db to the app's ports.
func NewStoreAdapter(db *store.DB) *storeAdapter { return &storeAdapter{db: db} }

func (s *storeAdapter) SaveModel(ctx context.Context, path string, info *ModelInfo) error {
	_, err := runlog.SaveModel(ctx, s.db, path, info)
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
		out[i] = ConversationSummary{ID: c.ID, ModelPath: modelPath, Title: c.Title, Updated: c.Updated, Pinned: c.Pinned}
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

// SaveTranscript makes msgs the conversation's current path, in one
// transaction (store.DB.SaveTranscript says how the tree grows).
func (s *storeAdapter) SaveTranscript(ctx context.Context, id int64, at Revision, discard bool, msgs []Message) (Revision, error) {
	sms, err := runlog.StoreMessages(msgs)
	if err != nil {
		return Revision{}, err
	}
	return s.db.SaveTranscriptAs(ctx, id, store.SaveOptions{Seen: &at, Discard: discard}, sms, runlog.Title(msgs))
}

// Settings are stored as runlog.ChatSettings, the shape etchat run
// --interactive writes too; the conversion fails to compile if they drift.
var _ = runlog.ChatSettings(Settings{})

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
	run := runlog.Run(store.RunChat, runlog.Model{Path: m.Path, SHA256: sha}, engine, r)
	run.ConversationID, run.Config, run.AppVersion, run.Numerics = id, cfg, Version, set.Numerics
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
	msgs := runlog.Messages(path)
	sum := ConversationSummary{ID: c.ID, Title: c.Title, Updated: c.Updated, Seen: Revision{N: c.Revision, Leaf: c.CurrentLeaf}}
	return sum, set, msgs, nil
}

func (s *storeAdapter) DeleteConversation(ctx context.Context, id int64) error {
	return s.db.DeleteConversation(ctx, id)
}

func (s *storeAdapter) Branches(ctx context.Context, id int64) ([]Branch, error) {
	bs, err := s.db.Branches(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]Branch, len(bs))
	for i, b := range bs {
		out[i] = Branch(b)
	}
	return out, nil
}

func (s *storeAdapter) SwitchBranch(ctx context.Context, id int64, at Revision, index, step int) ([]Message, Revision, error) {
	path, rev, err := s.db.SwitchBranchAt(ctx, id, &at, index, step)
	if err != nil {
		return nil, Revision{}, err
	}
	return runlog.Messages(path), rev, nil
}
