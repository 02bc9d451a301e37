//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkGemvKernels is the two one-row bf16 AVX2 kernels alone on one
// thread (weight GB per second of the thread's CPU time, steadier than
// the wall clock on a shared machine): widening loads (gemvBF16AVX2, for
// K a multiple of 8) and one 32-byte load split by shift and mask
// against x deinterleaved once per matmul (gemvBF16x16AVX2, K a multiple
// of 32).
func BenchmarkGemvKernels(b *testing.B) {
	if !useAVX2 {
		b.Skip("no AVX2")
	}
	const K = 512
	for _, N := range []int{2 << 10, 64 << 10} { // 2 MiB (L2/L3) and 64 MiB (DRAM)
		benchGemvKernels(b, K, N)
	}
}

func benchGemvKernels(b *testing.B, K, N int) {
	h := make([]uint16, N*K)
	for i := range h {
		h[i] = f32ToBF16(float32(i%7) - 3)
	}
	x := make([]float32, K)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	w := wmat{h: h, n: N, k: K, ld: K}
	xp, _ := gemvPrep(x, &w, make([]float32, K))
	out := make([]float32, N)
	for _, k := range []struct {
		name string
		run  func()
	}{
		{"widen", func() { gemvBF16AVX2(&x[0], &h[0], K, K, N, &out[0]) }},
		{"split", func() { gemvBF16x16AVX2(&xp[0], &h[0], K, K, N, &out[0]) }},
	} {
		b.Run(fmt.Sprintf("%s/%dMiB", k.name, N*K*2>>20), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for i := 0; i < b.N; i++ {
				k.run()
			}
			if c := threadCPU() - cpu0; c > 0 {
				b.ReportMetric(float64(2*N*K)*float64(b.N)/c.Seconds()/1e9, "weightGB/cpu-s")
			}
			b.ReportMetric(float64(2*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weightGB/s")
		})
	}
}
