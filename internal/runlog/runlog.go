// Package runlog is what etchat records of its work in the store, built in
// one place for every front end (the app, etchat run, bench and the server):
// a finished generation's run record, a conversation's messages as the
// store keeps them and back, and a model's library row.
//
// It is the glue between inference and store, so that neither knows the
// other.
package runlog

import (
	"path/filepath"
	"time"

	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/store"
)

// Model is the model a run used: its file and, when known, its sha256 (the
// library's, or modelinfo.HashFile's); runs are grouped by the hash.
type Model struct {
	Path   string
	SHA256 string
}

// Run is the store's record of one finished generation of the given kind
// (store.RunChat, …) by engine on model: its stats, rates and memory, the
// model named by modelinfo.DisplayName, and the time of the inference. The
// caller adds what only it knows (ConversationID, Config, AppVersion)
// before store.DB.InsertRun.
func Run(kind string, m Model, engine string, st inference.Stats) store.Run {
	path := m.Path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	r := store.Run{Kind: kind, Engine: engine, ModelSHA256: m.SHA256, ModelPath: path, ModelName: modelinfo.DisplayName(path),
		Started: time.UnixMilli(st.InferenceStartMs), Ended: time.UnixMilli(st.InferenceEndMs),
		Stats: st.Stats, PrefillTokS: st.PrefillRate, DecodeTokS: st.DecodeRate, TTFTMs: st.TTFTSeconds * 1000,
		Memory: store.Memory{AfterLoad: st.MemAfterLoad.ActiveBytes, AfterPrefill: st.MemAfterPrefill.ActiveBytes,
			AfterDecode: st.MemAfterDecode.ActiveBytes, Peak: st.PeakBytes}}
	if st.InferenceStartMs == 0 { // stats without clocks (nothing was generated): the record's time is now
		now := time.Now()
		r.Started, r.Ended = now, now
	}
	return r
}
