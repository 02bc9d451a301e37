package cli

import (
	"context"

	"etchat/store"
)

// openStore opens the database a --db flag names (else $ETCHAT_DB, else the
// platform's default), its failures explained for the hint line.
func openStore(ctx context.Context, env *Env, flagPath string) (*store.DB, error) {
	path, err := store.ResolvePath(flagPath, env.Getenv)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return nil, storeError(err)
	}
	return db, nil
}
