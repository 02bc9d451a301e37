package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
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

// ListFilter is what the conversation list shows: the conversations whose
// title or text contains Query (all for ""), of the open model or, with
// All, of every model.
type ListFilter struct {
	Query string
	All   bool
}

// ConversationSearcher finds conversations by title and message text,
// of one model (modelPath) or of all (""). The SQLite adapter has it; a
// store without it is filtered by title here.
type ConversationSearcher interface {
	SearchConversations(ctx context.Context, query, modelPath string) ([]ConversationSummary, error)
}

// SetListFilter changes what the conversation list shows and reads it
// again.
func (c *Chat) SetListFilter(ctx context.Context, f ListFilter) error {
	f.Query = strings.TrimSpace(f.Query)
	c.mu.Lock()
	c.list = f
	c.mu.Unlock()
	return c.ReloadConversations(ctx)
}

// ListFilter is the conversation list's filter.
func (c *Chat) ListFilter() ListFilter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list
}

// listConversations reads the list for model (nil only with f.All).
func (c *Chat) listConversations(ctx context.Context, model *ModelInfo, f ListFilter) ([]ConversationSummary, error) {
	path, what := "", "all models"
	if !f.All {
		path, what = model.Path, ModelName(model.Path)
	}
	if s, ok := c.store.(ConversationSearcher); ok {
		list, err := s.SearchConversations(ctx, f.Query, path)
		if err != nil {
			return nil, fmt.Errorf("could not list the conversations of %s: %w", what, err)
		}
		return list, nil
	}
	if f.All {
		return nil, errors.New("this store cannot list the conversations of all models")
	}
	list, err := c.store.ListConversations(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("could not list the conversations of %s: %w", what, err)
	}
	return FilterConversations(list, f.Query), nil
}

// OpenListed opens a conversation from the list. One of another model
// switches the chat to that model first; m is that model as the library
// has it (nil when it is not there) and blocked why it cannot chat ("" if
// it can). When it cannot be opened the error says why and what to do.
func (c *Chat) OpenListed(ctx context.Context, sum ConversationSummary, m *ModelInfo, blocked string) error {
	name := sum.ModelName
	if sum.ModelPath != "" {
		name = ModelName(sum.ModelPath)
	}
	switch {
	case sum.ModelPath == "":
		return fmt.Errorf("%q was made with %s, which is no longer in the library: add its .pte in the Models tab to continue it (Export… still saves it)", sum.Title, name)
	case m == nil:
		return fmt.Errorf("%q was made with %s (%s), which is not in the library: add it in the Models tab to continue it", sum.Title, name, sum.ModelPath)
	case blocked != "":
		return fmt.Errorf("%q was made with %s, which cannot chat now: %s", sum.Title, name, blocked)
	}
	if cur := c.State().Model; cur == nil || cur.Path != m.Path {
		if err := c.SetModel(ctx, m); err != nil {
			return err
		}
	}
	return c.OpenConversation(sum.ID)
}

// ListLabel is a row of the conversation list: the title, the model when
// the list spans models, when it was last used, whether it is pinned, and
// the matching text of a search.
func ListLabel(c ConversationSummary, all bool) string {
	s := c.Title
	if all {
		name := c.ModelName
		if c.ModelPath != "" {
			name = ModelName(c.ModelPath)
		}
		if name != "" {
			s += " · " + name
		}
	}
	if c.Snippet != "" {
		s += " — " + c.Snippet
	}
	return s + ListStamp(c)
}

// ListStamp is a row's second line: its last use (local time; the year
// instead of the time when it is not this year's) and its pin,
// "\nMar 1 12:04 · pinned". On a line of its own it never wraps, so
// the row is two lines whatever the date's width.
func ListStamp(c ConversationSummary) string {
	s := ""
	if !c.Updated.IsZero() {
		t := c.Updated.Local()
		layout := "Jan 2 15:04"
		if t.Year() != time.Now().Year() {
			layout = "Jan 2 2006"
		}
		s = t.Format(layout)
	}
	if c.Pinned {
		s = strings.TrimPrefix(s+" · pinned", " · ")
	}
	if s == "" {
		return ""
	}
	return "\n" + s
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
