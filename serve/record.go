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

// record stores o as runs, one per generated choice (one when nothing
// ran), when the server has a store. A failure to store is logged, never
// the request's failure.
func (s *Server) record(e *entry, req *request, body []byte, o *outcome) {
	if s.opts.Store == nil {
		return
	}
	if len(o.choices) == 0 {
		s.recordChoice(e, req, body, o, &choice{err: o.err})
	}
	for _, c := range o.choices {
		s.recordChoice(e, req, body, o, c)
	}
}

// recordChoice stores one choice's run: the request's settings with the
// seed the sampler used (the clock's when the request gave none), and
// with --log-requests the request's body and the reply's text.
func (s *Server) recordChoice(e *entry, req *request, body []byte, o *outcome, c *choice) {
	endpoint := "/v1/completions"
	if req.IsChat {
		endpoint = "/v1/chat/completions"
	}
	cfg := map[string]any{
		"endpoint": endpoint, "stream": req.Stream, "max_tokens": req.MaxTokens, "temperature": req.Sampling.Temperature,
		"top_p": req.Sampling.TopP, "top_k": req.Sampling.TopK, "seed": o.seed, "stop": len(req.Stop),
		"prompt_tokens": len(o.prompt), "finish_reason": c.finish, "status": o.status, "queued_ms": o.queued.Milliseconds(),
		"device": e.loaded.Engine.Device, "engine_reason": e.loaded.Engine.Reason,
	}
	if req.N > 1 {
		cfg["n"], cfg["choice"] = req.N, c.index
	}
	if req.Logprobs {
		cfg["logprobs"], cfg["top_logprobs"] = true, req.TopLogprobs
	}
	if e.loaded.Cache != nil {
		cfg["kv_max_capacity"], cfg["kv_storage_dtype"] = e.loaded.Cache.Capacity, e.policy.StorageDType
	}
	var st inference.Stats
	ran := c.res != nil && c.res.Result != nil
	if ran {
		st = c.res.Stats
		e.loaded.StatsBase(&st)
		cfg["cached_tokens"], cfg["reprefilled"] = c.res.Cached, c.res.Reprefilled
		// The stats count the tokens actually fed; the run counts the
		// whole prompt, cached part included.
		cfg["prefilled_tokens"] = st.NumPromptTokens
	}
	run := runlog.Run(store.RunAPI, runlog.Model{Path: e.path, SHA256: modelSHA(e.path)}, e.loaded.Engine.Name, st)
	run.ModelName, run.AppVersion = e.id, s.opts.Version // the name clients ask for
	run.Numerics = e.loaded.Numerics()
	if ran {
		run.Stats.NumPromptTokens = int64(len(o.prompt))
	} else {
		run.Started = o.started // nothing ran: the record's time is the request's
	}
	if c.err != nil {
		run.Error = c.err.Error()
	}
	if s.opts.LogRequests {
		cfg["request"] = json.RawMessage(body)
		if !json.Valid(body) {
			cfg["request"] = string(body)
		}
		if ran {
			cfg["reply"] = c.text
		}
	}
	run.Config, _ = json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if _, err := s.opts.Store.InsertRun(ctx, run, nil); err != nil {
		s.logf("storing the run of a %s request: %v", endpoint, err)
	}
}
