package app

import (
	"context"
	"io"
)

// RenameConversation sets a conversation's title.
func (s *storeAdapter) RenameConversation(ctx context.Context, id int64, title string) error {
	return s.db.RenameConversation(ctx, id, title)
}

// ExportConversation writes one conversation with the store's exporters,
// the ones `etchat history --export-conversation` uses.
func (s *storeAdapter) ExportConversation(ctx context.Context, w io.Writer, id int64, format string) error {
	if format == "json" {
		return s.db.ExportJSON(ctx, w, id)
	}
	return s.db.ExportMarkdown(ctx, w, id)
}
