package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"etchat/inference"
	"etchat/internal/fixtures"
)

// The library's chat check is made once per version of the files: a
// rescan of unchanged models loads no tokenizer again (gemma3's 262k-token
// one took most of a scan), a tokenizer.json that changes is checked again,
// and an unusable one is still reported with its typed reason (issue 36
// item 3).
func TestLibraryChatCheckIsRememberedPerFile(t *testing.T) {
	ctx := context.Background()
	b, _ := testBackend(t)
	gemma := modelCopy(t, fixtures.Gemma3, true)
	llama := modelCopy(t, fixtures.Llama3, true)
	lib := NewLibrary(b.Inspector, b.Library)
	t0 := time.Now()
	lib.Add(ctx, gemma, llama)
	first := time.Since(t0)
	for _, p := range []string{gemma, llama} {
		if e, _ := lib.Entry(p); !e.Chattable() || e.Template == "" || e.Template == "none" {
			t.Fatalf("%s: chattable %v, template %q (%v)", p, e.Chattable(), e.Template, e.ChatErr)
		}
	}
	loads := chatCheckLoads.Load()
	t0 = time.Now()
	lib.Rescan(ctx)
	t.Logf("scan of gemma3 and llama3: %v (first in this process), rescan %v", first, time.Since(t0))
	if n := chatCheckLoads.Load(); n != loads {
		t.Errorf("a rescan of unchanged models loaded %d tokenizers again", n-loads)
	}

	// The tokenizer broken: another size, checked again, reported.
	tok := filepath.Join(filepath.Dir(llama), "tokenizer.json")
	if err := os.Remove(tok); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, []byte(`{"model": `), 0o644); err != nil {
		t.Fatal(err)
	}
	lib.Rescan(ctx)
	e, _ := lib.Entry(llama)
	var te *inference.TokenizerError
	if !errors.As(e.ChatErr, &te) || e.Chattable() || chatCheckLoads.Load() != loads+1 {
		t.Errorf("broken tokenizer: %v, chattable %v, %d loads", e.ChatErr, e.Chattable(), chatCheckLoads.Load()-loads)
	}
	// Remembered broken too: the reason stays on the next rescan.
	lib.Rescan(ctx)
	if e, _ := lib.Entry(llama); !errors.As(e.ChatErr, &te) || chatCheckLoads.Load() != loads+1 {
		t.Errorf("rescanned broken tokenizer: %v", e.ChatErr)
	}
}
