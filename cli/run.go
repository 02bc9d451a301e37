package cli

import (
	"context"
	"errors"
)

// runRun is a placeholder until its owner lands the command.
func runRun(ctx context.Context, env *Env, args []string) error {
	return errors.New("run: not implemented yet")
}
