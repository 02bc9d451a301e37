package cpu

import (
	"fmt"
	"runtime"
	"testing"
)

// realShapes are a Llama-3.2-1B layer's 4-bit matrices (N × K) and its
// tied head: past every cache, as a real model's decode reads them.
var realShapes = []struct {
	name string
	n, k int
}{
	{"q", 2048, 2048}, {"kv", 512, 2048}, {"up", 8192, 2048}, {"down", 2048, 8192}, {"head", 128256, 2048},
}

// realQMatrix is an n × k 4-bit group-32 matrix with bf16 scales and
// folded biases, as the real-size export's, filled with varied bits.
func realQMatrix(n, k int) *qMatrix {
	w := &qMatrix{Bits: 4, GroupSize: 32, Rows: n, Cols: k, BiasMul: -8,
		Packed: make([]uint32, n*k/8), ScalesBF16: make([]uint16, n*k/32)}
	for i := range w.Packed {
		w.Packed[i] = uint32(i) * 2654435761
	}
	for i := range w.ScalesBF16 {
		w.ScalesBF16[i] = f32ToBF16(0.004 + float32(i%13)*0.0003)
	}
	return w
}

// BenchmarkQGemvRealSize is decode's quantized matmul at real size: each
// shape's matrices repeated to ≥ 256 MiB (so every call reads DRAM), one
// input row, on one core and on all; weightGB/s counts the words and the
// bf16 scales (0.5625 bytes a weight, as Q4_0's).
func BenchmarkQGemvRealSize(b *testing.B) {
	for _, s := range realShapes {
		bytes := s.n * s.k * 9 / 16
		copies := max(1, (256<<20)/bytes)
		ws := make([]*qMatrix, copies)
		for i := range ws {
			ws[i] = realQMatrix(s.n, s.k)
		}
		x := make([]float32, s.k)
		for i := range x {
			x[i] = float32(i%5) - 2
		}
		out := make([]float32, s.n)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				var job mmJob
				for i := 0; i < b.N; i++ {
					qMatMulJob(&job, out, x, 1, ws[i%copies], threads)
				}
				b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weightGB/s")
			})
		}
	}
}
