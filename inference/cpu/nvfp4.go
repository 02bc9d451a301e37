package cpu

import (
	"fmt"

	g "etchat/inference/mlxgraph"
)

// nvfp4, the export's third quantization (--qlinear/--qembedding nvfp4),
// from MLX v0.32.0's definition (mlx/ops.cpp fp_quantize/fp_dequantize,
// mlx/backend/cpu/quantized.cpp fp_qmm_t, FromFP8 in unary_ops.h): groups
// of 16 fp4 (e2m1) values, packed 8 to a uint32 word least significant
// nibble first, each group with one fp8 (e4m3) scale byte; no biases. A
// dequantized element is FP4[q]·s (·global/(448·6) when DequantizeNode has
// a global scale; the export multiplies the per-tensor scale in a
// MultiplyNode of its own otherwise). No fixture exists: the tests check
// it on synthetic data against these definitions.

const fp4Group = 16

// fp4LUT is MLX's FP4_LUT: e2m1 codes to values.
var fp4LUT = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6}

// fp8e4m3 is MLX's FromFP8: the low seven bits shifted into an fp16's
// exponent and mantissa, times 256, then the sign (0x7f is 480, not NaN).
func fp8e4m3(b uint8) float32 {
	v := f16ToF32(uint16(b&127)<<7) * 256
	if b&128 != 0 {
		return -v
	}
	return v
}

// fp4Matrix is an nvfp4 W[Rows][Cols]: Packed row-major (Cols/8 words a
// row), Scales the decoded fp8 scales (Cols/16 a row).
type fp4Matrix struct {
	Rows, Cols int
	Packed     []uint32
	Scales     []float32
}

func newFP4Matrix(w, sc *tensor) (*fp4Matrix, error) {
	if w.u == nil || len(w.shape) != 2 {
		return nil, fmt.Errorf("weight of shape %v is not a 2-D uint32 matrix", w.shape)
	}
	rows, cols := w.shape[0], w.shape[1]*8
	if rows <= 0 || cols%fp4Group != 0 || !sc.isInt() || sc.numel() != rows*cols/fp4Group {
		return nil, fmt.Errorf("nvfp4 weight %v with scales %v (want uint8, one per 16)", w.shape, sc.shape)
	}
	q := &fp4Matrix{Rows: rows, Cols: cols, Packed: w.uints(), Scales: make([]float32, sc.numel())}
	for i, b := range sc.ints() {
		q.Scales[i] = fp8e4m3(uint8(b))
	}
	return q, nil
}

// fp4DequantWords writes FP4[q]·scale for len(dst) elements (groups of 16,
// one scale each).
func fp4DequantWords(dst []float32, words []uint32, scales []float32) {
	for k := range dst {
		dst[k] = fp4LUT[words[k/8]>>(4*(k%8))&15] * scales[k/fp4Group]
	}
}

// fp4MatMul sets out[i·Rows + r] = Σ_k x[i·Cols + k]·W[r][k], summed as
// MLX's fp_qmm_t does: per group Σ x·FP4[q], times the group's scale.
func fp4MatMul(out, x []float32, n int, w *fp4Matrix) {
	wpr, G := w.Cols/8, w.Cols/fp4Group
	for r := 0; r < w.Rows; r++ {
		words, scales := w.Packed[r*wpr:(r+1)*wpr], w.Scales[r*G:(r+1)*G]
		for i := 0; i < n; i++ {
			xi := x[i*w.Cols : (i+1)*w.Cols]
			var acc float32
			for gi := 0; gi < G; gi++ {
				var gsum float32
				for k := gi * fp4Group; k < (gi+1)*fp4Group; k++ {
					gsum += xi[k] * fp4LUT[words[k/8]>>(4*(k%8))&15]
				}
				acc += scales[gi] * gsum
			}
			out[i*w.Rows+r] = acc
		}
	}
}

// fp4MatMulNoTrans is out[n][Cols] = x[n][Rows] · W, a dequantized row at
// a time in row (len ≥ Cols).
func fp4MatMulNoTrans(out, x []float32, n int, w *fp4Matrix, row []float32) {
	row = row[:w.Cols]
	clear(out[:n*w.Cols])
	wpr, G := w.Cols/8, w.Cols/fp4Group
	for k := 0; k < w.Rows; k++ {
		fp4DequantWords(row, w.Packed[k*wpr:(k+1)*wpr], w.Scales[k*G:(k+1)*G])
		for i := 0; i < n; i++ {
			xv := x[i*w.Rows+k]
			o := out[i*w.Cols : (i+1)*w.Cols]
			for j, v := range row {
				o[j] += xv * v
			}
		}
	}
}

// quantizedMatmulFP4 is QuantizedMatmulNode in nvfp4 mode.
func (s *session) quantizedMatmulFP4(n *g.QuantizedMatmulNode, x *tensor) error {
	q := s.m.fp4mats[n]
	if q == nil {
		w, err := s.get(n.W)
		if err != nil {
			return err
		}
		sc, err := s.get(n.Scales)
		if err != nil {
			return err
		}
		if q, err = newFP4Matrix(w, sc); err != nil {
			return err
		}
	}
	K, N := q.Cols, q.Rows
	if !n.Transpose {
		K, N = q.Rows, q.Cols
	}
	if len(x.shape) == 0 || x.isInt() || x.shape[len(x.shape)-1] != K {
		return fmt.Errorf("quantized matmul: input %v for an nvfp4 weight of %d×%d (transpose %v)", x.shape, q.Rows, q.Cols, n.Transpose)
	}
	rows := x.numel() / K
	shape := append(s.tmp(0, x.shape[:len(x.shape)-1]...), N)
	s.scratch[0] = shape
	xs := s.fl(x)
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	if n.Transpose {
		fp4MatMul(o, xs, rows, q)
	} else {
		fp4MatMulNoTrans(o, xs, rows, q, s.arena.alloc(q.Cols))
	}
	dt := x.dt // MLX: the output takes x's dtype in the fp modes
	if !isFloatST(dt) {
		dt = stF32
	}
	return s.set(n.Out, s.newF(dt, shape, o))
}

// dequantizeFP4 is DequantizeNode in nvfp4 mode: out = FP4[q]·s, s the fp8
// scale (times global/(448·6) with a global scale); dtype from the node,
// else bfloat16 (MLX's default for the fp modes).
func (s *session) dequantizeFP4(n *g.DequantizeNode) error {
	w, err := s.get(n.W)
	if err != nil {
		return err
	}
	sc, err := s.get(n.Scales)
	if err != nil {
		return err
	}
	if w.u == nil || len(w.shape) == 0 || !sc.isInt() {
		return fmt.Errorf("dequantize: nvfp4 words %v with scales %v", w.shape, sc.shape)
	}
	wpr := w.shape[len(w.shape)-1]
	cols := wpr * 8
	rows := w.numel() / max(wpr, 1)
	if cols%fp4Group != 0 || sc.numel() != rows*cols/fp4Group {
		return fmt.Errorf("dequantize: nvfp4 words %v with scales %v (one per 16)", w.shape, sc.shape)
	}
	factor := float32(1)
	if n.GlobalScale != nil {
		gt, err := s.get(*n.GlobalScale)
		if err != nil {
			return err
		}
		if gt.numel() != 1 || gt.isInt() {
			return fmt.Errorf("dequantize: global scale of shape %v", gt.shape)
		}
		factor = gt.floats(nil)[0] / (448 * 6)
	}
	scales := make([]float32, sc.numel())
	for i, b := range sc.ints() {
		scales[i] = fp8e4m3(uint8(b)) * factor
	}
	shape := append(s.tmp(0, w.shape[:len(w.shape)-1]...), cols)
	s.scratch[0] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return err
	}
	o, err := s.allocF(cnt)
	if err != nil {
		return err
	}
	words := w.uints()
	G := cols / fp4Group
	for r := 0; r < rows; r++ {
		fp4DequantWords(o[r*cols:(r+1)*cols], words[r*wpr:(r+1)*wpr], scales[r*G:(r+1)*G])
	}
	dt := stBF16
	if n.DType != nil {
		dt = int(*n.DType)
	}
	if !isFloatST(dt) {
		return fmt.Errorf("dequantize to dtype %d", dt)
	}
	return s.set(n.Out, s.newF(dt, shape, o))
}
