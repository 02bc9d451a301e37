package kvcache

import (
	"slices"
	"testing"
)

// gemma4Tiny is gemma4-tiny-offgraph's layout: 6 caches of two shapes,
// attended by 10 layers (layers 6-8 share cache 4, layer 9 cache 5).
func gemma4Tiny(t *testing.T) *Config {
	t.Helper()
	c, err := Build(Layout{KVHeads: []int{1, 1, 1, 1, 1, 2}, HeadDims: []int{16, 16, 16, 16, 16, 32}, Windows: []int{8, 8, 8, 8, 8, 0},
		PrefillChunk: 8, MaxCtxLen: 128}, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	c.LayerCache = []int{0, 1, 2, 3, 4, 5, 4, 4, 4, 5}
	return c
}

func TestSummaryCachesNotLayers(t *testing.T) {
	c := gemma4Tiny(t)
	if c.NLayers() != 10 || len(c.Layers) != 6 || !c.Shared() {
		t.Fatalf("NLayers %d, caches %d, shared %v", c.NLayers(), len(c.Layers), c.Shared())
	}
	if got := c.CacheLayers(); !slices.EqualFunc(got, [][]int{{0}, {1}, {2}, {3}, {4, 6, 7, 8}, {5, 9}}, slices.Equal[[]int]) {
		t.Errorf("CacheLayers %v", got)
	}
	for _, tc := range []struct{ got, want string }{
		{c.LayersSummary(), "10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)"},
		{c.SharingSummary(), "shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9"},
		{c.ShortSummary(), "10 layers, 6 caches: 5 ring(8) ×1h ×16d + 1 flat ×2h ×32d, 4 layers share"},
		{c.Summary(), "[cache] off-graph seq | capacity=128 initial=512 kv_dtype=BFloat16 max_write=8\n" +
			"        10 layers, 6 caches: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)\n" +
			"        shared: cache 4 by layers 4,6,7,8; cache 5 by layers 5,9"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
	// The memory is the caches': 5 rings of 15 rows and one flat pool.
	layers, initial, full := c.Memory()
	if len(layers) != 6 || initial != 5*15*16*2*2+128*2*32*2*2 || full != initial {
		t.Errorf("memory: %d entries, %d initial, %d full", len(layers), initial, full)
	}
}

// Without a layer map, or with one cache per layer, the summaries are the
// runner's, one shape or not.
func TestSummaryOneCachePerLayer(t *testing.T) {
	c := gemma4Tiny(t)
	for _, lc := range [][]int{nil, {0, 1, 2, 3, 4, 5}} {
		c.LayerCache = lc
		if c.Shared() || c.NLayers() != 6 || c.SharingSummary() != "" {
			t.Errorf("%v: shared %v, %d layers, %q", lc, c.Shared(), c.NLayers(), c.SharingSummary())
		}
		if got, want := c.LayersSummary(), "6 layers: 1 flat (2 kv heads × 32) + 5 ring(window 8) (1 kv head × 16)"; got != want {
			t.Errorf("%v: %q, want %q", lc, got, want)
		}
		if got, want := c.ShortSummary(), "6 layers, 6 caches: 5 ring(8) ×1h ×16d + 1 flat ×2h ×32d"; got != want {
			t.Errorf("%v: short %q, want %q", lc, got, want)
		}
	}
	u, err := Build(Layout{KVHeads: []int{2, 2, 2, 2}, HeadDims: []int{16, 16, 16, 16}, Windows: []int{8, 8, 8, 0}, PrefillChunk: 8, MaxCtxLen: 128}, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	u.LayerCache = []int{0, 1, 2, 3}
	if got := u.LayersSummary(); got != "4 layers: 1 flat + 3 ring(window 8)" || u.ShortSummary() != got {
		t.Errorf("uniform: %q / %q", got, u.ShortSummary())
	}
	u.Layers = u.Layers[:3]
	u.LayerCache = []int{0, 1, 2}
	for i := range u.Layers {
		u.Layers[i] = Layer{Kind: Ring, Window: 4, KVHeads: 2, HeadDim: 16}
	}
	if got := u.LayersSummary(); got != "3 layers: 0 flat + 3 ring(window 4)" {
		t.Errorf("all ring: %q", got)
	}
	// A cache no layer attends is named; more layers than caches without a
	// repeat cannot happen, but the count still says so.
	u.LayerCache = []int{0, 0, 2}
	if got := u.SharingSummary(); got != "shared: cache 0 by layers 0,1; cache 1 unused" {
		t.Errorf("unused cache: %q", got)
	}
	if got := u.ShortSummary(); got != "3 layers, 3 caches: 3 ring(4), 1 layer shares" {
		t.Errorf("short: %q", got)
	}
}

// A KV-sharing layer writes its donor's cache again at the same positions:
// committing the 10 layers' plans must leave the sequence where the 6
// caches' plans leave it (no double advance, no double eviction), through
// rings that wrap many times.
func TestSharedWritesCommitOnce(t *testing.T) {
	c := gemma4Tiny(t)
	once, err := NewSequence(c)
	if err != nil {
		t.Fatal(err)
	}
	each, _ := NewSequence(c)
	pos := 0
	for step := 0; pos < c.Capacity; step++ {
		T := min(1+step%c.MaxWrite, c.Capacity-pos)
		var ps []Plan
		for layer, id := range c.LayerCache {
			p, err := each.Plan(id, pos, T)
			if err != nil {
				t.Fatal(err)
			}
			if layer < len(c.Layers) {
				q, _ := once.Plan(id, pos, T)
				once.Commit(q)
			}
			ps = append(ps, p)
		}
		for _, p := range ps {
			each.Commit(p)
		}
		pos += T
		if each.Len() != pos || once.Len() != pos || each.Floor() != once.Floor() {
			t.Fatalf("after %d tokens: Len %d (one write per cache: %d), Floor %d (%d)", pos, each.Len(), once.Len(), each.Floor(), once.Floor())
		}
	}
	// 128 tokens: the rings (15 rows) hold positions 113.. and the next step
	// needs the last 7 of them, so the floor is 113+7.
	if each.Floor() != 120 || !each.CanRewind(120) || each.CanRewind(119) {
		t.Errorf("floor %d at 128 tokens, want 120", each.Floor())
	}
}
