package cli

import (
	"context"
	"errors"
)

// runHistory is a placeholder until its owner lands the command.
func runHistory(ctx context.Context, env *Env, args []string) error {
	return errors.New("history: not implemented yet")
}
