package cli

import (
	"flag"
	"strings"

	"etchat/inference/kvcache"
)

// cacheFlags are the runner's off-graph cache flags, shared by inspect, run
// and the app's settings so they mean the same everywhere. Their defaults
// are kvcache.DefaultPolicy's.
type cacheFlags struct {
	capacity int
	dtype    string
	initial  int
	windows  string
}

// cacheFlag is the flag of each cache policy field.
var cacheFlag = map[kvcache.Field]string{
	kvcache.FieldCapacity:        "kv-max-capacity",
	kvcache.FieldStorageDType:    "kv-storage-dtype",
	kvcache.FieldWindows:         "kv-windows",
	kvcache.FieldInitialCapacity: "kv-initial-capacity",
}

func (c *cacheFlags) register(fs *flag.FlagSet) {
	def := kvcache.DefaultPolicy()
	fs.IntVar(&c.capacity, cacheFlag[kvcache.FieldCapacity], def.Capacity, "off-graph: most tokens the cache holds, at most the model's context (get_max_ctx_len or get_max_context_len; 0 = that)")
	fs.StringVar(&c.dtype, cacheFlag[kvcache.FieldStorageDType], def.StorageDType, "off-graph: KV storage dtype, bf16|fp16|fp32 (default: the model's get_activation_dtype, else bf16)")
	fs.IntVar(&c.initial, cacheFlag[kvcache.FieldInitialCapacity], def.InitialCapacity, "off-graph: starting pool size in tokens; pools double up to the capacity (-1 = 512)")
	fs.StringVar(&c.windows, cacheFlag[kvcache.FieldWindows], def.Windows, "off-graph: attention pattern to impose, comma list of windows repeated over the caches (get_n_caches; 0 = flat), e.g. \"512\"")
}

func (c *cacheFlags) policy() kvcache.Policy {
	return kvcache.Policy{Capacity: c.capacity, StorageDType: c.dtype, InitialCapacity: c.initial, Windows: c.windows}
}

// check is kvcache's own check of the flags' values, whatever the model, as
// a usage error naming each bad flag.
func (c *cacheFlags) check() error {
	err := c.policy().Validate()
	if err == nil {
		return nil
	}
	var lines []string
	for _, fe := range kvcache.FieldErrors(err) {
		lines = append(lines, "invalid value for flag -"+cacheFlag[fe.Field]+": "+fe.Msg)
	}
	if len(lines) == 0 { // not a field's fault: say it as it is
		return Usagef("%v", err)
	}
	return Usagef("%s", strings.Join(lines, "\n"))
}

// isDefault reports whether no cache flag was changed.
func (c *cacheFlags) isDefault() bool { return c.policy() == kvcache.DefaultPolicy() }
