package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"etchat/inference"
	"etchat/internal/runlog"
	"etchat/store"
)

// chatLog keeps an interactive chat in the database the way the app keeps
// its chats, so that it appears in the app and in etchat history: the model
// in the library, one conversation whose tree the store grows turn by turn
// (store.DB.SaveTranscript), and a chat run per reply.
type chatLog struct {
	db       *store.DB
	modelID  int64
	model    runlog.Model
	engine   string
	numerics string // the session's mode, recorded with each reply
	settings json.RawMessage
	convID   int64     // 0 until the first turn is saved
	warn     io.Writer // where a failed save is reported; the chat goes on
}

// openChatLog opens the database of --db and puts the model in its library.
func openChatLog(ctx context.Context, env *Env, o *runOpts, m *inference.Model) (*chatLog, error) {
	db, err := openStore(ctx, env, o.db)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(o.pte)
	if err != nil {
		db.Close()
		return nil, err
	}
	row, err := runlog.SaveModel(ctx, db, abs, m.Info)
	if err != nil {
		db.Close()
		return nil, storeError(err)
	}
	// The dtype the cache uses: a model's own default (its activation
	// dtype) is stored as the choice it became, so a reopen keeps it.
	dtype := o.cache.dtype
	if dtype == "" && m.Cache != nil {
		dtype = m.Cache.DType.Flag()
	}
	settings, err := json.Marshal(runlog.ChatSettings{Engine: o.engine, Capacity: o.cache.capacity, StorageDType: dtype,
		InitialCapacity: o.cache.initial, Windows: o.cache.windows, Temperature: o.temperature, TopK: o.topK, TopP: o.topP,
		Seed: int64(o.seed), MaxNewTokens: o.maxNew, Numerics: o.numerics.value})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &chatLog{db: db, modelID: row.ID, model: runlog.Model{Path: abs, SHA256: row.SHA256}, engine: m.Engine.Name, numerics: m.Numerics(),
		settings: settings, warn: env.Stderr}, nil
}

// save stores the conversation's transcript as its current path. A chat
// with nothing said yet is not stored. A failure is reported and the chat
// goes on: the next save writes the whole transcript again.
func (l *chatLog) save(ctx context.Context, conv *inference.Conversation) {
	if l == nil { // no --db
		return
	}
	msgs := conv.Messages()
	if l.convID == 0 && !hasTurn(msgs) {
		return
	}
	if err := l.trySave(ctx, msgs); err != nil {
		fmt.Fprintf(l.warn, "[not saved to %s: %v]\n", l.db.File(), store.Explain(err))
	}
}

func hasTurn(msgs []inference.Message) bool {
	for _, m := range msgs {
		if m.Role != inference.RoleSystem {
			return true
		}
	}
	return false
}

func (l *chatLog) trySave(ctx context.Context, msgs []inference.Message) error {
	if l.convID == 0 {
		c, err := l.db.CreateConversation(ctx, store.Conversation{ModelID: l.modelID, Title: store.DefaultTitle, Settings: l.settings})
		if err != nil {
			return err
		}
		l.convID = c.ID
		_ = l.db.TouchModel(ctx, l.modelID) // the app lists recently used models first; only an order is lost
	}
	sms, err := runlog.StoreMessages(msgs)
	if err != nil {
		return err
	}
	return l.db.SaveTranscript(ctx, l.convID, sms, runlog.Title(msgs))
}

// reply stores a reply's measurements as a chat run of the conversation.
func (l *chatLog) reply(ctx context.Context, r *inference.Reply) {
	if l == nil || l.convID == 0 || r == nil || r.Result == nil {
		return
	}
	run := runlog.Run(store.RunChat, l.model, l.engine, r.Stats)
	run.ConversationID, run.Config, run.AppVersion, run.Numerics = l.convID, l.settings, Version, l.numerics
	if _, err := l.db.InsertRun(ctx, run, nil); err != nil {
		fmt.Fprintf(l.warn, "[the reply's measurements were not saved to %s: %v]\n", l.db.File(), store.Explain(err))
	}
}

func (l *chatLog) Close() error {
	if l == nil {
		return nil
	}
	return l.db.Close()
}
