package tokenizer

import (
	"os"
	"testing"

	"etchat/internal/fixtures"
)

func BenchmarkLoadGemma3(b *testing.B) {
	data, err := os.ReadFile(fixtures.Tokenizer(b, fixtures.Gemma3))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
