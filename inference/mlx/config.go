package mlx

import (
	"errors"
	"fmt"
	"math"

	"etchat/inference/kvcache"
)

// CConfig mirrors etchat_cache_config: four int32 fields, in order.
type CConfig struct {
	Capacity        int32
	InitialCapacity int32
	KVDType         int32 // ExecuTorch ScalarType: 5 Half, 6 Float, 15 BFloat16
	MaxWrite        int32 // 0 = unset
}

// CLayer mirrors etchat_cache_layer: four int32 fields, in order.
type CLayer struct {
	Kind    int32 // 0 flat, 1 ring
	Window  int32
	KVHeads int32
	HeadDim int32
}

// ToC converts a cache configuration into the structs etchat_session_open
// takes. It is pure: the config is validated, every number is checked to
// fit an int32, and nothing is derived that the config does not say.
func ToC(cfg *kvcache.Config) (CConfig, []CLayer, error) {
	if cfg == nil {
		return CConfig{}, nil, errors.New("no cache config")
	}
	if err := cfg.Validate(); err != nil {
		return CConfig{}, nil, fmt.Errorf("cache config: %w", err)
	}
	if len(cfg.Layers) > math.MaxInt32 {
		return CConfig{}, nil, fmt.Errorf("cache config: %d layers", len(cfg.Layers))
	}
	var bad error
	i32 := func(what string, v int) int32 {
		if v < math.MinInt32 || v > math.MaxInt32 {
			if bad == nil {
				bad = fmt.Errorf("cache config: %s %d does not fit the C ABI", what, v)
			}
			return 0
		}
		return int32(v)
	}
	c := CConfig{
		Capacity:        i32("capacity", cfg.Capacity),
		InitialCapacity: i32("initial capacity", cfg.InitialCapacity),
		KVDType:         i32("kv dtype", int(cfg.DType)),
		MaxWrite:        i32("max_write", cfg.MaxWrite),
	}
	layers := make([]CLayer, len(cfg.Layers))
	for i, l := range cfg.Layers {
		layers[i] = CLayer{
			Kind:    i32("layer kind", int(l.Kind)),
			Window:  i32("window", l.Window),
			KVHeads: i32("kv heads", l.KVHeads),
			HeadDim: i32("head dim", l.HeadDim),
		}
	}
	if bad != nil {
		return CConfig{}, nil, bad
	}
	return c, layers, nil
}
