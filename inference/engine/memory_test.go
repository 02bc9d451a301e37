package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestFit(t *testing.T) {
	for _, c := range []struct {
		f    Fit
		fits bool
		str  string
	}{
		{Fit{Weights: 3 << 30, Cache: 1 << 29, WorkingSet: 4 << 30}, true, "3.5 GiB of 4.0 GiB"},
		{Fit{Weights: 3 << 30, Cache: 1 << 30, WorkingSet: 4 << 30}, true, "4.0 GiB of 4.0 GiB"},
		{Fit{Weights: 3 << 30, Cache: 1<<30 + 1, WorkingSet: 4 << 30}, false, "4.0 GiB of 4.0 GiB"},
		{Fit{Weights: 64 << 20, Cache: 1 << 20}, true, "65 MiB needed"}, // unknown working set
	} {
		if c.f.Fits() != c.fits || c.f.String() != c.str {
			t.Errorf("%+v: fits %v %q, want %v %q", c.f, c.f.Fits(), c.f.String(), c.fits, c.str)
		}
	}
	err := fmt.Errorf("mlx: %w", &MemoryFitError{Model: "m.pte", Capacity: 4096,
		Fit: Fit{Weights: 3 << 30, Cache: 2 << 30, WorkingSet: 4 << 30, Source: "max_recommended_working_set_size", Device: "metal"}})
	var fe *MemoryFitError
	if !errors.As(err, &fe) {
		t.Fatal("not a MemoryFitError")
	}
	for _, want := range []string{"m.pte", "5.0 GiB", "weights 3.0 GiB", "KV cache 2.0 GiB at capacity 4096", "4.0 GiB (max_recommended_working_set_size)", "metal"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
