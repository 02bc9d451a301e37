package cpu

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The quantized kernels' bits on every architecture are amd64's: the
// goldens in testdata/kernel-goldens.txt were written on amd64 (AVX2,
// with the Go twins agreeing) by
//
//	ETCHAT_UPDATE_GOLDENS=1 go test -run TestQKernelGoldens ./inference/cpu
//
// and every build — amd64 with or without AVX2, arm64's NEON kernels and
// its Go twins (which Go's arm64 compiler could otherwise fuse
// differently), under qemu in scripts/test — must reproduce them. Each
// golden is an FNV-64a hash of the outputs' bits; the inputs are made
// from integers only (no library math), so they are the same everywhere.

const goldenFile = "testdata/kernel-goldens.txt"

// goldenCases are the weights and inputs: 4- and 8-bit, groups of 32 to
// 128 and per-channel, affine and folded biases, fp32 and bf16 scales;
// decode (n = 1) and prefill (n = 3), exact and fast numerics; then the
// fast mode's prefill tiles (n = 5: a tile of four inputs and one decoded;
// groups of 32, K over qGemmCols too, so a tile continues its sums).
func goldenCases() (names []string, run []func() []float32) {
	add := func(bits, rows, cols, gs int, kind string, fast bool, n int) {
		mode := "exact"
		if fast {
			mode = "fast"
		}
		names = append(names, fmt.Sprintf("q%d-g%d-%dx%d-%s-%s-n%d", bits, gs, rows, cols, kind, mode, n))
		seed := uint64(len(names)) // the cases' order fixes their seeds: add new ones last
		run = append(run, func() []float32 {
			rng := rand.New(rand.NewPCG(seed, 41))
			w := goldenMatrix(rng, bits, rows, cols, gs, kind)
			w.Int8 = fast
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = goldenFloat(rng)
			}
			out := make([]float32, n*rows)
			for r0 := 0; r0 < rows; r0 += 13 { // as the workers split
				qMatMulRangeFast(out, x, n, w, r0, min(r0+13, rows))
			}
			return out
		})
	}
	kinds := []string{"affine", "folded", "bf16"}
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ rows, cols, gs int }{{37, 64, 32}, {16, 128, 64}, {9, 256, 128}, {12, 96, 96}, {20, 512, 32}} {
			for _, kind := range kinds {
				for _, fast := range []bool{false, true} {
					for _, n := range []int{1, 3} {
						if !fast || c.gs%32 == 0 {
							add(bits, c.rows, c.cols, c.gs, kind, fast, n)
						}
					}
				}
			}
		}
	}
	for _, bits := range []int{4, 8} {
		for _, c := range []struct{ rows, cols int }{{37, 64}, {20, 512}, {7, qGemmCols + 128}} {
			for _, kind := range kinds {
				add(bits, c.rows, c.cols, 32, kind, true, 5)
			}
		}
	}
	// the pair layout's input quantizer on its own (the matmul cases see
	// its bits only through products, where a block with d = 0 hides its
	// q): random rows of three magnitudes and the edges
	for _, c := range goldenQPrepRows() {
		names = append(names, "qprep-pairs-"+c.name)
		x := c.x
		run = append(run, func() []float32 { return qPrepPairsBits(x) })
	}
	return names, run
}

// goldenQPrep is one input row for qPrepPairsRow's goldens.
type goldenQPrep struct {
	name string
	x    []float32
}

// goldenQPrepRows are qPrepPairsRow's golden inputs, from integers and
// bit patterns only: random rows scaled by powers of two (exact), and a
// row of edge blocks (±0, all equal, ±MaxFloat32, denormals with d = 0,
// the least d ≠ 0, every k+0.5 with d = 1, NaN, ±Inf).
func goldenQPrepRows() []goldenQPrep {
	rng := rand.New(rand.NewPCG(7, 41))
	var rows []goldenQPrep
	for _, e := range []int{-100, 0, 60} {
		x := make([]float32, 640)
		for i := range x {
			x[i] = goldenFloat(rng) * float32(math.Ldexp(1, e))
		}
		rows = append(rows, goldenQPrep{fmt.Sprintf("random-2e%d-k640", e), x})
	}
	var edge []float32
	block := func(f func(i int) float32) {
		for i := 0; i < 32; i++ {
			edge = append(edge, f(i))
		}
	}
	bits := math.Float32frombits
	block(func(int) float32 { return 0 })
	block(func(int) float32 { return bits(1 << 31) }) // −0
	block(func(int) float32 { return 0.3 })
	block(func(int) float32 { return -0.3 })
	block(func(i int) float32 { return float32(i%3-1) * math.MaxFloat32 })
	block(func(i int) float32 { return bits(uint32(2*i)) * float32(i%2*2-1) }) // max 62 steps: d = 0
	block(func(i int) float32 { return bits(uint32(2*i+2)) * float32(i%3-1) }) // 64 steps: d the least denormal
	block(func(i int) float32 { return bits(uint32(i)*123457) * float32(i%2*2-1) })
	for k := -127; k < 127; k += 4 { // d = 1 (127 first): ties at k+0.5 and their neighbours
		block(func(i int) float32 {
			if i == 0 {
				return 127
			}
			c := float32(k+i%4) + 0.5
			return bits(math.Float32bits(c) + uint32(i/4%3) - 1)
		})
	}
	block(func(i int) float32 {
		if i == 5 {
			return bits(0x7fc00000) // NaN
		}
		return float32(i)
	})
	block(func(i int) float32 { return float32(i%2*2-1) * bits(0x7f800000) }) // ±Inf
	if len(edge)%64 != 0 {
		block(func(i int) float32 { return float32(i) })
	}
	return append(rows, goldenQPrep{fmt.Sprintf("edges-k%d", len(edge)), edge})
}

// qPrepPairsBits runs qPrepPairsRow on x and returns its q, dv and c16
// as floats (exact), a NaN in dv as one NaN (its payload is the
// platform's).
func qPrepPairsBits(x []float32) []float32 {
	K := len(x)
	q, dv, c := make([]int8, K), make([]float32, K/8), make([]int16, K/4)
	qPrepPairsRow(q, dv, c, x)
	out := make([]float32, 0, K+K/8+K/4)
	for _, v := range q {
		out = append(out, float32(v))
	}
	for _, v := range dv {
		if v != v {
			v = math.Float32frombits(0x7fc00000)
		}
		out = append(out, v)
	}
	for _, v := range c {
		out = append(out, float32(v))
	}
	return out
}

// goldenFloat is a float in (−1, 1) from 24 random bits (exact).
func goldenFloat(rng *rand.Rand) float32 {
	return float32(int32(rng.Uint32())>>8) * (1.0 / (1 << 23))
}

// goldenMatrix is a random quantized matrix: random words, scales in
// (0, 2^−4) (as bf16 values for kind bf16), biases in (−1, 1) or folded.
func goldenMatrix(rng *rand.Rand, bits, rows, cols, gs int, kind string) *qMatrix {
	w := &qMatrix{Bits: bits, GroupSize: gs, Rows: rows, Cols: cols, Packed: make([]uint32, rows*cols*bits/32)}
	for i := range w.Packed {
		w.Packed[i] = rng.Uint32()
	}
	G := rows * cols / gs
	w.Scales = make([]float32, G)
	for i := range w.Scales {
		w.Scales[i] = float32(rng.Uint32()>>8+1) * (1.0 / (1 << 28))
	}
	switch kind {
	case "affine":
		w.Biases = make([]float32, G)
		for i := range w.Biases {
			w.Biases[i] = goldenFloat(rng)
		}
	case "folded":
		w.BiasMul = -float32(int(1) << (bits - 1))
	case "bf16":
		w.ScalesBF16 = make([]uint16, G)
		for i, s := range w.Scales {
			w.ScalesBF16[i] = f32ToBF16(s)
		}
		w.Scales = nil
		w.BiasMul = -float32(int(1) << (bits - 1))
	}
	return w
}

func goldenHash(out []float32) string {
	h := fnv.New64a()
	for _, v := range out {
		b := math.Float32bits(v)
		h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

func readGoldens(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			name, hash, _ := strings.Cut(line, " ")
			m[name] = hash
		}
	}
	return m
}

// TestQKernelGoldens runs the cases on the kernels in use and on the Go
// twins (every SIMD switch off) and holds both to amd64's goldens.
func TestQKernelGoldens(t *testing.T) {
	names, run := goldenCases()
	if os.Getenv("ETCHAT_UPDATE_GOLDENS") != "" {
		if !useAVX2 {
			t.Fatal("the goldens are amd64's: write them on an AVX2 machine")
		}
		var b strings.Builder
		b.WriteString("# qMatMulRangeFast's outputs and qPrepPairsRow's prepared rows (FNV-64a of their bits), written on amd64 by TestQKernelGoldens\n")
		for i, name := range names {
			fmt.Fprintf(&b, "%s %s\n", name, goldenHash(run[i]()))
		}
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := readGoldens(t)
	if len(want) != len(names) {
		t.Fatalf("%s has %d goldens, the test %d cases", goldenFile, len(want), len(names))
	}
	for _, simd := range []bool{true, false} {
		restore := setSIMD(simd)
		for i, name := range names {
			if got := goldenHash(run[i]()); got != want[name] {
				t.Errorf("%s (SIMD %v): %s, amd64's %s", name, simd, got, want[name])
			}
		}
		restore()
	}
}
