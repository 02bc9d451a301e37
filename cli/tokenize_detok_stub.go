package cli

import (
	"context"
	"errors"
)

// runDetokenize is a placeholder until its owner lands the command.
func runDetokenize(ctx context.Context, env *Env, args []string) error {
	return errors.New("detokenize: not implemented yet")
}
