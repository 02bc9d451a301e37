package serve

// The server's run records: each admitted request becomes a store run of
// kind "api", built by runlog like every other front end's, with the
// request's settings and the cached-token count in its config.

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"etchat/inference"
	"etchat/inference/modelinfo"
	"etchat/internal/runlog"
	"etchat/store"
)

// recordTimeout bounds a run's write, so a locked database cannot hold a
// request (or the shutdown) for long.
const recordTimeout = 10 * time.Second

// hashes caches each model file's sha256 (a run names its model by it).
var hashes sync.Map // path → string

func modelSHA(path string) string {
	if v, ok := hashes.Load(path); ok {
		return v.(string)
	}
	sum, err := modelinfo.HashFile(path)
	if err != nil {
		return ""
	}
	hashes.Store(path, sum)
	return sum
}

// record stores o as a run, when the server has a store. A failure to
// store is logged, never the request's failure.
func (s *Server) record(e *entry, req *request, body []byte, o *outcome) {
	if s.opts.Store == nil {
		return
	}
	endpoint := "/v1/completions"
	if req.IsChat {
		endpoint = "/v1/chat/completions"
	}
	cfg := map[string]any{
		"endpoint": endpoint, "stream": req.Stream, "max_tokens": req.MaxTokens, "temperature": req.Sampling.Temperature,
		"top_p": req.Sampling.TopP, "top_k": req.Sampling.TopK, "seed": req.Sampling.Seed, "stop": len(req.Stop),
		"prompt_tokens": len(o.prompt), "finish_reason": o.finish, "status": o.status, "queued_ms": o.queued.Milliseconds(),
		"device": e.loaded.Engine.Device, "engine_reason": e.loaded.Engine.Reason,
	}
	if e.loaded.Cache != nil {
		cfg["kv_max_capacity"], cfg["kv_storage_dtype"] = e.loaded.Cache.Capacity, e.policy.StorageDType
	}
	var st inference.Stats
	if o.res != nil && o.res.Result != nil {
		st = o.res.Stats
		e.loaded.StatsBase(&st)
		cfg["cached_tokens"], cfg["reprefilled"] = o.res.Cached, o.res.Reprefilled
		// The stats count the tokens actually fed; the run counts the
		// whole prompt, cached part included.
		cfg["prefilled_tokens"] = st.NumPromptTokens
	}
	run := runlog.Run(store.RunAPI, runlog.Model{Path: e.path, SHA256: modelSHA(e.path)}, e.loaded.Engine.Name, st)
	run.ModelName, run.AppVersion = e.id, s.opts.Version // the name clients ask for
	run.Numerics = e.loaded.Numerics()
	if o.res != nil && o.res.Result != nil {
		run.Stats.NumPromptTokens = int64(len(o.prompt))
	} else {
		run.Started = o.started // nothing ran: the record's time is the request's
	}
	if o.err != nil {
		run.Error = o.err.Error()
	}
	if s.opts.LogRequests {
		cfg["request"] = json.RawMessage(body)
		if !json.Valid(body) {
			cfg["request"] = string(body)
		}
	}
	run.Config, _ = json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if _, err := s.opts.Store.InsertRun(ctx, run, nil); err != nil {
		s.logf("storing the run of a %s request: %v", endpoint, err)
	}
}
