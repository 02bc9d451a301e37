package app

import (
	"strings"
	"testing"

	"etchat/internal/fixtures"
)

// A conversation that fills the model's whole context cannot be given a
// larger capacity: the sheet says to undo first, not "at least N" past the
// model's limit. One that does not fill it is told the capacity it needs.
func TestSettingsCapacityAdviceFollowsTheModelsContext(t *testing.T) {
	m := inspect(t, modelCopy(t, fixtures.Llama3, true))
	if m.MaxCtxLen != 128 {
		t.Fatalf("llama3's context %d", m.MaxCtxLen)
	}
	f := NewSettingsForm(greedy(8), m)
	f.Holds = 128
	r := f.Evaluate()
	if msg := r.ErrorFor("Capacity"); !strings.Contains(msg, "whole context (128)") || strings.Contains(msg, "129") {
		t.Errorf("full conversation: %q", msg)
	}
	f.Holds, f.Capacity = 50, "40"
	if msg := f.Evaluate().ErrorFor("Capacity"); !strings.HasPrefix(msg, "at least 51:") {
		t.Errorf("capacity 40 for 50 tokens: %q", msg)
	}
	f.Capacity = "64"
	if r := f.Evaluate(); !r.OK() {
		t.Errorf("capacity 64 for 50 tokens refused: %v", r.Errors)
	}
}
