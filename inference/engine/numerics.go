package engine

import (
	"fmt"
	"strings"
)

// Numerics modes: how the CPU engine multiplies quantized weights
// (issue 38). Exact is fp32 products, the reference every engine
// comparison uses; Fast quantizes each input row to 8 bits per block of
// 32 (llama.cpp's Q8_0) and multiplies integers. The native engine has
// only its own numerics, recorded as exact.
const (
	NumericsExact = "exact"
	NumericsFast  = "fast"
)

// NumericsModes lists the modes, the default for quantized weights
// (fast) first.
func NumericsModes() []string { return []string{NumericsFast, NumericsExact} }

// NumericsError is a numerics mode that cannot be used: an unknown name,
// or a mode asked of an engine without modes (Engine set).
type NumericsError struct {
	Value  string
	Engine string // the engine that has no modes ("" for an unknown name)
}

func (e *NumericsError) Error() string {
	if e.Engine != "" {
		return fmt.Sprintf("--numerics %s: the %s engine has no numerics modes (they are the CPU engine's)", e.Value, e.Engine)
	}
	return fmt.Sprintf("unknown numerics mode %q (want %s)", e.Value, strings.Join(NumericsModes(), " or "))
}

// ParseNumerics checks a mode name ("" is kept: the default).
func ParseNumerics(s string) (string, error) {
	switch s {
	case "", NumericsExact, NumericsFast:
		return s, nil
	}
	return "", &NumericsError{Value: s}
}
