package cpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"etchat/inference/kvcache"
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
			for _, fast := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/threads=%d/%s", s.name, threads, numericsName(fast)), func(b *testing.B) {
					for _, w := range ws {
						w.Int8 = fast
					}
					var job mmJob
					for i := 0; i < b.N; i++ {
						qMatMulJob(&job, out, x, 1, ws[i%copies], threads)
					}
					b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weightGB/s")
				})
			}
		}
	}
}

// BenchmarkQGemvL2 is the same kernel on a matrix that stays in L2
// (512 × 1024: 288 KiB), one thread: the kernel's own speed.
func BenchmarkQGemvL2(b *testing.B) {
	for _, bits := range []int{4, 8} {
		for _, fast := range []bool{false, true} {
			b.Run(fmt.Sprintf("q%d/%s", bits, numericsName(fast)), func(b *testing.B) {
				w := realQMatrix(512, 1024)
				if bits == 8 {
					w.Bits, w.BiasMul, w.Packed = 8, -128, make([]uint32, 512*1024/4)
					for i := range w.Packed {
						w.Packed[i] = uint32(i) * 2654435761
					}
				}
				w.Int8 = fast
				x := make([]float32, 1024)
				for i := range x {
					x[i] = float32(i%5) - 2
				}
				out := make([]float32, 512)
				var job mmJob
				for i := 0; i < b.N; i++ {
					qMatMulJob(&job, out, x, 1, w, 1)
				}
				b.ReportMetric(float64(512*1024)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
			})
		}
	}
}

func numericsName(fast bool) string {
	if fast {
		return NumericsFast
	}
	return NumericsExact
}

// BenchmarkDecodeRealSize is decode steps of the real-size program
// (scripts/realsize writes it; ETCHAT_REALSIZE_PTE names another) after
// a 128-token prompt, as `etchat bench -p 128 -n 64` runs them; skipped
// when the file is absent; ETCHAT_NUMERICS=fast runs the fast mode. With -cpuprofile it shows where a real-size
// step's time goes.
func BenchmarkDecodeRealSize(b *testing.B) {
	path := os.Getenv("ETCHAT_REALSIZE_PTE")
	if path == "" {
		path = filepath.Join("..", "..", "build", "realsize", "llama1b-q4.pte")
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%v (scripts/realsize writes it)", err)
	}
	l := layoutOfFile(b, path)
	p := kvcache.DefaultPolicy()
	p.StorageDType = "bf16"
	cfg, err := kvcache.Build(l, p)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Numerics: os.Getenv("ETCHAT_NUMERICS")}).Open(context.Background(), path, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := make([]int64, 128)
	for i := range ids {
		ids[i] = int64(i + 3)
	}
	prefill(b, s, ids, l.PrefillChunk)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	c0 := threadCPU()
	decodeSteps(b, s, len(ids))
	if c := threadCPU() - c0; c > 0 && runtime.GOMAXPROCS(0) == 1 {
		// with one thread, its CPU time: steadier than the wall clock on a shared machine
		b.ReportMetric(float64(b.N)/c.Seconds(), "tok/cpu-s")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkPrefillRealSize is a 128-token prefill of the real-size
// program from an empty cache (as `etchat bench -p 128`), in each
// numerics mode, the modes' sessions side by side; skipped when the file
// is absent (scripts/realsize). Tokens per CPU-second of the one thread
// with GOMAXPROCS=1: on a shared machine the steadier measure.
func BenchmarkPrefillRealSize(b *testing.B) {
	path := os.Getenv("ETCHAT_REALSIZE_PTE")
	if path == "" {
		path = filepath.Join("..", "..", "build", "realsize", "llama1b-q4.pte")
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%v (scripts/realsize writes it)", err)
	}
	l := layoutOfFile(b, path)
	p := kvcache.DefaultPolicy()
	p.StorageDType = "bf16"
	cfg, err := kvcache.Build(l, p)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, 128)
	for i := range ids {
		ids[i] = int64(i + 3)
	}
	for _, mode := range []string{NumericsExact, NumericsFast} {
		b.Run(mode, func(b *testing.B) {
			s, err := New(Options{Numerics: mode}).Open(context.Background(), path, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			c0 := threadCPU()
			for i := 0; i < b.N; i++ {
				s.Clear()
				prefill(b, s, ids, l.PrefillChunk)
			}
			if c := threadCPU() - c0; c > 0 && runtime.GOMAXPROCS(0) == 1 {
				b.ReportMetric(float64(b.N*len(ids))/c.Seconds(), "tok/cpu-s")
			}
			b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
