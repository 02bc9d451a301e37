package cpu

import (
	"fmt"
	"testing"
)

// BenchmarkQDotKernels is the decode kernels alone on L1-resident rows
// (K = 1024, folded biases), interleaved: the four-row kernel and the
// three-row one.
func BenchmarkQDotKernels(b *testing.B) {
	const K = 1024
	G := K / 32
	w := realQMatrix(4, K)
	xp := make([]float32, K+8*G)
	for i := range xp {
		xp[i] = float32(i%5) - 2
	}
	sc := make([]float32, 4*G)
	for i := range sc {
		sc[i] = 0.01
	}
	var acc [4]float32
	wpr := K / 8
	kernels := []struct {
		name string
		rows int
		f    func()
	}{
		{"rows4", 4, func() { qDotRows4(&acc, xp, w.Packed, wpr, sc, sc, G, G, 1, 4) }},
		{"rows3", 3, func() { qDotRows3(&acc, xp, w.Packed, wpr, 2*wpr, sc, G, 2*G, G, 1, 4, true) }},
	}
	for round := 0; round < 3; round++ {
		for _, k := range kernels {
			b.Run(fmt.Sprintf("%s/%d", k.name, round), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					k.f()
				}
				b.ReportMetric(float64(b.N)*float64(k.rows*K)/b.Elapsed().Seconds()/1e9, "Gweights/s")
			})
		}
	}
}
