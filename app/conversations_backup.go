package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Conversations beyond chatting (issue 40 item 5): pin, import what
// `etchat history --import` reads, export all, back up the whole database
// while the app runs, and restore a backup when no other window has the
// database open.

// ConversationArchive is what the store offers for that (the SQLite
// adapter, backend_archive.go). Apart from ChatStore so that fakes of
// that port need not grow.
type ConversationArchive interface {
	SetPinned(ctx context.Context, id int64, pinned bool) error
	// ImportConversations re-creates the conversations of an etchat JSON
	// export, all or none (store.ImportJSON).
	ImportConversations(ctx context.Context, r io.Reader) ([]Imported, error)
	// ExportAll writes every conversation as Markdown ("md") or JSON.
	ExportAll(ctx context.Context, w io.Writer, format string) error
	BackupDB(ctx context.Context, path string) error
	RestoreDB(ctx context.Context, path string) error
}

// Imported is one conversation an import created.
type Imported struct {
	Title    string
	Messages int
	Model    string // the model's name as the export recorded it
	Linked   bool   // the model (by its hash) is in the library
}

// archive is the store's ConversationArchive, or an error saying why not.
func (c *Chat) archive() (ConversationArchive, error) {
	if a, ok := c.store.(ConversationArchive); ok && c.store != nil {
		return a, nil
	}
	return nil, errors.New("the database is not open: conversations cannot be pinned, imported, exported or backed up")
}

// SetPinned pins (or unpins) conversation id: pinned ones list first.
func (c *Chat) SetPinned(ctx context.Context, id int64, pinned bool) error {
	a, err := c.archive()
	if err != nil {
		return err
	}
	if err := a.SetPinned(ctx, id, pinned); err != nil {
		return fmt.Errorf("could not pin the conversation: %w", err)
	}
	return c.ReloadConversations(ctx)
}

// Pinned reports whether the open conversation is pinned, as the list
// has it (false when none is open).
func (c *Chat) Pinned() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.st.Conversations {
		if s.ID == c.st.ConvID && c.st.ConvID != 0 {
			return s.Pinned
		}
	}
	return false
}

// ImportConversations imports the etchat JSON export r (named name, for
// the messages) and says what it added. A file refused (malformed, not
// an export, or holding a conversation already here) imports nothing,
// and the error says why, as `etchat history --import` does.
func (c *Chat) ImportConversations(ctx context.Context, r io.Reader, name string) (string, error) {
	a, err := c.archive()
	if err != nil {
		return "", err
	}
	got, err := a.ImportConversations(ctx, r)
	if err != nil {
		return "", fmt.Errorf("nothing was imported from %s: %w", name, err)
	}
	if err := c.ReloadConversations(ctx); err != nil {
		return "", err
	}
	return ImportNote(got), nil
}

// ImportNote says what an import added, one line per conversation.
func ImportNote(got []Imported) string {
	if len(got) == 0 {
		return "The file holds no conversations: nothing was imported."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Imported %d conversation%s:", len(got), map[bool]string{true: "", false: "s"}[len(got) == 1])
	for _, g := range got {
		where := "listed under All models: its model is not in the library"
		if g.Linked {
			where = "with its model"
		}
		fmt.Fprintf(&b, "\n%s (%d messages, %s; %s)", g.Title, g.Messages, g.Model, where)
	}
	return b.String()
}

// ExportAll writes every conversation of every model to w as Markdown
// ("md") or lossless JSON ("json", what Import reads back).
func (c *Chat) ExportAll(ctx context.Context, w io.Writer, format string) error {
	if format != "md" && format != "json" {
		return fmt.Errorf("export as %q: choose md or json", format)
	}
	a, err := c.archive()
	if err != nil {
		return err
	}
	if err := a.ExportAll(ctx, w, format); err != nil {
		return fmt.Errorf("could not export the conversations: %w", err)
	}
	return nil
}

// BackupDatabase writes a copy of the whole database (models,
// conversations, runs) to path. It is safe while replies stream and other
// windows write: the copy holds exactly the turns committed before it
// began.
func (c *Chat) BackupDatabase(ctx context.Context, path string) error {
	a, err := c.archive()
	if err != nil {
		return err
	}
	if err := a.BackupDB(ctx, path); err != nil {
		return fmt.Errorf("the database was not backed up: %w", err)
	}
	return nil
}

// RestoreBlockedError is a restore refused before anything was read:
// Reason says what holds the database and what to do.
type RestoreBlockedError struct{ Reason string }

func (e *RestoreBlockedError) Error() string {
	return "the database was not restored: " + e.Reason
}

// RestoreDatabase replaces the whole database with the backup at path.
// blocked, when not "", is why the window cannot restore now (another
// window has the database open; the server runs): refused with it. A
// streaming reply refuses it too. The open conversation is closed (it
// may not be in the backup; the message box is kept) and the list read
// again.
func (c *Chat) RestoreDatabase(ctx context.Context, path, blocked string) error {
	if blocked != "" {
		return &RestoreBlockedError{Reason: blocked}
	}
	a, err := c.archive()
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.st.Busy {
		c.mu.Unlock()
		return &RestoreBlockedError{Reason: "a reply is being written: wait for it or press Stop, then restore"}
	}
	c.closeLocked()
	c.st.ConvID, c.st.Title, c.st.Branches, c.st.Messages = 0, "", nil, nil
	c.mu.Unlock()
	c.changed()
	if err := a.RestoreDB(ctx, path); err != nil {
		return fmt.Errorf("the database was not restored: %w", err)
	}
	return c.ReloadConversations(ctx)
}
