package modelinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// A model.pte is named by its folder, also when given relative to it.
func TestDisplayName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qwen3-0.6b")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for in, want := range map[string]string{"model.pte": "qwen3-0.6b", "/m/llama/model.pte": "llama", "/m/llama/MODEL.PTE": "llama",
		"x/tiny.pte": "tiny", "/m/gemma3-1b-4w.pte": "gemma3-1b-4w"} {
		if got := DisplayName(in); got != want {
			t.Errorf("DisplayName(%q) = %q, want %q", in, got, want)
		}
	}
}
