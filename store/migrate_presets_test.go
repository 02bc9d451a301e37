package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestMigration0009Presets: a version-8 file keeps its models,
// conversations and runs exactly and gains an empty presets table; a
// preset is saved and read by the model's path, replaced in place,
// refused for a model not in the library or as invalid JSON, deleted, and
// leaves with its model.
func TestMigration0009Presets(t *testing.T) {
	ctx := context.Background()
	path, raw := openFrozen(t, 8)
	tables := []string{"models", "conversations", "messages", "runs"}
	before := map[string][]string{}
	for _, tb := range tables {
		before[tb] = rowsOf(t, raw, tb, "id")
	}
	raw.Close()
	db := openTest(t, path)
	for _, tb := range tables {
		if after := rowsOf(t, db.sql, tb, "id"); strings.Join(after, "\n") != strings.Join(before[tb], "\n") {
			t.Errorf("%s changed:\n got %q\nwant %q", tb, after, before[tb])
		}
	}
	const model = "/models/llama.pte"
	if _, ok, err := db.Preset(ctx, model); ok || err != nil {
		t.Fatalf("a migrated file has a preset (%v)", err)
	}
	want := json.RawMessage(`{"system_prompt":"be brief","temperature":0.2}`)
	if err := db.SavePreset(ctx, model, want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := db.Preset(ctx, model); !ok || err != nil || string(got) != string(want) {
		t.Fatalf("preset %s %v %v", got, ok, err)
	}
	again := json.RawMessage(`{"capacity":64}`)
	if err := db.SavePreset(ctx, model, again); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := db.Preset(ctx, model); string(got) != string(again) {
		t.Errorf("replaced preset %s", got)
	}
	if n := rowsOf(t, db.sql, "model_presets", "model_id"); len(n) != 1 {
		t.Errorf("%d preset rows, want 1", len(n))
	}
	if err := db.SavePreset(ctx, "/models/absent.pte", want); !errors.Is(err, ErrNotFound) {
		t.Errorf("preset of a model not in the library: %v", err)
	}
	if err := db.SavePreset(ctx, model, json.RawMessage(`{oops`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid JSON: %v", err)
	}
	if err := db.DeletePreset(ctx, model); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Preset(ctx, model); ok {
		t.Error("deleted preset still read")
	}
	if err := db.SavePreset(ctx, model, want); err != nil {
		t.Fatal(err)
	}
	m, err := db.ModelByPath(ctx, model)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveModel(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if n := rowsOf(t, db.sql, "model_presets", "model_id"); len(n) != 0 {
		t.Errorf("the removed model's preset stayed: %q", n)
	}
}
