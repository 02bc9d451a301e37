// The library's chat check (can the tokenizer and template next to a model
// be used?), remembered per file so a rescan does not load them again.

package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"etchat/inference"
)

// chatFiles are the files next to a model that inference.LoadChat reads
// (tokenizer.json is given by its own path): the template's and the stop
// set's sources.
var chatFiles = []string{"tokenizer_config.json", "chat_template.jinja", "chat_template.json", "generation_config.json", "config.json"}

// chatCheck is what CheckChat found: the template chosen ("none": raw text
// only) or why the files cannot be used.
type chatCheck struct {
	template string
	err      error
}

// chatChecks remembers checks by chatKey for the process: loading a
// 262k-token tokenizer.json takes a good part of a second, and every scan
// (start, Rescan, Add) checked every model again. A file that changes
// (size or modification time) has another key and is checked again.
var chatChecks = struct {
	sync.Mutex
	m map[string]chatCheck
}{m: map[string]chatCheck{}}

// chatCheckLoads counts the checks that loaded the files (tests).
var chatCheckLoads atomic.Int64

// chatKey names the files a check reads, as they are now: each one's real
// path (symlinks resolved), size and modification time, or its absence.
func chatKey(tokenizer, dir string) string {
	var b strings.Builder
	for _, p := range append([]string{tokenizer}, joinAll(dir, chatFiles)...) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		fi, err := os.Stat(real)
		if err != nil {
			fmt.Fprintf(&b, "%s:-\n", real)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d\n", real, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

func joinAll(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// checkChatCached is inference.LoadChat's verdict on the model's tokenizer
// and template (the template's name, or its typed error), from the
// remembered checks when the files are unchanged.
func checkChatCached(m *ModelInfo) (string, error) {
	dir := filepath.Dir(m.Path)
	key := chatKey(m.Companion.Tokenizer, dir)
	chatChecks.Lock()
	c, ok := chatChecks.m[key]
	chatChecks.Unlock()
	if ok {
		return c.template, c.err
	}
	chatCheckLoads.Add(1)
	chat, err := inference.LoadChat(m.Companion.Tokenizer, dir, "auto", nil)
	if err == nil {
		c.template = chat.TemplateName
	}
	c.err = err
	chatChecks.Lock()
	chatChecks.m[key] = c
	chatChecks.Unlock()
	return c.template, c.err
}
