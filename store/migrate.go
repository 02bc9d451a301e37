package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded steps in order; their versions run 1, 2, …
// without gaps (a test holds us to it).
func migrations() ([]migration, error) {
	ents, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range ents {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(name, ".sql") {
			return nil, errf("migration file %q is not named NNNN_name.sql", name)
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(name, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, errf("migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

const migrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_ms INTEGER NOT NULL
)`

// Version reports the schema version the database is at.
func (db *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := db.sql.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&v)
	return v, db.wrap("schema version", err)
}

// migrate brings the schema up to date, one transaction per migration. It
// refuses a database from a newer etchat and an SQLite file of some other
// program, in both cases without writing to it. Two processes migrating the
// same file at once is safe: each step re-checks inside its transaction.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var hasTable, others int
	err = db.sql.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE name = 'schema_migrations'),
		count(*) FILTER (WHERE name <> 'schema_migrations' AND name NOT LIKE 'sqlite_%')
		FROM sqlite_schema`).Scan(&hasTable, &others)
	if err != nil {
		return db.wrap("migrate", err)
	}
	if hasTable == 0 && others > 0 {
		return corruptError(db.path, errors.New("it holds tables but no etchat schema; it may belong to another program"))
	}
	have := 0
	if hasTable == 1 {
		v, err := db.Version(ctx)
		if err != nil {
			return err
		}
		have = v
		if v > len(ms) {
			return &fileError{path: db.path, kind: ErrTooNew, cause: fmt.Errorf("schema version %d", v), have: v, know: len(ms)}
		}
	}
	// Only now, knowing the file is ours, switch it to WAL (a persistent
	// setting of the file, so once is enough).
	var mode string
	if err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return db.wrap("migrate", err)
	}
	if mode != "wal" {
		return errf("database %s: cannot use write-ahead logging (journal mode %q); is it on a network drive?", db.path, mode)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		err := db.write(ctx, "migrate "+m.name, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, migrationsTable); err != nil {
				return err
			}
			var cur int
			if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&cur); err != nil {
				return err
			}
			if cur > len(ms) {
				return &fileError{path: db.path, kind: ErrTooNew, cause: fmt.Errorf("schema version %d", cur), have: cur, know: len(ms)}
			}
			if cur >= m.version {
				return nil // applied already, perhaps by another process just now
			}
			if cur != m.version-1 {
				return corruptError(db.path, fmt.Errorf("schema_migrations is at %d, cannot apply %s", cur, m.name))
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations(version, name, applied_ms) VALUES (?, ?, ?)",
				m.version, m.name, db.nowMS())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
