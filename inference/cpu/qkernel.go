package cpu

import (
	"math"
	"runtime"
	"sync"
)

// Quantized weights, as MLX stores them (mlx/ops.cpp affine_quantize and
// affine_dequantize, mlx/backend/cpu/quantized.cpp at v0.32.0).
//
// Contract for the kernels in this file and for faster versions of them
// (qkernel_amd64.go etc. replace qMatMulRange in an init function when the
// CPU allows; they never change qMatrix):
//
//   - qMatrix is W[Rows][Cols], affine-quantized along Cols in groups of
//     GroupSize consecutive elements (GroupSize divides Cols; per-channel
//     quantization is GroupSize == Cols).
//   - Packed holds Rows·Cols·Bits/32 words, row-major: row r is the words
//     Packed[r·wpr : (r+1)·wpr], wpr = Cols·Bits/32. Bits is 4 or 8 (the
//     only widths the engine accepts), so a word holds 32/Bits whole
//     elements: element k of a row is the unsigned integer
//     Q = (word[k / (32/Bits)] >> ((k % (32/Bits))·Bits)) & (2^Bits − 1),
//     least significant bits first.
//   - The scales are Rows·Cols/GroupSize values, row-major: group g of
//     row r uses s = scale(r·G + g), G = Cols/GroupSize. They are held as
//     the file has them: ScalesBF16 (bf16 bits, a view of the mapping;
//     Scales nil) or Scales (fp32; fp16 scales are converted at load).
//     Widening bf16 is exact, so either gives the same s. Kernels that want
//     fp32 scales widen a block's into a buffer (scalesOf).
//   - Biases hold Rows·Cols/GroupSize fp32 values, row-major: group g of
//     row r uses b = Biases[r·G + g].
//     Biases is nil when every bias is BiasMul·s exactly (BiasMul =
//     −2^(Bits−1), as ExecuTorch's symmetric exports have them): the
//     kernels then read no bias bytes (bias(i) is the value either way).
//   - W[r][k] = s·Q + b, computed in fp32 (MLX: scale * w + bias).
//
// qMatMulRange(out, x, n, w, r0, r1) sets out[i·Rows + r] = Σ_k x[i·Cols +
// k] · W[r][k] for every input row i < n and every r in [r0, r1), and
// writes nothing else of out. It must not allocate nor materialise W. Its
// results may differ from qMatMulRef's by fp32 rounding of the sums (the
// reference tests allow 1e-5 relative to Σ|x·W|), with each weight
// dequantized as s·Q + b before it is multiplied: the factored form
// s·Σx·Q + b·Σx cancels when b ≈ −2^(bits−1)·s, as ExecuTorch's exports
// have it, and moved the 8-bit fixture's logits past its 1e-4 tolerance.
// Each implementation is deterministic: the same inputs give the same
// bits whatever r0, r1 and the number of threads.

// qMatrix is a quantized weight matrix; see the contract above.
type qMatrix struct {
	Bits, GroupSize, Rows, Cols int
	Packed                      []uint32
	Scales, Biases              []float32
	ScalesBF16                  []uint16 // the scales as bf16 (Scales nil)
	BiasMul                     float32  // with Biases nil: b = BiasMul·s
	// Int8 is the fast numerics mode (qkernel_int8.go): the kernels
	// quantize the input to 8 bits per block and multiply integers. Set
	// at load only where qFast(w); the exact mode leaves it false.
	Int8 bool
}

// scale is the scale of group i (row-major over rows and groups).
func (w *qMatrix) scale(i int) float32 {
	if w.Scales == nil {
		return bf16ToF32(w.ScalesBF16[i])
	}
	return w.Scales[i]
}

// scalesOf is groups [i0, i1) of the scales in fp32: a view of Scales,
// or ScalesBF16 widened into buf (grown when short; *buf keeps it).
func (w *qMatrix) scalesOf(i0, i1 int, buf *[]float32) []float32 {
	if w.Scales != nil {
		return w.Scales[i0:i1]
	}
	if cap(*buf) < i1-i0 {
		*buf = make([]float32, i1-i0)
	}
	d := (*buf)[:i1-i0]
	widenBF16(d, w.ScalesBF16[i0:i1])
	return d
}

// numScales is the number of groups of the whole matrix.
func (w *qMatrix) numScales() int {
	if w.Scales == nil {
		return len(w.ScalesBF16)
	}
	return len(w.Scales)
}

// bias is the bias of group i (row-major over rows and groups).
func (w *qMatrix) bias(i int) float32 {
	if w.Biases == nil {
		return w.BiasMul * w.scale(i)
	}
	return w.Biases[i]
}

// foldBiases drops Biases when every bias is exactly −2^(Bits−1) times
// its scale (symmetric quantization written as affine), so that the
// kernels stream only the scales. It reports whether it did.
func (w *qMatrix) foldBiases() bool {
	if w.Biases == nil || len(w.Biases) != w.numScales() {
		return false
	}
	c := -float32(int(1) << (w.Bits - 1))
	for i, b := range w.Biases {
		if math.Float32bits(b) != math.Float32bits(c*w.scale(i)) {
			return false
		}
	}
	w.Biases, w.BiasMul = nil, c
	return true
}

// rowBiases is row r's biases: a view of Biases, or computed into buf
// (allocated when shorter than a row's groups).
func (w *qMatrix) rowBiases(r int, buf []float32) []float32 {
	G := w.groups()
	if w.Biases != nil {
		return w.Biases[r*G : (r+1)*G]
	}
	if len(buf) < G {
		buf = make([]float32, G)
	}
	buf = buf[:G]
	for g := range buf {
		buf[g] = w.BiasMul * w.scale(r*G+g)
	}
	return buf
}

// wordsPerRow is the number of packed words of one row.
func (w *qMatrix) wordsPerRow() int { return w.Cols * w.Bits / 32 }

// groups is the number of groups per row.
func (w *qMatrix) groups() int { return w.Cols / w.GroupSize }

// qDequantRow writes row r of W into dst[:Cols].
func qDequantRow(dst []float32, w *qMatrix, row int) {
	G, wpr := w.groups(), w.wordsPerRow()
	words := w.Packed[row*wpr : (row+1)*wpr]
	var sc []float32
	dequantWords(dst[:w.Cols], words, w.Bits, w.GroupSize, w.scalesOf(row*G, (row+1)*G, &sc), w.rowBiases(row, nil))
}

// dequantWords unpacks len(dst) elements from words (groups of gs elements
// with one scale and bias each): dst[k] = s·Q + b.
func dequantWords(dst []float32, words []uint32, bits, gs int, scales, biases []float32) {
	per := 32 / bits
	mask := uint32(1)<<bits - 1
	for g := range len(dst) / gs {
		s, b := scales[g], biases[g]
		out := dst[g*gs : (g+1)*gs]
		ws := words[g*gs/per : (g+1)*gs/per]
		for j, wd := range ws {
			for e := 0; e < per; e++ {
				out[j*per+e] = s*float32(wd>>(e*bits)&mask) + b
			}
		}
	}
}

// qMatMulRef is the definition: each weight dequantized (s·Q + b) and
// multiplied in fp32, summed in order. Tests compare the kernels with it.
func qMatMulRef(out, x []float32, n int, w *qMatrix) {
	row := make([]float32, w.Cols)
	for r := 0; r < w.Rows; r++ {
		qDequantRow(row, w, r)
		for i := 0; i < n; i++ {
			xi := x[i*w.Cols : (i+1)*w.Cols]
			var sum float32
			for k, v := range row {
				sum += xi[k] * v
			}
			out[i*w.Rows+r] = sum
		}
	}
}

// qMatMulRange is the kernel in use; a faster build replaces it at init.
var qMatMulRange = qMatMulRangeGo

// qMatMulRangeGo is the portable kernel. Like MLX's CPU kernel (_qmm_t)
// it dequantizes each weight on the fly, s·Q + b, and multiplies it in
// fp32; nothing is materialised. (Summing s·Σx·Q + b·Σx per group instead
// cancels badly when b ≈ −2^(bits−1)·s, as in ExecuTorch's exports: 8-bit
// logits moved by ~1e-4.) Four partial sums per row, combined at the end.
func qMatMulRangeGo(out, x []float32, n int, w *qMatrix, r0, r1 int) {
	G, wpr, gs, bits := w.groups(), w.wordsPerRow(), w.GroupSize, w.Bits
	per := 32 / bits
	mask := uint32(1)<<bits - 1
	wpg := gs / per // words per group
	for r := r0; r < r1; r++ {
		words := w.Packed[r*wpr : (r+1)*wpr]
		for i := 0; i < n; i++ {
			xi := x[i*w.Cols : (i+1)*w.Cols]
			var acc [4]float32
			for g := 0; g < G; g++ {
				s, b := w.scale(r*G+g), w.bias(r*G+g)
				xg := xi[g*gs : (g+1)*gs]
				for j, wd := range words[g*wpg : (g+1)*wpg] {
					xs := xg[j*per : (j+1)*per]
					for e, xv := range xs {
						acc[e&3] += xv * (s*float32(wd>>(e*bits)&mask) + b)
					}
				}
			}
			out[i*w.Rows+r] = (acc[0] + acc[1]) + (acc[2] + acc[3])
		}
	}
}

// qMatMul computes out[n][Rows] = x[n][Cols] · Wᵀ on up to threads
// goroutines (the caller's included), over blocks of rows of W.
func qMatMul(out, x []float32, n int, w *qMatrix, threads int) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	work := n * w.Rows * w.Cols
	nt := threads
	if work < mmParallelMin {
		nt = 1
	}
	nt = max(1, min(nt, w.Rows/16))
	if nt == 1 {
		qMatMulRange(out, x, n, w, 0, w.Rows)
		return
	}
	// Blocks of whole 16-row tiles, one per goroutine.
	per := (w.Rows/nt + 15) &^ 15
	var wg sync.WaitGroup
	for r0 := per; r0 < w.Rows; r0 += per {
		wg.Add(1)
		go func(r0 int) {
			defer wg.Done()
			qMatMulRange(out, x, n, w, r0, min(r0+per, w.Rows))
		}(r0)
	}
	qMatMulRange(out, x, n, w, 0, min(per, w.Rows))
	wg.Wait()
}

// qMatMulNoTrans computes out[n][Cols] = x[n][Rows] · W (MLX's
// quantized_matmul with transpose false: W is stored [K][N]), one
// dequantized row of W at a time in row (len ≥ Cols).
func qMatMulNoTrans(out, x []float32, n int, w *qMatrix, row []float32) {
	row = row[:w.Cols]
	clear(out[:n*w.Cols])
	for k := 0; k < w.Rows; k++ {
		qDequantRow(row, w, k)
		for i := 0; i < n; i++ {
			xv := x[i*w.Rows+k]
			o := out[i*w.Cols : (i+1)*w.Cols]
			for j, v := range row {
				o[j] += xv * v
			}
		}
	}
}
