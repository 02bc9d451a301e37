package mlx

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"etchat/inference/kvcache"
)

func TestToC(t *testing.T) {
	tests := []struct {
		name       string
		cfg        *kvcache.Config
		wantCfg    CConfig
		wantLayers []CLayer
		wantErr    string
	}{
		{
			name: "mixed flat and ring, bf16, max_write set",
			cfg: &kvcache.Config{Capacity: 128, InitialCapacity: 512, DType: kvcache.BFloat16, MaxWrite: 8,
				Layers: []kvcache.Layer{
					{Kind: kvcache.Flat, KVHeads: 2, HeadDim: 64},
					{Kind: kvcache.Ring, Window: 8, KVHeads: 4, HeadDim: 32},
				}},
			wantCfg:    CConfig{Capacity: 128, InitialCapacity: 512, KVDType: 15, MaxWrite: 8},
			wantLayers: []CLayer{{0, 0, 2, 64}, {1, 8, 4, 32}},
		},
		{
			name: "max_write unset stays 0, fp16, initial 0",
			cfg: &kvcache.Config{Capacity: 4096, InitialCapacity: 0, DType: kvcache.Float16,
				Layers: []kvcache.Layer{{Kind: kvcache.Ring, Window: 1024, KVHeads: 8, HeadDim: 128}}},
			wantCfg:    CConfig{Capacity: 4096, InitialCapacity: 0, KVDType: 5, MaxWrite: 0},
			wantLayers: []CLayer{{1, 1024, 8, 128}},
		},
		{
			name: "fp32",
			cfg: &kvcache.Config{Capacity: 16, InitialCapacity: 16, DType: kvcache.Float32,
				Layers: []kvcache.Layer{{KVHeads: 1, HeadDim: 1}}},
			wantCfg:    CConfig{Capacity: 16, InitialCapacity: 16, KVDType: 6},
			wantLayers: []CLayer{{0, 0, 1, 1}},
		},
		{name: "nil", cfg: nil, wantErr: "no cache config"},
		{name: "no layers", cfg: &kvcache.Config{Capacity: 8, DType: kvcache.BFloat16}, wantErr: "lists no caches"},
		{name: "bad dtype", cfg: &kvcache.Config{Capacity: 8, DType: 3, Layers: []kvcache.Layer{{KVHeads: 1, HeadDim: 1}}}, wantErr: "dtype"},
		{name: "ring without window", cfg: &kvcache.Config{Capacity: 8, DType: kvcache.BFloat16,
			Layers: []kvcache.Layer{{Kind: kvcache.Ring, KVHeads: 1, HeadDim: 1}}}, wantErr: "cache 0"},
		{name: "window beyond int32", cfg: &kvcache.Config{Capacity: 8, DType: kvcache.BFloat16,
			Layers: []kvcache.Layer{{Kind: kvcache.Ring, Window: math.MaxInt32 + 1, KVHeads: 1, HeadDim: 1}}}, wantErr: "window 2147483648 does not fit"},
		{name: "max_write beyond int32", cfg: &kvcache.Config{Capacity: 8, DType: kvcache.BFloat16, MaxWrite: math.MaxInt32 + 7,
			Layers: []kvcache.Layer{{KVHeads: 1, HeadDim: 1}}}, wantErr: "max_write"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, layers, err := ToC(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ToC error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c != tc.wantCfg || !reflect.DeepEqual(layers, tc.wantLayers) {
				t.Errorf("ToC = %+v %+v, want %+v %+v", c, layers, tc.wantCfg, tc.wantLayers)
			}
		})
	}
}

func TestCStructLayout(t *testing.T) {
	// etchat_cache_config and etchat_cache_layer are four int32 each.
	var c CConfig
	var l CLayer
	if s := reflect.TypeOf(c).Size(); s != 16 {
		t.Errorf("CConfig is %d bytes, want 16", s)
	}
	if s := reflect.TypeOf(l).Size(); s != 16 {
		t.Errorf("CLayer is %d bytes, want 16", s)
	}
}

func TestKVPoolBytes(t *testing.T) {
	cfg := &kvcache.Config{Capacity: 1000, InitialCapacity: 64, DType: kvcache.BFloat16, MaxWrite: 8,
		Layers: []kvcache.Layer{
			{Kind: kvcache.Flat, KVHeads: 2, HeadDim: 4},             // 2*4*2*2 = 32 B/row
			{Kind: kvcache.Ring, Window: 16, KVHeads: 2, HeadDim: 4}, // 23 rows max
		}}
	cases := []struct {
		maxLen int
		want   int64
	}{
		{0, 64*32 + 23*32},     // flat starts at 64 rows; ring at min(64, 23)
		{64, 64*32 + 23*32},    // fits
		{65, 128*32 + 23*32},   // flat doubles
		{600, 1000*32 + 23*32}, // 64→128→256→512→1000 (capped)
	}
	for _, c := range cases {
		if got := kvPoolBytes(cfg, c.maxLen); got != c.want {
			t.Errorf("kvPoolBytes(maxLen %d) = %d, want %d", c.maxLen, got, c.want)
		}
	}
	if got := kvPoolBytes(nil, 10); got != 0 {
		t.Errorf("in-graph kvPoolBytes = %d, want 0", got)
	}
}
