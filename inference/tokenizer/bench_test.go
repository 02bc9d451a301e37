package tokenizer

import (
	"os"
	"testing"
	"time"

	"etchat/internal/fixtures"
)

// BenchmarkLoadGemma3 parses Gemma 3's 33 MB tokenizer.json.
func BenchmarkLoadGemma3(b *testing.B) {
	data, err := os.ReadFile(fixtures.Tokenizer(b, fixtures.Gemma3))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	cpu := startCPU()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b, 0)
}

// cpuMeter reports CPU time per operation next to the wall time: on a
// shared machine the wall time says more about the neighbours.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	t, ok := cpuTime()
	return cpuMeter{t, ok}
}

func (m cpuMeter) report(b *testing.B, bytes int) {
	end, ok := cpuTime()
	if !ok || !m.ok || b.N == 0 {
		return
	}
	per := (end - m.start).Seconds() / float64(b.N)
	b.ReportMetric(per*1000, "cpu-ms/op")
	if bytes > 0 && per > 0 {
		b.ReportMetric(float64(bytes)/1e6/per, "MB/cpu-s")
	}
}

// benchText is about 1 MB of mixed multilingual text. With
// ETCHAT_BENCH_TEXT_OUT set, the benchmarks also write it to that file
// (for comparing with other tokenizers on the same input).
func benchText(b *testing.B) string {
	text := mixedText(1 << 20)
	if p := os.Getenv("ETCHAT_BENCH_TEXT_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return text
}

func benchEncode(b *testing.B, fixture string, workers int) {
	tk := load(b, fixture)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	cpu := startCPU()
	for b.Loop() {
		if ids, _ := tk.encode(text, false, workers, false); len(ids) == 0 {
			b.Fatal("no ids")
		}
	}
	cpu.report(b, len(text))
}

// Encode throughput on ~1 MB of mixed text, on all cores (as Encode does
// for long inputs) and on one.
func BenchmarkEncodeLlama3(b *testing.B)        { benchEncode(b, fixtures.Llama3, 0) }
func BenchmarkEncodeGemma3(b *testing.B)        { benchEncode(b, fixtures.Gemma3, 0) }
func BenchmarkEncodeQwen3(b *testing.B)         { benchEncode(b, fixtures.Qwen3, 0) }
func BenchmarkEncodeLlama3OneCore(b *testing.B) { benchEncode(b, fixtures.Llama3, 1) }
func BenchmarkEncodeGemma3OneCore(b *testing.B) { benchEncode(b, fixtures.Gemma3, 1) }
func BenchmarkEncodeQwen3OneCore(b *testing.B)  { benchEncode(b, fixtures.Qwen3, 1) }

// BenchmarkDecodeLlama3 decodes the ids of the same text.
func BenchmarkDecodeLlama3(b *testing.B) {
	tk := load(b, fixtures.Llama3)
	text := benchText(b)
	ids := tk.Encode(text, false)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if tk.Decode(ids, false) != text {
			b.Fatal("round trip")
		}
	}
}

// Pre-tokenizer split throughput: the hand-written scanner and the general
// engine on the same pattern and text.
func benchSplit(b *testing.B, f splitter) {
	text := mixedText(1 << 20)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		n := 0
		f.findAll(text, func(int, int) { n++ })
		if n == 0 {
			b.Fatal("no pieces")
		}
	}
}

func BenchmarkSplitScannerCL100K(b *testing.B) {
	f, _ := newRegexSplitter(patCL100K)
	benchSplit(b, f)
}

func BenchmarkSplitEngineCL100K(b *testing.B) {
	re, err := compileRegex(patCL100K)
	if err != nil {
		b.Fatal(err)
	}
	benchSplit(b, re)
}
