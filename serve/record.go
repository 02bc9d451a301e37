package serve

// The one place the server records a run: each admitted request becomes a
// store run of kind "api" with ExecuTorch's stats and the cached-token
// count. Kept in this file alone so that it can move to a shared run
// recorder.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"time"

	"etchat/inference/modelinfo"
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
	run := store.Run{Kind: store.RunAPI, Engine: e.loaded.Engine.Name, ModelSHA256: modelSHA(e.path), ModelName: e.id,
		AppVersion: s.opts.Version, Started: o.started, Ended: time.Now()}
	run.ModelPath, _ = filepath.Abs(e.path)
	if o.err != nil {
		run.Error = o.err.Error()
	}
	if o.res != nil && o.res.Result != nil {
		st := o.res.Stats
		e.loaded.StatsBase(&st)
		cfg["cached_tokens"], cfg["reprefilled"] = o.res.Cached, o.res.Reprefilled
		// The stats count the whole prompt; the prefill rate is over the
		// tokens actually fed.
		cfg["prefilled_tokens"] = st.NumPromptTokens
		run.Stats, run.PrefillTokS, run.DecodeTokS, run.TTFTMs = st.Stats, st.PrefillRate, st.DecodeRate, st.TTFTSeconds*1000
		run.Stats.NumPromptTokens = int64(len(o.prompt))
		run.Memory = store.Memory{AfterLoad: st.MemAfterLoad.ActiveBytes, AfterPrefill: st.MemAfterPrefill.ActiveBytes,
			AfterDecode: st.MemAfterDecode.ActiveBytes, Peak: st.PeakBytes}
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
