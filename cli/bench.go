package cli

import (
	"context"
	"errors"
)

// runBench is a placeholder until its owner lands the command.
func runBench(ctx context.Context, env *Env, args []string) error {
	return errors.New("bench: not implemented yet")
}
