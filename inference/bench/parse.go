package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"etchat/inference/kvcache"
)

// ParseSizes reads a comma list of token counts ("512,1024"); each must be
// 0 or more. Repeats are dropped.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number (want a comma list such as 512,1024)", f)
		}
		if n < 0 {
			return nil, fmt.Errorf("%d is negative", n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// CacheListError says which of ParseCacheSpecs' lists is wrong.
type CacheListError struct {
	List string // "dtype", "capacity" or "windows"
	Err  error
}

func (e *CacheListError) Error() string { return e.List + ": " + e.Err.Error() }
func (e *CacheListError) Unwrap() error { return e.Err }

// ParseCacheSpecs is the product of three lists: KV storage dtypes (comma
// list of bf16|fp16|fp32), capacities (comma list, 0 = the model's) and
// window specs (';'-separated; each a comma list of windows repeated over
// the layers, 0 = flat, empty = the model's own).
func ParseCacheSpecs(dtypes, caps, windows string) ([]CacheSpec, error) {
	var ds []string
	for _, d := range strings.Split(dtypes, ",") {
		dt, err := kvcache.ParseDType(strings.TrimSpace(d))
		if err != nil {
			return nil, &CacheListError{"dtype", err}
		}
		if !slices.Contains(ds, dt.Flag()) {
			ds = append(ds, dt.Flag())
		}
	}
	cs, err := ParseSizes(caps)
	if err != nil {
		return nil, &CacheListError{"capacity", err}
	}
	var ws []string
	for _, w := range strings.Split(windows, ";") {
		w = strings.TrimSpace(w)
		if w != "" {
			for _, f := range strings.Split(w, ",") {
				f = strings.TrimSpace(f)
				if n, err := strconv.Atoi(f); err != nil || n < 0 {
					return nil, &CacheListError{"windows", fmt.Errorf("%q is not a window size (0 = flat)", f)}
				}
			}
		}
		if !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	var out []CacheSpec
	for _, d := range ds {
		for _, c := range cs {
			for _, w := range ws {
				out = append(out, CacheSpec{DType: d, Capacity: c, Windows: w})
			}
		}
	}
	return out, nil
}
