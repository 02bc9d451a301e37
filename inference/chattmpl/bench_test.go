package chattmpl

import (
	"path/filepath"
	"testing"

	"etchat/internal/fixtures"
)

// BenchmarkRenderQwen3 renders a 20-turn conversation through the qwen3
// fixture's template (the most involved of the three).
func BenchmarkRenderQwen3(b *testing.B) {
	cfg, err := LoadConfig(filepath.Join(modelDir(b, fixtures.Qwen3), "tokenizer_config.json"))
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := cfg.Template("")
	if err != nil {
		b.Fatal(err)
	}
	var msgs []Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, Message{Role: "user", Content: "What is the capital of France?"},
			Message{Role: "assistant", Content: "<think>\nEasy.\n</think>\n\nParis."})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(msgs, RenderOptions{AddGenerationPrompt: true}); err != nil {
			b.Fatal(err)
		}
	}
}
