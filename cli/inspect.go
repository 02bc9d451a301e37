package cli

import (
	"context"
	"errors"
)

// runInspect is a placeholder until its owner lands the command.
func runInspect(ctx context.Context, env *Env, args []string) error {
	return errors.New("inspect: not implemented yet")
}
