package cpu

import (
	"fmt"
	"math"
	"testing"

	g "etchat/inference/mlxgraph"
)

// MLX's FromFP8 on e4m3 bytes: bias 7, subnormals below exponent 1, and
// 0x7f read as 480 (MLX has no NaN there).
func TestFP8E4M3(t *testing.T) {
	for b, want := range map[uint8]float32{
		0x00: 0, 0x38: 1, 0x40: 2, 0x3c: 1.5, 0x08: 1.0 / 64, 0x01: 1.0 / 512, 0x07: 7.0 / 512,
		0x7e: 448, 0x7f: 480, 0xb8: -1, 0xc4: -3,
	} {
		if got := fp8e4m3(b); got != want {
			t.Errorf("fp8e4m3(%#02x) = %v, want %v", b, got, want)
		}
	}
}

// fp4Ref decodes one element the plain way: nibble k%8 of word k/8, the
// e2m1 value (sign bit 3, exponent bits 2-1, mantissa bit 0), times scale.
func fp4Ref(words []uint32, k int, scale float64) float64 {
	q := words[k/8] >> (4 * (k % 8)) & 15
	e, m := (q>>1)&3, float64(q&1)
	v := m / 2 // subnormal: 0 or 0.5
	if e > 0 {
		v = (1 + m/2) * math.Pow(2, float64(e)-1)
	}
	if q&8 != 0 {
		v = -v
	}
	return v * scale
}

func fp4Case(rows, cols int) (words []uint32, scaleBytes []int64) {
	words = make([]uint32, rows*cols/8)
	for i := range words {
		words[i] = uint32(i)*0x9E3779B9 ^ 0x76543210
	}
	bytes := []int64{0x38, 0x40, 0x30, 0x44, 0xb0, 0x3c, 0x28}
	for i := 0; i < rows*cols/fp4Group; i++ {
		scaleBytes = append(scaleBytes, bytes[i%len(bytes)])
	}
	return words, scaleBytes
}

func TestDequantizeNVFP4(t *testing.T) {
	rows, cols := 3, 32
	words, sb := fp4Case(rows, cols)
	w := &tensor{dt: stU32, shape: []int{rows, cols / 8}, u: words}
	w.strides = contiguousStrides(w.shape)
	sc := it(stU8, []int{rows, cols / fp4Group}, sb...)
	for _, global := range []float32{0, 448 * 6 * 0.25} {
		want := make([]float32, rows*cols)
		for k := range want {
			s := float64(fp8e4m3(uint8(sb[k/fp4Group])))
			if global != 0 {
				s *= 0.25
			}
			want[k] = float32(fp4Ref(words, k, s))
		}
		n := &g.DequantizeNode{W: 0, Scales: 1, Out: out0, GroupSize: fp4Group, Bits: 4, Mode: "nvfp4", DType: p(int8(stF32))}
		in := []*tensor{w, sc}
		if global != 0 {
			n.GlobalScale = p(g.Tid(2))
			in = append(in, ft([]int{}, global))
		}
		checkOp(t, opCase{kind: "DequantizeNode", op: n, in: in, want: map[g.Tid]*tensor{out0: ft([]int{rows, cols}, want...)}})
	}
}

func TestQuantizedMatmulNVFP4(t *testing.T) {
	rows, cols := 6, 48
	words, sb := fp4Case(rows, cols)
	w := &tensor{dt: stU32, shape: []int{rows, cols / 8}, u: words}
	w.strides = contiguousStrides(w.shape)
	sc := it(stU8, []int{rows, cols / fp4Group}, sb...)
	dense := make([]float64, rows*cols)
	for k := range dense {
		dense[k] = fp4Ref(words, k, float64(fp8e4m3(uint8(sb[k/fp4Group]))))
	}
	for _, transpose := range []bool{true, false} {
		K, N := cols, rows
		if !transpose {
			K, N = rows, cols
		}
		x := make([]float32, 2*K)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)))
		}
		want := make([]float32, 2*N)
		for i := 0; i < 2; i++ {
			for j := 0; j < N; j++ {
				var acc float64
				for k := 0; k < K; k++ {
					if transpose {
						acc += float64(x[i*K+k]) * dense[j*cols+k]
					} else {
						acc += float64(x[i*K+k]) * dense[k*cols+j]
					}
				}
				want[i*N+j] = float32(acc)
			}
		}
		c := opCase{kind: "QuantizedMatmulNode",
			op: &g.QuantizedMatmulNode{X: 0, W: 1, Scales: 2, Out: out0, GroupSize: fp4Group, Bits: 4, Mode: "nvfp4", Transpose: transpose},
			in: []*tensor{ft([]int{2, K}, x...), w, sc}, want: map[g.Tid]*tensor{out0: ft([]int{2, N}, want...)}, tol: 1e-5}
		t.Run(fmt.Sprintf("transpose_%v", transpose), func(t *testing.T) { checkOp(t, c) })
	}
}

// Constant nvfp4 weights are prepared once at load (scales decoded) and
// the node uses the prepared matrix.
func TestNVFP4Prepared(t *testing.T) {
	rows, cols := 4, 32
	words, sb := fp4Case(rows, cols)
	w := &tensor{dt: stU32, shape: []int{rows, cols / 8}, u: words}
	w.strides = contiguousStrides(w.shape)
	sc := it(stU8, []int{rows, cols / fp4Group}, sb...)
	n := &g.QuantizedMatmulNode{X: 2, W: 0, Scales: 1, Out: out0, GroupSize: fp4Group, Bits: 4, Mode: "nvfp4", Transpose: true}
	m := &model{graph: &g.Graph{Instructions: []g.Instruction{{Kind: "QuantizedMatmulNode", Op: n}}}, consts: []*tensor{w, sc}}
	if err := m.prepareQuant(); err != nil {
		t.Fatal(err)
	}
	q := m.fp4mats[n]
	if q == nil || m.heapBytes != int64(rows*cols/fp4Group)*4 || q.Scales[1] != fp8e4m3(uint8(sb[1])) {
		t.Fatalf("prepared %+v, heap %d", q, m.heapBytes)
	}
	x := make([]float32, cols)
	x[3] = 1 // picks column 3
	s := &session{m: m, threads: 1, slots: make([]*tensor, 16), vals: make([]value, 1)}
	copy(s.slots, m.consts)
	s.slots[2] = ft([]int{1, cols}, x...)
	if err := s.exec(g.Instruction{Kind: "QuantizedMatmulNode", Op: n}); err != nil {
		t.Fatal(err)
	}
	got := s.slots[out0].floats(nil)
	for r := 0; r < rows; r++ {
		if want := float32(fp4Ref(words, r*cols+3, float64(fp8e4m3(uint8(sb[r*cols/fp4Group]))))); got[r] != want {
			t.Errorf("row %d: %v, want %v", r, got[r], want)
		}
	}
}
