package app

import (
	"context"
	"io"
)

// The SQLite adapter's ConversationArchive (conversations_backup.go).

func (s *storeAdapter) SetPinned(ctx context.Context, id int64, pinned bool) error {
	return s.db.SetPinned(ctx, id, pinned)
}

func (s *storeAdapter) ImportConversations(ctx context.Context, r io.Reader) ([]Imported, error) {
	cs, err := s.db.ImportJSON(ctx, r)
	if err != nil {
		return nil, err
	}
	out := make([]Imported, len(cs))
	for i, c := range cs {
		title := c.Title
		if title == "" {
			title = "(untitled)"
		}
		out[i] = Imported{Title: title, Messages: c.Messages, Model: c.ModelName, Linked: c.ModelID != 0}
	}
	return out, nil
}

func (s *storeAdapter) ExportAll(ctx context.Context, w io.Writer, format string) error {
	if format == "json" {
		return s.db.ExportJSON(ctx, w)
	}
	return s.db.ExportMarkdown(ctx, w)
}

func (s *storeAdapter) BackupDB(ctx context.Context, path string) error {
	return s.db.Backup(ctx, path)
}

func (s *storeAdapter) RestoreDB(ctx context.Context, path string) error {
	return s.db.Restore(ctx, path)
}
