package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ConversationAdmin is what the chat's conversation list does besides
// chatting: rename and export. A store that has it (the SQLite adapter)
// offers it; it is apart from ChatStore so fakes of that port need not
// grow.
type ConversationAdmin interface {
	RenameConversation(ctx context.Context, id int64, title string) error
	// ExportConversation writes one conversation as `etchat history
	// --export-conversation ID --format md|json` does.
	ExportConversation(ctx context.Context, w io.Writer, id int64, format string) error
}

// admin is the store's ConversationAdmin, or an error saying why not.
func (c *Chat) admin() (ConversationAdmin, error) {
	if a, ok := c.store.(ConversationAdmin); ok && c.store != nil {
		return a, nil
	}
	return nil, errors.New("conversations cannot be renamed or exported: the database is not open")
}

// RenameConversation gives conversation id a new title (trimmed, not
// empty) and lists it under that.
func (c *Chat) RenameConversation(ctx context.Context, id int64, title string) error {
	title = strings.TrimSpace(title)
	if title == "" {
		return errors.New("a conversation needs a title: type one, or press Cancel")
	}
	a, err := c.admin()
	if err != nil {
		return err
	}
	if err := a.RenameConversation(ctx, id, title); err != nil {
		return fmt.Errorf("could not rename the conversation: %w", err)
	}
	c.mu.Lock()
	if c.st.ConvID == id {
		c.st.Title = title
	}
	c.mu.Unlock()
	return c.ReloadConversations(ctx)
}

// ExportFormat is the export format a file name asks for: json for .json,
// else Markdown.
func ExportFormat(name string) string {
	if strings.HasSuffix(strings.ToLower(name), ".json") {
		return "json"
	}
	return "md"
}

// ExportConversation writes conversation id to w as Markdown ("md") or
// JSON ("json"), the CLI's formats.
func (c *Chat) ExportConversation(ctx context.Context, w io.Writer, id int64, format string) error {
	if format != "md" && format != "json" {
		return fmt.Errorf("export as %q: choose md or json", format)
	}
	a, err := c.admin()
	if err != nil {
		return err
	}
	if err := a.ExportConversation(ctx, w, id, format); err != nil {
		return fmt.Errorf("could not export the conversation: %w", err)
	}
	return nil
}

// FilterConversations are the conversations whose title contains query
// (case-insensitive); all of them for an empty query.
func FilterConversations(list []ConversationSummary, query string) []ConversationSummary {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" {
		return list
	}
	var out []ConversationSummary
	for _, c := range list {
		if strings.Contains(strings.ToLower(c.Title), q) {
			out = append(out, c)
		}
	}
	return out
}
