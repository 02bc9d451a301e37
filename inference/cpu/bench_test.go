package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"etchat/inference/engine"
	"etchat/inference/kvcache"
	"etchat/internal/fixtures"
)

type benchRun struct {
	GreedyIDs  []int64   `json:"greedy_ids"`
	Margins    []float64 `json:"margins"`
	LogitsFile string    `json:"prefill_last_logits_file"`
}

type benchRef struct {
	Prompts []struct {
		Name     string   `json:"name"`
		InputIDs []int64  `json:"input_ids"`
		FP32     benchRun `json:"fp32_upcast_eager"`
		BF16     benchRun `json:"bf16_eager"`
	} `json:"prompts"`
}

// TestBenchBF16 follows the fixture README: the engine computes in fp32
// from bf16 weights, so with an fp32 KV cache it must track the fp32
// (upcast) eager reference closely and reproduce its greedy ids; with the
// default bf16 KV cache the logits must stay within bf16-sized tolerances
// and the teacher-forced argmax must agree wherever the fp32 margin is
// clearly above bf16 noise (> 0.25).
func TestBenchBF16(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("65 MB bf16 model: skipped under -short and -race")
	}
	var ref benchRef
	fixtures.Reference(t, fixtures.BenchBF16, &ref)
	want := fixtures.Logits(t, fixtures.BenchBF16, "p20_prefill_last_logits_fp32.bin")
	for _, kv := range []string{"fp32", "bf16"} {
		s, l := openFixture(t, fixtures.BenchBF16, kv)
		for _, p := range ref.Prompts {
			s.Clear()
			start := time.Now()
			logits := prefill(t, s, p.InputIDs, l.PrefillChunk)
			t.Logf("%s kv=%s: prefill of %d tokens in %v", p.Name, kv, len(p.InputIDs), time.Since(start))
			if p.FP32.LogitsFile != "" {
				d := maxAbs(logits, want)
				tol := 2e-3
				if kv == "bf16" {
					tol = 0.25
				}
				t.Logf("%s kv=%s: prefill logits max abs vs fp32 eager %g", p.Name, kv, d)
				if d > tol {
					t.Errorf("%s kv=%s: prefill logits differ by %g > %g", p.Name, kv, d, tol)
				}
			}
			if kv == "fp32" {
				got := greedy(t, s, logits, len(p.FP32.GreedyIDs))
				if !slices.Equal(got, p.FP32.GreedyIDs) {
					t.Errorf("%s: greedy %v, want %v", p.Name, got, p.FP32.GreedyIDs)
				}
				continue
			}
			// teacher-forced on the fp32 ids
			for i, id := range p.FP32.GreedyIDs {
				if p.FP32.Margins[i] > 0.25 && argmax(logits) != id {
					t.Errorf("%s step %d: argmax %d, want %d (fp32 margin %.3f)", p.Name, i, argmax(logits), id, p.FP32.Margins[i])
				}
				if i == len(p.FP32.GreedyIDs)-1 {
					break
				}
				var err error
				logits, err = s.Forward(context.Background(), []int64{id}, []int64{int64(s.Len())})
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func benchModels() []string {
	return []string{fixtures.Llama3, fixtures.Gemma3, fixtures.Qwen3, fixtures.BenchBF16, fixtures.BenchQ4}
}

// BenchmarkDecode measures one-token steps after a short prompt.
func BenchmarkDecode(b *testing.B) {
	for _, name := range benchModels() {
		b.Run(name, func(b *testing.B) {
			s, l := openFixture(b, name, "bf16")
			ids := make([]int64, min(16, l.PrefillChunk))
			for i := range ids {
				ids[i] = int64(i + 3)
			}
			ctx := context.Background()
			prefill(b, s, ids, l.PrefillChunk)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !s.CanExtend(1) {
					b.StopTimer()
					s.Clear() // ring layers refuse a deep rewind
					prefill(b, s, ids, l.PrefillChunk)
					b.StartTimer()
				}
				if _, err := s.Forward(ctx, []int64{7}, []int64{int64(s.Len())}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			if m := s.(*session).m; b.Elapsed() > 0 {
				b.ReportMetric(float64(m.weightBytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weightGB/s")
			}
		})
	}
}

// BenchmarkPrefill measures full-chunk steps from an empty cache.
func BenchmarkPrefill(b *testing.B) {
	for _, name := range benchModels() {
		b.Run(name, func(b *testing.B) {
			s, l := openFixture(b, name, "bf16")
			ids := make([]int64, l.PrefillChunk)
			pos := make([]int64, l.PrefillChunk)
			for i := range ids {
				ids[i], pos[i] = int64(i+3), int64(i)
			}
			ctx := context.Background()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ResetTimer()
			cpu0 := threadCPU()
			for i := 0; i < b.N; i++ {
				s.Clear()
				if _, err := s.Forward(ctx, ids, pos); err != nil {
					b.Fatal(err)
				}
			}
			if c := threadCPU() - cpu0; c > 0 && runtime.GOMAXPROCS(0) == 1 {
				// one thread: the calling thread's CPU time is all of it
				b.ReportMetric(float64(b.N*len(ids))/c.Seconds(), "tok/cpu-s")
			}
			b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkPrefillMatmul is one prefill matmul on one thread (128 input
// rows, bf16 weights, the shapes of llama-bench's FFN), in multiply-adds
// per second of the thread's CPU time: the kernel in use (6×8 with
// AVX-512, else 3×4) with its weight conversion.
func BenchmarkPrefillMatmul(b *testing.B) {
	const rows = 128
	for _, s := range []struct{ K, N int }{{512, 1536}, {1536, 512}} {
		b.Run(fmt.Sprintf("K%d-N%d", s.K, s.N), func(b *testing.B) {
			h := make([]uint16, s.N*s.K)
			for i := range h {
				h[i] = f32ToBF16(float32(i%7) - 3)
			}
			x := make([]float32, rows*s.K)
			for i := range x {
				x[i] = float32(i%5) - 2
			}
			w := wmat{h: h, n: s.N, k: s.K, ld: s.K}
			out := make([]float32, rows*s.N)
			scratch := scratchFor(rows, &w)
			benchMACs(b, float64(rows*s.N*s.K), func() { matmulRange(out, x, rows, &w, 0, s.N, scratch, false) })
		})
	}
}

// benchMACs runs f b.N times on a locked thread and reports macs
// multiply-adds per call per second of that thread's CPU time and of
// wall time.
func benchMACs(b *testing.B, macs float64, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	cpu0 := threadCPU()
	for i := 0; i < b.N; i++ {
		f()
	}
	if c := threadCPU() - cpu0; c > 0 {
		b.ReportMetric(macs*float64(b.N)/c.Seconds()/1e9, "GMAC/cpu-s")
	}
	b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

var sinkU uint64

// probeBytes is the bandwidth probe's buffer: 512 MiB, far past any L3,
// as the C read loop of ../shared/docs/performance-anchors.md reads.
const probeBytes = 512 << 20

var (
	probeOnce sync.Once
	probeBuf  []uint64
)

// bandwidth is one probe's result in bytes/s: the median and the best of
// its passes.
type bandwidth struct{ median, best float64 }

// readBandwidth measures how fast threads goroutines, each locked to an
// OS thread and summing its own contiguous part of a 512 MiB buffer with
// 256-bit loads (readSum: AVX2 assembly where the machine has it), read
// memory: as a C loop built with -O3 -march=native does.
func readBandwidth(threads, passes int) bandwidth {
	probeOnce.Do(func() {
		probeBuf = make([]uint64, probeBytes/8)
		for i := range probeBuf {
			probeBuf[i] = uint64(i) // touch every page before timing
		}
	})
	buf := probeBuf
	part := len(buf) / threads &^ 63
	rates := make([]float64, 0, passes)
	sums := make([]uint64, threads)
	for pass := 0; pass < passes; pass++ {
		var ready, wg sync.WaitGroup
		ready.Add(threads)
		wg.Add(threads)
		start := make(chan struct{})
		for t := 0; t < threads; t++ {
			go func(t int) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				defer wg.Done()
				ready.Done()
				<-start
				sums[t] = readSum(buf[t*part : (t+1)*part])
			}(t)
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		wg.Wait()
		rates = append(rates, float64(threads*part*8)/time.Since(t0).Seconds())
		sinkU += sums[0]
	}
	slices.Sort(rates)
	return bandwidth{median: rates[len(rates)/2], best: rates[len(rates)-1]}
}

// BenchmarkMemBandwidth is the roofline's probe on one core and on all:
// GB/s median (and best) of 7 passes over 512 MiB.
func BenchmarkMemBandwidth(b *testing.B) {
	for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			var bw bandwidth
			for i := 0; i < b.N; i++ {
				bw = readBandwidth(threads, 7)
			}
			b.ReportMetric(bw.median/1e9, "GB/s")
			b.ReportMetric(bw.best/1e9, "bestGB/s")
		})
	}
}

// BenchmarkDecodeRoofline is decode against the bandwidth roofline
// (weight bytes per token ÷ the probe's all-core read bandwidth, measured
// in the same run just before and after the decode loop: the median of
// both probes' passes) on llama-bench-bf16 and, when present,
// llama-bench-q4 (18 MB: it fits in a 32 MB L3, so the DRAM roofline is
// only a guide there).
func BenchmarkDecodeRoofline(b *testing.B) {
	if testing.Short() {
		b.Skip("65 MB model")
	}
	for _, name := range []string{fixtures.BenchBF16, fixtures.BenchQ4} {
		b.Run(name, func(b *testing.B) {
			l := layoutOf(b, name)
			p := kvcache.DefaultPolicy()
			p.StorageDType = "bf16"
			cfg, err := kvcache.Build(l, p)
			if err != nil {
				b.Fatal(err)
			}
			s, err := New(Options{}).Open(context.Background(), fixtures.PTE(name), cfg)
			if err != nil {
				b.Skip(err) // the engine cannot load it (yet)
			}
			defer s.Close()
			m := s.(*session).m
			threads := runtime.GOMAXPROCS(0)
			before := readBandwidth(threads, 5)
			// as `etchat bench -p 128 -n 64`: 64 steps after a 128-token prompt
			ids := make([]int64, min(128, l.PrefillChunk))
			for i := range ids {
				ids[i] = int64(i + 3)
			}
			prefill(b, s, ids, l.PrefillChunk)
			b.ResetTimer()
			decodeSteps(b, s, len(ids))
			b.StopTimer()
			after := readBandwidth(threads, 5)
			bw := (before.median + after.median) / 2
			perTok := b.Elapsed().Seconds() / float64(b.N)
			roof := float64(m.weightBytes) / bw
			b.ReportMetric(1/perTok, "tok/s")
			b.ReportMetric(1/roof, "roofline-tok/s")
			b.ReportMetric(roof/perTok, "of-roofline")
			b.ReportMetric(bw/1e9, "readGB/s")
			b.ReportMetric(float64(m.weightBytes)/perTok/1e9, "weightGB/s")
		})
	}
}

// decodeSteps runs b.N one-token decode steps after a prompt of prompt
// tokens, going back to the prompt every 64 steps (as `etchat bench -n
// 64` repeats) or when the cache is full.
func decodeSteps(b *testing.B, s engine.Session, prompt int) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if s.Len() >= prompt+64 || !s.CanExtend(1) {
			b.StopTimer()
			if err := s.Rewind(prompt); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := s.Forward(ctx, []int64{7}, []int64{int64(s.Len())}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGemv is the decode kernel alone: one fp32 row times a bf16
// weight matrix of llama-bench-bf16's size (64 Mi bf16 values, K = 512,
// past the L3), on one core and on all; compare its weightGB/s with
// BenchmarkMemBandwidth.
func BenchmarkGemv(b *testing.B) {
	const K, N = 512, 64 << 10
	w := wmat{h: make([]uint16, N*K), n: N, k: K, ld: K}
	for i := range w.h {
		w.h[i] = f32ToBF16(float32(i%7) - 3)
	}
	x := make([]float32, K)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	out := make([]float32, N)
	for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("bf16/threads=%d", threads), func(b *testing.B) {
			var job mmJob
			for i := 0; i < b.N; i++ {
				matmul(&job, out, x, 1, &w, threads)
			}
			b.ReportMetric(float64(2*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weightGB/s")
		})
	}
}

// BenchmarkQGemv is the quantized decode kernel alone: one input row
// times a 4- or 8-bit matrix (group 32) the size of llama-bench-q4's
// embedding (16384 × 512), on one core and on all; "folded" has
// ExecuTorch's symmetric biases (folded at load, as every fixture's),
// "affine" others.
func BenchmarkQGemv(b *testing.B) {
	const K, N = 512, 16 << 10
	for _, c := range []struct {
		bits   int
		folded bool
	}{{4, true}, {4, false}, {8, true}, {8, false}} {
		bits := c.bits
		w := &qMatrix{Bits: bits, GroupSize: 32, Rows: N, Cols: K,
			Packed: make([]uint32, N*K*bits/32), Scales: make([]float32, N*K/32), Biases: make([]float32, N*K/32)}
		for i := range w.Packed {
			w.Packed[i] = uint32(i) * 2654435761
		}
		for i := range w.Scales {
			w.Scales[i], w.Biases[i] = 0.01, -0.07
			if c.folded {
				w.Biases[i] = -float32(int(1)<<(bits-1)) * w.Scales[i]
			}
		}
		if w.foldBiases() != c.folded {
			b.Fatalf("q%d: biases folded %v, want %v", bits, !c.folded, c.folded)
		}
		kind := "affine"
		if c.folded {
			kind = "folded"
		}
		x := make([]float32, K)
		for i := range x {
			x[i] = float32(i%5) - 2
		}
		out := make([]float32, N)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("q%d/%s/threads=%d", bits, kind, threads), func(b *testing.B) {
				var job mmJob
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for i := 0; i < b.N; i++ {
					qMatMulJob(&job, out, x, 1, w, threads)
				}
				b.ReportMetric(float64(N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweights/s")
				if c := threadCPU() - cpu0; threads == 1 && c > 0 {
					// on a shared machine the thread's CPU time is the steadier measure
					b.ReportMetric(float64(N*K)*float64(b.N)/c.Seconds()/1e9, "Gweights/cpu-s")
				}
			})
		}
	}
}

// BenchmarkPrefillMatmulRealSize is one prefill matmul on one thread at
// a Llama-3.2-1B layer's shapes (128 input rows, a 128-token chunk): the
// 4-bit matrices (group 32, bf16 scales, folded biases: realQMatrix) and
// the same shapes in bf16, in multiply-adds per second of the thread's
// CPU time (this core's FMA peak: 16 a cycle, ~39 GMAC/s at 2.45 GHz).
func BenchmarkPrefillMatmulRealSize(b *testing.B) {
	const rows = 128
	for _, s := range realShapes[:4] {
		x := make([]float32, rows*s.k)
		for i := range x {
			x[i] = float32(i%5) - 2
		}
		out := make([]float32, rows*s.n)
		macs := float64(rows * s.n * s.k)
		for _, fast := range []bool{false, true} {
			b.Run(fmt.Sprintf("q4-%s/%s-K%d-N%d", numericsName(fast), s.name, s.k, s.n), func(b *testing.B) {
				w := realQMatrix(s.n, s.k)
				w.Int8 = fast
				var job mmJob
				benchMACs(b, macs, func() { qMatMulJob(&job, out, x, rows, w, 1) })
			})
		}
		// 8-bit weights in groups of 32 (folded): the fast mode's 8-bit tile
		var q8 *qMatrix // made by the first q8 run only
		for _, fast := range []bool{false, true} {
			b.Run(fmt.Sprintf("q8-%s/%s-K%d-N%d", numericsName(fast), s.name, s.k, s.n), func(b *testing.B) {
				if q8 == nil {
					q8 = quantizeSymmetric(randMat(rand.New(rand.NewPCG(8, uint64(s.k))), s.n*s.k), s.n, s.k, 8, 32)
					q8.foldBiases()
					b.ResetTimer()
				}
				q8.Int8 = fast
				var job mmJob
				benchMACs(b, macs, func() { qMatMulJob(&job, out, x, rows, q8, 1) })
			})
		}
		b.Run(fmt.Sprintf("bf16/%s-K%d-N%d", s.name, s.k, s.n), func(b *testing.B) {
			h := make([]uint16, s.n*s.k)
			for i := range h {
				h[i] = f32ToBF16(float32(i%7) - 3)
			}
			w := wmat{h: h, n: s.n, k: s.k, ld: s.k}
			scratch := scratchFor(rows, &w)
			benchMACs(b, macs, func() { matmulRange(out, x, rows, &w, 0, s.n, scratch, false) })
		})
	}
}
