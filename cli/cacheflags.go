package cli

import (
	"flag"

	"etchat/inference/kvcache"
)

// cacheFlags are the runner's off-graph cache flags, shared by inspect, run
// and the app's settings so they mean the same everywhere.
type cacheFlags struct {
	capacity int
	dtype    string
	initial  int
	windows  string
}

func (c *cacheFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&c.capacity, "kv-max-capacity", 0, "off-graph: most tokens the cache holds (0 = the model's get_max_ctx_len)")
	fs.StringVar(&c.dtype, "kv-storage-dtype", "bf16", "off-graph: KV storage dtype, bf16|fp16|fp32")
	fs.IntVar(&c.initial, "kv-initial-capacity", -1, "off-graph: starting pool size in tokens; pools double up to the capacity (-1 = 512)")
	fs.StringVar(&c.windows, "kv-windows", "", "off-graph: attention pattern to impose, comma list of windows repeated over the layers (0 = flat), e.g. \"512\"")
}

func (c *cacheFlags) policy() kvcache.Policy {
	return kvcache.Policy{Capacity: c.capacity, StorageDType: c.dtype, InitialCapacity: c.initial, Windows: c.windows}
}
