package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/inference/modelinfo"
	"etchat/internal/fixtures"
)

// The chat view-model on llama3-tiny-q4-last, written with a newer
// ExecuTorch's metadata (#22655's names; its forward returns the last
// position's logits only): the library shows what the file says of
// itself, turn 1 is the reference's and turn 2 continues it (the reply
// keeping its ids), undo and regenerate give them again, and a reopened conversation warms its history and then reads
// only the new turn.
func TestChatNewerExportLastRow(t *testing.T) {
	b, _ := testBackend(t)
	var ref reference
	fixtures.Reference(t, fixtures.Llama3Q4Last, &ref)
	mt := ref.Multiturn
	path := modelCopy(t, fixtures.Llama3Q4Last, true)
	if res := NewLibrary(b.Inspector, b.Library).Add(context.Background(), path); len(res.Problems) > 0 {
		t.Fatal(res.Problems)
	}
	model := inspect(t, path)
	if model.Kind != modelinfo.OffGraph || model.PrefillChunk != 32 || model.MaxCtxLen != 128 || model.Metadata.LogitsMode != engine.LogitsLast {
		t.Fatalf("%s (%s): chunk %d, ctx %d, metadata %+v", model.Kind, model.KindReason, model.PrefillChunk, model.MaxCtxLen, model.Metadata)
	}
	entry := LibraryEntry{Path: path, Info: model}
	if row := entry.Row(); !strings.Contains(row, "ctx 128") || !strings.Contains(row, "chunk 32") {
		t.Errorf("library row %q", row)
	}
	if md := exportMetadata(model); md != "limits from get_max_seq_len and get_max_context_len; activations fp32 (the KV cache stores fp32 unless the settings choose); logits for the last position only" {
		t.Errorf("export metadata %q", md)
	}
	if cfg, err := model.CacheConfig(kvcache.DefaultPolicy()); err != nil || cfg.DType != kvcache.Float32 || cfg.DTypeFrom != kvcache.DTypeFromModel {
		t.Errorf("the model's default cache: %+v, %v", cfg, err)
	}

	c, errs := newTestChat(t, b, model)
	st := run(t, c, errs, c.NewConversation(greedy(8)))
	if st.Capacity != 128 || st.Position != 0 {
		t.Fatalf("capacity %d, position %d", st.Capacity, st.Position)
	}
	st = run(t, c, errs, c.Send(mt.Turn1.Messages[0].Content))
	if len(st.Messages) != 2 || !slices.Equal(st.Messages[0].IDs, mt.Turn1.InputIDs) || !slices.Equal(st.Messages[1].IDs, mt.Turn1.GeneratedIDs) ||
		st.Messages[1].Text != mt.Turn1.GeneratedText {
		t.Fatalf("turn 1: %+v, want %v %q", st.Messages, mt.Turn1.GeneratedIDs, mt.Turn1.GeneratedText)
	}
	// Turn 1's reply keeps the ids it was generated as (the app's and the
	// runner's semantics); the reference's turn 2 re-tokenizes its text, so
	// turn 2 is compared with the same two turns through the inference
	// package, uninterrupted (keptTurn2Of).
	turn2IDs, turn2Text := keptTurn2Of(t, fixtures.Llama3Q4Last, ref)
	st = run(t, c, errs, c.Send(mt.Turn2.Messages[2].Content))
	if len(st.Messages) != 4 || !slices.Equal(st.Messages[3].IDs, turn2IDs) || st.Messages[3].Text != turn2Text {
		t.Fatalf("turn 2: %+v, want %v %q", st.Messages[len(st.Messages)-1], turn2IDs, turn2Text)
	}
	held := st.Position

	// Undo turn 2, regenerate turn 1's reply: the same, greedy; send turn 2
	// again: the same.
	// (The cache keeps turn 1 as the next render has it, its turn end
	// included.)
	st = run(t, c, errs, c.UndoTurn())
	if len(st.Messages) != 2 || st.Position == 0 || st.Position >= held {
		t.Fatalf("after undo: %d messages at %d", len(st.Messages), st.Position)
	}
	st = run(t, c, errs, c.Regenerate())
	if !slices.Equal(st.Messages[1].IDs, mt.Turn1.GeneratedIDs) {
		t.Errorf("regenerated %v, want %v", st.Messages[1].IDs, mt.Turn1.GeneratedIDs)
	}
	st = run(t, c, errs, c.Send(mt.Turn2.Messages[2].Content))
	if !slices.Equal(st.Messages[3].IDs, turn2IDs) || st.Position != held {
		t.Fatalf("turn 2 again: %v at %d, want %v at %d", st.Messages[3].IDs, st.Position, turn2IDs, held)
	}
	id := st.ConvID
	c.Close()

	// Reopened: the history is read into the cache in the background; then
	// undoing turn 2 and sending it once more reads only that turn and
	// answers as the reference does.
	c, errs = newTestChat(t, b, model)
	st = run(t, c, errs, c.OpenConversation(id)) // Wait waits for the warm too
	if st.Warming || st.Position != held || len(st.Messages) != 4 {
		t.Fatalf("reopened: warming %v, position %d of %d, %d messages", st.Warming, st.Position, held, len(st.Messages))
	}
	st = run(t, c, errs, c.UndoTurn())
	stored := idsOf(st.Messages)
	st = run(t, c, errs, c.Send(mt.Turn2.Messages[2].Content))
	if !slices.Equal(st.Messages[3].IDs, turn2IDs) || st.Messages[3].Text != turn2Text {
		t.Errorf("turn 2 after the reopen: %v %q", st.Messages[3].IDs, st.Messages[3].Text)
	}
	if got, want := lastPrompt(t, st), newTokens(st, stored, len(stored)); got != want {
		t.Errorf("the send after the reopen read %d prompt tokens, want only the new turn's %d", got, want)
	}
}

// A new chat on a newer export stores its KV cache in the activation
// dtype the file names (fp32 for the twins); an older export, which names
// none, keeps the runner's bf16.
func TestModelDefaultsTakeTheExportsActivationDType(t *testing.T) {
	for _, c := range []struct {
		fixture, want, from string
	}{
		{fixtures.Llama3Q4Last, "fp32", kvcache.DTypeFromModel},
		{fixtures.Llama3Q4, "bf16", kvcache.DTypeChosen},
	} {
		model := inspect(t, modelCopy(t, c.fixture, true))
		s := ModelDefaults(model, "cpu")
		if s.StorageDType != c.want {
			t.Errorf("%s: new chat's KV dtype %q, want %q", c.fixture, s.StorageDType, c.want)
		}
		cfg, err := model.CacheConfig(s.Policy())
		if err != nil || cfg.DType.Flag() != c.want || cfg.DTypeFrom != c.from {
			t.Errorf("%s: cache %+v, %v", c.fixture, cfg, err)
		}
	}
}
