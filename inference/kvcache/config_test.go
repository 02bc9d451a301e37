package kvcache

import (
	"strings"
	"testing"
)

// Without a published context, a capacity above MaxCapacity meets the
// builder's own limit; each bad field is its own typed error.
func TestBuildLimits(t *testing.T) {
	l := Layout{KVHeads: []int{2}, HeadDims: []int{8}, Windows: []int{0}, PrefillChunk: 4}
	_, err := Build(l, Policy{Capacity: MaxCapacity + 1, InitialCapacity: -1})
	if fes := FieldErrors(err); len(fes) != 1 || fes[0].Field != FieldCapacity || !strings.Contains(fes[0].Msg, "above the limit") {
		t.Errorf("huge capacity: %v", err)
	}
	_, err = Build(l, DefaultPolicy())
	if fes := FieldErrors(err); len(fes) != 1 || fes[0].Field != FieldCapacity || !strings.Contains(fes[0].Msg, "get_max_ctx_len") {
		t.Errorf("no capacity and no context: %v", err)
	}
	if cfg, err := Build(l, Policy{Capacity: 64, InitialCapacity: -1}); err != nil || cfg.Capacity != 64 || cfg.InitialCapacity != DefaultInitialCapacity || cfg.DType != DefaultStorageDType {
		t.Errorf("capacity given: %+v, %v", cfg, err)
	}
	_, err = Build(Layout{}, DefaultPolicy())
	if err == nil || FieldErrors(err) != nil {
		t.Errorf("a bad layout is not a field's fault: %v", err)
	}
}
