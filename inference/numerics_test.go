package inference

import (
	"context"
	"errors"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/internal/fixtures"
)

// The loader's numerics mode: the zero value is exact (the reference);
// fast runs fast on quantized weights and says so on the engine line;
// a bf16 model runs exact whatever was asked; any mode asked of the
// native engine, or an unknown one, is a typed error before anything
// loads.
func TestLoadNumerics(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, mode, want string
	}{
		{fixtures.Llama3Q4, "", engine.NumericsExact},
		{fixtures.Llama3Q4, engine.NumericsFast, engine.NumericsFast},
		{fixtures.Llama3Q4, engine.NumericsExact, engine.NumericsExact},
		{fixtures.Llama3, engine.NumericsFast, engine.NumericsExact},
	} {
		m, err := Load(ctx, fixtures.PTE(c.name), LoadOptions{Engine: "cpu", Numerics: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		line := m.Engine.String()
		if m.Numerics() != c.want || strings.HasSuffix(line, ", numerics fast") != (c.want == engine.NumericsFast) {
			t.Errorf("%s %q: runs %q, engine line %q", c.name, c.mode, m.Numerics(), line)
		}
		m.Close()
	}
	var ne *engine.NumericsError
	if _, err := Prepare(fixtures.PTE(fixtures.Llama3Q4), LoadOptions{Engine: "mlx", Numerics: "exact"}); !errors.As(err, &ne) || ne.Engine != engine.MLX {
		t.Errorf("mlx with a mode: %v", err)
	}
	if _, err := Prepare(fixtures.PTE(fixtures.Llama3Q4), LoadOptions{Engine: "cpu", Numerics: "approximate"}); !errors.As(err, &ne) || ne.Engine != "" {
		t.Errorf("an unknown mode: %v", err)
	}
	m, err := Prepare(fixtures.PTE(fixtures.Llama3Q4), LoadOptions{Engine: "mlx"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WithNumerics(engine.NumericsFast); !errors.As(err, &ne) {
		t.Errorf("WithNumerics on mlx: %v", err)
	}
}
