package cli

import (
	"context"
	"errors"
)

// runCompare is a placeholder until its owner lands the command.
func runCompare(ctx context.Context, env *Env, args []string) error {
	return errors.New("compare: not implemented yet")
}
