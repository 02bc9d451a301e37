package modelinfo

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

var (
	infoMu    sync.Mutex
	infoCache = map[string]*Info{}
)

func loadFixture(t *testing.T, name string) *Info {
	t.Helper()
	infoMu.Lock()
	defer infoMu.Unlock()
	if info, ok := infoCache[name]; ok {
		return info
	}
	info, err := Load(fixtures.PTE(name), Options{NoCompanions: true})
	if err != nil {
		t.Fatal(err)
	}
	infoCache[name] = info
	return info
}

// policy is the CLI's defaults with changes, as cli/cacheflags.go builds it.
func policy(edit func(p *kvcache.Policy)) kvcache.Policy {
	p := kvcache.Policy{StorageDType: "bf16", InitialCapacity: -1}
	if edit != nil {
		edit(&p)
	}
	return p
}

func TestCacheConfig(t *testing.T) {
	cases := []struct {
		name    string
		model   string
		policy  kvcache.Policy
		summary string
		// K+V bytes at the initial pool size and at full capacity.
		initial, full int64
	}{
		{
			name: "gemma3 default", model: fixtures.Gemma3, policy: policy(nil),
			summary: "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n        4 layers: 1 flat + 3 ring(window 8)",
			// flat: 128 rows × 2 heads × 16 × (K+V) × 2 B = 16384; ring: 8+8-1 = 15 rows = 1920.
			initial: 16384 + 3*1920, full: 16384 + 3*1920,
		},
		{
			name: "gemma3 narrower windows narrow max_write", model: fixtures.Gemma3, policy: policy(func(p *kvcache.Policy) { p.Windows = "4" }),
			summary: "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=4\n        4 layers: 0 flat + 4 ring(window 4)",
			// 4+4-1 = 7 rows per layer: 7 × 128 B.
			initial: 4 * 7 * 128, full: 4 * 7 * 128,
		},
		{
			name: "gemma3 all flat keeps max_write", model: fixtures.Gemma3, policy: policy(func(p *kvcache.Policy) { p.Windows = "0" }),
			summary: "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n        4 layers: 4 flat",
			initial: 4 * 16384, full: 4 * 16384,
		},
		{
			name: "gemma3 wider window leaves max_write", model: fixtures.Gemma3, policy: policy(func(p *kvcache.Policy) { p.Windows = "16,0" }),
			summary: "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n        4 layers: 2 flat + 2 ring(window 16)",
			// ring: 16+8-1 = 23 rows × 128 B.
			initial: 2*16384 + 2*23*128, full: 2*16384 + 2*23*128,
		},
		{
			// A ring pool is allocated whole (ExecuTorch's MLXSequenceCache:
			// initial = window + max_write - 1 for rings); only flat pools
			// start at --kv-initial-capacity.
			name: "gemma3 initial 0: rings still whole", model: fixtures.Gemma3, policy: policy(func(p *kvcache.Policy) { p.InitialCapacity = 0 }),
			summary: "[cache] off-graph seq | capacity=128 initial=0 kv_dtype=BFloat16 max_write=8\n        4 layers: 1 flat + 3 ring(window 8)",
			initial: 3 * 1920, full: 16384 + 3*1920,
		},
		{
			name: "gemma3 initial 4: flat starts at 4 rows", model: fixtures.Gemma3, policy: policy(func(p *kvcache.Policy) { p.InitialCapacity = 4 }),
			summary: "[cache] off-graph seq | capacity=128 initial=4 kv_dtype=BFloat16 max_write=8\n        4 layers: 1 flat + 3 ring(window 8)",
			initial: 4*128 + 3*1920, full: 16384 + 3*1920,
		},
		{
			name: "llama3 fp32, capacity 64, initial 16", model: fixtures.Llama3,
			policy:  policy(func(p *kvcache.Policy) { p.StorageDType, p.Capacity, p.InitialCapacity = "fp32", 64, 16 }),
			summary: "[cache] off-graph seq | capacity=64 initial=16 kv_dtype=Float(fp32) max_write=32\n        2 layers: 2 flat",
			// 2 heads × 16 × 2 × 4 B = 256 B per row and layer.
			initial: 2 * 16 * 256, full: 2 * 64 * 256,
		},
		{
			name: "qwen3 fp16, initial 0", model: fixtures.Qwen3, policy: policy(func(p *kvcache.Policy) { p.StorageDType, p.InitialCapacity = "fp16", 0 }),
			summary: "[cache] off-graph seq | capacity=128 initial=0 kv_dtype=Half(fp16) max_write=32\n        2 layers: 2 flat",
			initial: 0, full: 2 * 128 * 128,
		},
		{
			// KV sharing: 10 layers on 6 caches of two shapes. Counting per
			// layer would add layers 6-9's 4 × 960 B (or 2 × 32 KiB) again.
			name: "gemma4 default: caches, not layers", model: fixtures.Gemma4, policy: policy(nil),
			summary: "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n" +
				"        10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)\n" +
				"        shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9",
			// ring: 15 rows × 1 head × 16 × K,V × 2 B = 960 B; flat: 128 rows × 2 × 32 × 2 × 2 B.
			initial: 5*960 + 32768, full: 5*960 + 32768,
		},
		{
			name: "bf16 bench default", model: fixtures.BenchBF16, policy: policy(nil),
			summary: "[cache] off-graph seq | capacity=2048 initial=512 kv_dtype=BFloat16 max_write=128\n        8 layers: 8 flat",
			// The README: 4 KiB per token, 8 MiB at 2048 tokens.
			initial: 512 * 4096, full: 8 << 20,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := loadFixture(t, c.model)
			cfg, err := info.CacheConfig(c.policy)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Summary(); got != c.summary {
				t.Errorf("summary\n%s\nwant\n%s", got, c.summary)
			}
			if !strings.Contains(c.summary, "\n        "+cfg.LayersSummary()) {
				t.Errorf("layers summary %q", cfg.LayersSummary())
			}
			layers, initial, full := cfg.Memory()
			if initial != c.initial || full != c.full {
				t.Errorf("memory initial %d full %d, want %d %d", initial, full, c.initial, c.full)
			}
			var sumI, sumF int64
			for _, l := range layers {
				sumI += l.Initial
				sumF += l.Full
			}
			if len(layers) != len(info.Layout.KVHeads) || sumI != initial || sumF != full {
				t.Errorf("per-layer memory %+v does not add up", layers)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("built config does not validate: %v", err)
			}
			// The estimate is what the pools hold: PoolRows at the start and
			// when full.
			for i, l := range cfg.Layers {
				if got := cfg.LayerBytes(l, cfg.PoolRows(l, 0)); got != layers[i].Initial {
					t.Errorf("layer %d: pool starts at %d bytes, estimate %d", i, got, layers[i].Initial)
				}
				if got := cfg.LayerBytes(l, cfg.PoolRows(l, cfg.Capacity)); got != layers[i].Full {
					t.Errorf("layer %d: full pool %d bytes, estimate %d", i, got, layers[i].Full)
				}
			}
		})
	}
}

func TestCacheConfigErrors(t *testing.T) {
	info := loadFixture(t, fixtures.Gemma3)
	cases := []struct {
		name   string
		policy kvcache.Policy
		want   string
	}{
		{"unknown dtype", policy(func(p *kvcache.Policy) { p.StorageDType = "int8" }), `storage dtype "int8" is unknown: choose bf16, fp16 or fp32`},
		{"windows not numbers", policy(func(p *kvcache.Policy) { p.Windows = "8,x" }), `windows "8,x": "x" is not a window size`},
		{"negative window", policy(func(p *kvcache.Policy) { p.Windows = "-1" }), `windows "-1": "-1" is not a window size`},
		{"empty window entry", policy(func(p *kvcache.Policy) { p.Windows = "8,,0" }), `windows "8,,0": "" is not a window size`},
		{"negative capacity", policy(func(p *kvcache.Policy) { p.Capacity = -5 }), "capacity -5 is negative"},
		{"huge capacity", policy(func(p *kvcache.Policy) { p.Capacity = 1 << 30 }), "is more than the model's context"}, // the tighter limit
		{"negative initial", policy(func(p *kvcache.Policy) { p.InitialCapacity = -2 }), "initial capacity -2 is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := info.CacheConfig(c.policy)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v (%v), want an error containing %q", err, cfg, c.want)
			}
		})
	}

	// The model's context bounds the capacity; every bad field is named,
	// each by a typed error, and no message names a command-line flag.
	limit := info.MaxCtxLen
	if _, err := info.CacheConfig(policy(func(p *kvcache.Policy) { p.Capacity = limit })); err != nil {
		t.Errorf("capacity = the model's context (%d): %v", limit, err)
	}
	_, err := info.CacheConfig(kvcache.Policy{Capacity: limit + 1, StorageDType: "int8", Windows: "x", InitialCapacity: -9})
	fes := kvcache.FieldErrors(err)
	var fields []kvcache.Field
	for _, fe := range fes {
		fields = append(fields, fe.Field)
		if strings.Contains(fe.Msg, "--") {
			t.Errorf("%s names a flag: %s", fe.Field, fe.Msg)
		}
	}
	if want := []kvcache.Field{kvcache.FieldCapacity, kvcache.FieldStorageDType, kvcache.FieldWindows, kvcache.FieldInitialCapacity}; !slices.Equal(fields, want) {
		t.Errorf("fields at fault %v, want %v (%v)", fields, want, err)
	}
	if len(fes) > 0 && !strings.Contains(fes[0].Msg, fmt.Sprintf("at most %d", limit)) {
		t.Errorf("capacity above the context: %s", fes[0].Msg)
	}

	in := loadFixture(t, fixtures.InGraph)
	if _, err := in.CacheConfig(policy(nil)); err == nil || !strings.Contains(err.Error(), "in-graph") {
		t.Errorf("in-graph: %v", err)
	}
}
