package cli

import (
	"context"
	"errors"
)

// runTokenize is a placeholder until its owner lands the command.
func runTokenize(ctx context.Context, env *Env, args []string) error {
	return errors.New("tokenize: not implemented yet")
}
