// SetSystem: a new system prompt for a conversation under way.

package inference

// SetSystem makes text the conversation's system prompt ("" removes it).
// The prompt is where the rendering starts, so nothing cached after token
// 0 stays valid: the cache is cleared and every message is kept as text (a
// reply keeps the ids it was generated as), and the next turn reads the
// whole history again under the new prompt, as for a reopened history kept
// as text. The messages themselves do not change.
func (c *Conversation) SetSystem(text string) error {
	var msgs []Message
	if text != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Text: text})
	}
	for _, m := range cloneMessages(c.msgs) {
		if m.Role == RoleSystem {
			continue
		}
		m.IDs, m.Start = nil, 0
		msgs = append(msgs, m)
	}
	err := c.sess.Clear()
	c.msgs, c.cache = msgs, nil
	return err
}

// System is the conversation's system prompt ("" when it has none).
func (c *Conversation) System() string {
	if len(c.msgs) > 0 && c.msgs[0].Role == RoleSystem {
		return c.msgs[0].Text
	}
	return ""
}
