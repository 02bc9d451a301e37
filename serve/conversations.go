package serve

// --store-conversations: chat requests saved as conversations the app can
// reopen. A chat client resends the whole history each turn, so a request
// whose messages extend a conversation the server stored (its messages
// and the reply it gave) is appended to it — through the store's one
// conversation-tree writer, SaveTranscript, which also branches where a
// client regenerated or edited — and any other starts one. The server
// remembers which conversation ended how while it runs: after a restart a
// continued chat starts a new conversation.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"etchat/inference"
	"etchat/inference/chattmpl"
	"etchat/internal/runlog"
	"etchat/store"
)

// conversations maps a stored conversation's current path (roles and
// texts) to its id.
type conversations struct {
	mu     sync.Mutex
	byPath map[[32]byte]int64
}

func pathKey(msgs []inference.Message) [32]byte {
	h := sha256.New()
	for _, m := range msgs {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Text))
		h.Write([]byte{0})
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// storeConversation saves a chat request and its first choice's reply as
// a conversation, when the server stores them. Failures are logged, never
// the request's.
func (s *Server) storeConversation(e *entry, req *request, o *outcome) {
	if !s.opts.StoreConversations || s.opts.Store == nil || !req.IsChat || o.err != nil || len(o.choices) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	msgs := append(append([]inference.Message(nil), req.Messages...),
		inference.Message{Role: inference.RoleAssistant, Text: o.choices[0].text, ToolCalls: o.choices[0].calls})
	s.convs.mu.Lock()
	defer s.convs.mu.Unlock()
	if s.convs.byPath == nil {
		s.convs.byPath = map[[32]byte]int64{}
	}
	var id int64
	for k := len(req.Messages); k > 0 && id == 0; k-- {
		id = s.convs.byPath[pathKey(req.Messages[:k])]
	}
	if id == 0 {
		var err error
		if id, err = s.newConversation(ctx, e, req, o); err != nil {
			s.logf("storing a conversation: %v", err)
			return
		}
	}
	stored, err := runlog.StoreMessages(withCalls(req, msgs))
	if err == nil {
		err = s.opts.Store.SaveTranscript(ctx, id, stored, runlog.Title(msgs))
	}
	if err != nil {
		s.logf("storing conversation %d: %v", id, err)
		return
	}
	s.convs.byPath[pathKey(msgs)] = id
}

// newConversation creates a conversation for e's model (adding it to the
// library when it is not there) with the request's sampling as settings.
func (s *Server) newConversation(ctx context.Context, e *entry, req *request, o *outcome) (int64, error) {
	db := s.opts.Store
	m, err := db.ModelByPath(ctx, e.path)
	if errors.Is(err, store.ErrNotFound) {
		m, err = runlog.SaveModel(ctx, db, e.path, e.prep.Info)
	}
	if err != nil {
		return 0, err
	}
	set := runlog.ChatSettings{Engine: e.loaded.Engine.Name, Capacity: e.policy.Capacity, StorageDType: e.policy.StorageDType,
		InitialCapacity: e.policy.InitialCapacity, Temperature: req.Sampling.Temperature, TopK: req.Sampling.TopK,
		TopP: req.Sampling.TopP, Seed: int64(o.seed), MaxNewTokens: max(0, req.MaxTokens)}
	if len(req.Messages) > 0 && req.Messages[0].Role == inference.RoleSystem {
		set.SystemPrompt = req.Messages[0].Text
	}
	js, err := json.Marshal(set)
	if err != nil {
		return 0, err
	}
	c, err := db.CreateConversation(ctx, store.Conversation{ModelID: m.ID, Title: runlog.Title(req.Messages), Settings: js})
	return c.ID, err
}

// withCalls is msgs with each message's tool calls appended to its text
// in the model's own format (the store keeps a message's text; rendered
// again, the calls are what the model wrote). Without tools in the
// request the format is unknown and the calls are left out.
func withCalls(req *request, msgs []inference.Message) []inference.Message {
	if !req.Tools.calls() || req.Tools.format == "" {
		return msgs
	}
	out := append([]inference.Message(nil), msgs...)
	for i, m := range out {
		if len(m.ToolCalls) > 0 {
			out[i].Text = strings.TrimSpace(m.Text + chattmpl.FormatToolCalls(req.Tools.format, m.ToolCalls))
		}
	}
	return out
}
