package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
)

// A model's preset: the settings a new conversation with it starts from,
// as the app's JSON (the store does not read inside it). Keyed by the
// library's model; removing the model from the library removes its preset.

// SavePreset makes settings the preset of the library's model at path.
func (db *DB) SavePreset(ctx context.Context, path string, settings json.RawMessage) error {
	text, err := jsonText("preset", settings, "{}")
	if err != nil {
		return err
	}
	return db.write(ctx, "save preset", func(tx *sql.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM models WHERE path = ?", path).Scan(&id); errors.Is(err, sql.ErrNoRows) {
			return errf("model %s is not in the library: add it first: %w", path, ErrNotFound)
		} else if err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO model_presets(model_id, settings, updated_ms) VALUES (?, ?, ?)
			ON CONFLICT(model_id) DO UPDATE SET settings = excluded.settings, updated_ms = excluded.updated_ms`, id, text, db.nowMS())
		return err
	})
}

// Preset is the preset of the model at path; ok is false when it has none
// (or is not in the library).
func (db *DB) Preset(ctx context.Context, path string) (settings json.RawMessage, ok bool, err error) {
	var text string
	err = db.sql.QueryRowContext(ctx, `SELECT p.settings FROM model_presets p JOIN models m ON m.id = p.model_id WHERE m.path = ?`, path).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, db.wrap("read preset", err)
	}
	return json.RawMessage(text), true, nil
}

// DeletePreset removes the model's preset (none is not an error).
func (db *DB) DeletePreset(ctx context.Context, path string) error {
	return db.write(ctx, "delete preset", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM model_presets WHERE model_id = (SELECT id FROM models WHERE path = ?)`, path)
		return err
	})
}
