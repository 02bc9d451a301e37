package cli

import (
	"flag"
	"strings"

	"etchat/inference/engine"
)

// numericsFlag is --numerics on run, serve and bench: the CPU engine's
// numerics mode for quantized weights. Unset, it is fast (the front ends'
// default), except with --engine mlx, which has no modes; set with
// --engine mlx, the loader refuses it (*engine.NumericsError).
type numericsFlag struct {
	value string
	list  bool // bench: a comma list, swept
}

func (n *numericsFlag) register(fs *flag.FlagSet, list bool) {
	n.list = list
	help := "numerics of quantized matmuls on the CPU engine: fast (8-bit activations, integer products) or exact (fp32, the reference)"
	if list {
		help += "; a comma list is swept"
	}
	fs.StringVar(&n.value, "numerics", "", help+" (default fast; not with --engine mlx)")
}

// modes is the modes asked for ("" where the flag is unset: fast, or
// the loader's default for --engine mlx).
func (n *numericsFlag) modes(engineChoice string) ([]string, error) {
	if n.value == "" {
		if c, _ := engine.Canonical(engineChoice); c == engine.MLX {
			return []string{""}, nil
		}
		return []string{engine.NumericsFast}, nil
	}
	vals := []string{n.value}
	if n.list {
		vals = strings.Split(n.value, ",")
	}
	for i, v := range vals {
		vals[i] = strings.TrimSpace(v)
		if _, err := engine.ParseNumerics(vals[i]); err != nil || vals[i] == "" {
			return nil, Usagef("invalid value %q for flag -numerics: want %s", n.value, strings.Join(engine.NumericsModes(), ", "))
		}
	}
	return vals, nil
}

// mode is the single mode of run and serve.
func (n *numericsFlag) mode(engineChoice string) (string, error) {
	m, err := n.modes(engineChoice)
	if err != nil {
		return "", err
	}
	return m[0], nil
}
