package app

import (
	"context"
	"errors"

	"etchat/internal/runlog"
	"etchat/store"
)

// SearchConversations finds conversations by title and message text with
// the store's search, of the model at modelPath or of all ("").
func (s *storeAdapter) SearchConversations(ctx context.Context, query, modelPath string) ([]ConversationSummary, error) {
	var modelID int64
	if modelPath != "" {
		m, err := s.db.ModelByPath(ctx, modelPath)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil // not in the database yet: no conversations
		}
		if err != nil {
			return nil, err
		}
		modelID = m.ID
	}
	hs, err := s.db.SearchConversations(ctx, query, modelID)
	if err != nil {
		return nil, err
	}
	out := make([]ConversationSummary, len(hs))
	for i, h := range hs {
		out[i] = ConversationSummary{ID: h.ID, ModelPath: h.ModelPath, ModelName: h.ModelName, Title: h.Title, Updated: h.Updated, Snippet: h.Snippet, Pinned: h.Pinned}
	}
	return out, nil
}

// DeleteBranch deletes message index of the current path and what follows
// it, continuing with an alternative; it returns the new current path.
func (s *storeAdapter) DeleteBranch(ctx context.Context, id int64, at Revision, index int) ([]Message, Revision, error) {
	path, rev, err := s.db.DeleteBranchAt(ctx, id, &at, index)
	if err != nil {
		return nil, Revision{}, err
	}
	return runlog.Messages(path), rev, nil
}

// PathAfterDeleteBranch is the current path DeleteBranch would leave; it
// deletes nothing.
func (s *storeAdapter) PathAfterDeleteBranch(ctx context.Context, id int64, index int) ([]Message, error) {
	path, err := s.db.PathAfterDeleteBranch(ctx, id, index)
	if err != nil {
		return nil, err
	}
	return runlog.Messages(path), nil
}
