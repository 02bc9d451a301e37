package cli

import (
	"context"
	"errors"
)

// runTemplate is a placeholder until its owner lands the command.
func runTemplate(ctx context.Context, env *Env, args []string) error {
	return errors.New("template: not implemented yet")
}
