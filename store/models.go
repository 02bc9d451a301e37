package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// Model is a .pte file in the library. Path is its identity: adding the same
// path again updates the row.
type Model struct {
	ID            int64           `json:"id"`
	Path          string          `json:"path"`
	SHA256        string          `json:"sha256"` // hex
	Size          int64           `json:"size"`
	ModTime       time.Time       `json:"mtime"`
	DisplayName   string          `json:"display_name"`
	Kind          string          `json:"kind"`                     // what the reader says the file is (e.g. "llm")
	Metadata      json.RawMessage `json:"metadata"`                 // the reader's model info, as JSON
	TokenizerPath string          `json:"tokenizer_path,omitempty"` // tokenizer chosen for it
	Template      string          `json:"template,omitempty"`       // chat template chosen for it (name or path)
	Added         time.Time       `json:"added"`
	LastUsed      time.Time       `json:"last_used"` // zero: never used
}

const modelCols = `id, path, sha256, size, mtime_ms, display_name, kind, metadata, tokenizer_path, template, added_ms, last_used_ms`

func scanModel(sc interface{ Scan(...any) error }) (Model, error) {
	var m Model
	var mt, added, used int64
	var meta string
	err := sc.Scan(&m.ID, &m.Path, &m.SHA256, &m.Size, &mt, &m.DisplayName, &m.Kind, &meta, &m.TokenizerPath, &m.Template, &added, &used)
	m.ModTime, m.Added, m.LastUsed = fromMS(mt), fromMS(added), fromMS(used)
	m.Metadata = json.RawMessage(meta)
	return m, err
}

// jsonText validates a JSON column value; empty becomes def.
func jsonText(field string, v json.RawMessage, def string) (string, error) {
	if len(v) == 0 {
		return def, nil
	}
	if !json.Valid(v) {
		return "", invalid("%s is not valid JSON", field)
	}
	return string(v), nil
}

// UpsertModel adds the model at m.Path or updates the one already there,
// and returns the stored row. Added is set on first insert; LastUsed is kept
// unless m sets it.
func (db *DB) UpsertModel(ctx context.Context, m Model) (Model, error) {
	if m.Path == "" {
		return Model{}, invalid("model path is empty")
	}
	meta, err := jsonText("model metadata", m.Metadata, "{}")
	if err != nil {
		return Model{}, err
	}
	var out Model
	err = db.write(ctx, "save model", func(tx *sql.Tx) error {
		now := db.nowMS()
		_, err := tx.ExecContext(ctx, `INSERT INTO models(path, sha256, size, mtime_ms, display_name, kind, metadata, tokenizer_path, template, added_ms, last_used_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, mtime_ms = excluded.mtime_ms,
				display_name = excluded.display_name, kind = excluded.kind, metadata = excluded.metadata,
				tokenizer_path = excluded.tokenizer_path, template = excluded.template,
				last_used_ms = CASE WHEN excluded.last_used_ms <> 0 THEN excluded.last_used_ms ELSE models.last_used_ms END`,
			m.Path, m.SHA256, m.Size, ms(m.ModTime), m.DisplayName, m.Kind, meta, m.TokenizerPath, m.Template, now, ms(m.LastUsed))
		if err != nil {
			return err
		}
		out, err = scanModel(tx.QueryRowContext(ctx, "SELECT "+modelCols+" FROM models WHERE path = ?", m.Path))
		return err
	})
	return out, err
}

// GetModel returns one model.
func (db *DB) GetModel(ctx context.Context, id int64) (Model, error) {
	m, err := scanModel(db.sql.QueryRowContext(ctx, "SELECT "+modelCols+" FROM models WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Model{}, notFound("model", id)
	}
	return m, db.wrap("get model", err)
}

// ModelByPath returns the model at path.
func (db *DB) ModelByPath(ctx context.Context, path string) (Model, error) {
	m, err := scanModel(db.sql.QueryRowContext(ctx, "SELECT "+modelCols+" FROM models WHERE path = ?", path))
	if errors.Is(err, sql.ErrNoRows) {
		return Model{}, errf("model %s: %w", path, ErrNotFound)
	}
	return m, db.wrap("get model", err)
}

// ListModels returns the library, most recently used first.
func (db *DB) ListModels(ctx context.Context) ([]Model, error) {
	rows, err := db.sql.QueryContext(ctx, "SELECT "+modelCols+" FROM models ORDER BY last_used_ms DESC, added_ms DESC, id DESC")
	if err != nil {
		return nil, db.wrap("list models", err)
	}
	defer rows.Close()
	var out []Model
	for rows.Next() {
		m, err := scanModel(rows)
		if err != nil {
			return nil, db.wrap("list models", err)
		}
		out = append(out, m)
	}
	return out, db.wrap("list models", rows.Err())
}

// TouchModel records that the model was just used.
func (db *DB) TouchModel(ctx context.Context, id int64) error {
	return db.write(ctx, "touch model", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "UPDATE models SET last_used_ms = ? WHERE id = ?", db.nowMS(), id))(notFound("model", id))
	})
}

// RemoveModel takes the model out of the library. It never touches the file
// on disk, and its conversations and runs stay (they keep the model's name
// and hash).
func (db *DB) RemoveModel(ctx context.Context, id int64) error {
	return db.write(ctx, "remove model", func(tx *sql.Tx) error {
		return mustAffect(tx.ExecContext(ctx, "DELETE FROM models WHERE id = ?", id))(notFound("model", id))
	})
}

// mustAffect turns "no row changed" into the given error.
func mustAffect(res sql.Result, err error) func(error) error {
	return func(none error) error {
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return none
		}
		return nil
	}
}
