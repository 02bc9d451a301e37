package app

import (
	"encoding/json"
	"testing"

	"etchat/internal/runlog"
)

// The app's settings and the terminal chat's are one JSON shape: a
// conversation started in either opens in the other with its settings.
func TestSettingsAreStoredAsChatSettings(t *testing.T) {
	s := Settings{Engine: "cpu", Capacity: 96, StorageDType: "fp16", InitialCapacity: 8, Windows: "8,0", Temperature: 0.5,
		TopK: 3, TopP: 0.8, Seed: 42, MaxNewTokens: 12, SystemPrompt: "Be terse."}
	a, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(runlog.ChatSettings(s))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("app settings %s\nstored as   %s", a, b)
	}
}
