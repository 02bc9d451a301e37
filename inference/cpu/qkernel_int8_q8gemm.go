package cpu

// Prefill for 8-bit weights in groups of 32 (qMatMulQ8Gemm), as the pair
// layout's (qMatMulPairsGemm) for 4-bit: the chunk's inputs, quantized by
// prepareI8, are packed four by four block by block (packQ8), and the
// tile (qGemmQ8, twin qGemmQ8Go) takes two weight rows against four
// inputs, loading a row's block, flipping it to Q−128 and taking its
// absolute value once for the four inputs, where the decode kernel does
// that for every input. Per input and row the operations and their order
// are qDotI8Go's (a group is one block: its product, then its bias term),
// so prefill gives the bits of decoding each input alone.

// qI8Q8Gemm reports whether w takes the 8-bit prefill tile.
func qI8Q8Gemm(w *qMatrix) bool { return w.Bits == 8 && w.GroupSize == 32 }

// packQ8 lays the prepared inputs (prepareI8) out again for the tile,
// four inputs at a time (the last n%4 are not), block by block: the four
// inputs' 32 bytes of q, 4 scales d and 4×8 lane sums xsv side by side,
// in pq8, pdv and pxsv.
func (q *qPrep) packQ8(n, K int) {
	nt, nb := n/4, K/32
	q.pq8, q.pdv, q.pxsv = grow(q.pq8, nt*4*K), grow(q.pdv, nt*4*nb), grow(q.pxsv, nt*32*nb)
	for t := 0; t < nt; t++ {
		q8, d, xs := q.pq8[t*4*K:], q.pdv[t*4*nb:], q.pxsv[t*32*nb:]
		for i := 0; i < 4; i++ {
			at := 4*t + i
			for b := 0; b < nb; b++ {
				copy(q8[128*b+32*i:128*b+32*i+32], q.q8[at*K+32*b:])
				d[4*b+i] = q.d[at*nb+b]
				copy(xs[32*b+8*i:32*b+8*i+8], q.xsv[at*8*nb+8*b:])
			}
		}
	}
}

// qGemmQ8Go sets acc[8(4j+i):] to the lanes of weight row j's (of two,
// wstride words and sstride scales and biases apart) dot with input i of
// four packed by packQ8, over the given blocks; mode qI8NoBias or
// qI8Bias128 (biases read only then); with accum it continues the lanes
// already in acc (the rows' earlier blocks).
func qGemmQ8Go(acc *[64]float32, q8 []int8, d, xsv []float32, words []uint32, wstride int, scales, biases []float32, sstride, blocks, mode int, accum bool) {
	if !accum {
		*acc = [64]float32{}
	}
	for b := 0; b < blocks; b++ {
		for j := 0; j < 2; j++ {
			w := qWeightsI8(words[j*wstride:], b, 8)
			s := scales[j*sstride+b]
			for i := 0; i < 4; i++ {
				a := (*[8]float32)(acc[8*(4*j+i):])
				x := (*[32]int8)(q8[128*b+32*i:])
				ds := d[4*b+i] * s
				for l := range a {
					var sum int32
					for k := 4 * l; k < 4*l+4; k++ {
						sum += w[k] * int32(x[k])
					}
					a[l] = fma32(float32(sum), ds, a[l])
				}
				if mode == qI8Bias128 {
					bs := fma32(s, 128, biases[j*sstride+b])
					for l := range a {
						a[l] = fma32(xsv[32*b+8*i+l], bs, a[l])
					}
				}
			}
		}
	}
}

// qGemmQ8Operands checks, before an assembly tile of qGemmQ8 reads them,
// that its operands hold what it reads — per block 128 bytes of q and 4
// floats of d (and 32 of xsv), and 8 words and a scale (and bias) of each
// of the two rows — and returns the xsv and biases to pass: d's and the
// scales' first elements where mode has no bias term (not read then). A
// short slice panics here, in Go.
func qGemmQ8Operands(q8 []int8, d, xsv []float32, words []uint32, wstride int, scales, biases []float32, sstride, blocks, mode int) (xs, bi *float32) {
	_, _ = q8[128*blocks-1], d[4*blocks-1]
	_ = words[wstride+8*blocks-1]
	_ = scales[sstride+blocks-1]
	if mode == qI8Bias128 {
		_, _ = xsv[32*blocks-1], biases[sstride+blocks-1]
		return &xsv[0], &biases[0]
	}
	return &d[0], &scales[0]
}

// qMatMulQ8Gemm is qMatMulI8 for 8-bit weights in groups of 32 and n ≥ 4
// inputs, blocked as qMatMulPairsGemm: per block of qGemmRows rows and
// part of qGemmCols columns, the inputs four at a time against the rows
// two at a time; a last odd row and the last n%4 inputs take the decode
// kernel.
func qMatMulQ8Gemm(out []float32, p *qPrep, n int, w *qMatrix, r0, r1 int, sbuf *[]float32) {
	K, G, wpr, mode := w.Cols, w.groups(), w.wordsPerRow(), qI8ModeOf(w)
	nt := n / 4
	ab := qGemmAccs.Get().(*[]float32)
	for r0 < r1 {
		end := min(r1, r0+qGemmRows)
		sc := w.scalesOf(r0*G, end*G, sbuf)
		var bi []float32
		if w.Biases != nil {
			bi = w.Biases[r0*G : end*G]
		}
		np := (end - r0) / 2
		*ab = grow(*ab, nt*np*64)
		for k0 := 0; k0 < K; k0 += qGemmCols {
			blocks := min(qGemmCols, K-k0) / 32
			for t := 0; t < nt; t++ {
				q8, d, xs := p.pq8[t*4*K+4*k0:], p.pdv[t*K/8+k0/8:], p.pxsv[t*K+k0:]
				for j := 0; j < np; j++ {
					o := 2*j*G + k0/32
					var rb []float32
					if bi != nil {
						rb = bi[o:]
					}
					acc := (*[64]float32)((*ab)[(t*np+j)*64:])
					qGemmQ8(acc, q8, d, xs, w.Packed[(r0+2*j)*wpr+k0/4:], wpr, sc[o:], rb, G, blocks, mode, k0 > 0)
				}
			}
		}
		for t := 0; t < nt; t++ {
			for j := 0; j < np; j++ {
				storeTile(out, (*[64]float32)((*ab)[(t*np+j)*64:]), 4*t, r0+2*j, w.Rows)
			}
			if r := r0 + 2*np; r < end {
				for a := 0; a < 4; a++ {
					qI8Decode(out, p, 4*t+a, w, sc, bi, r0, r, end)
				}
			}
		}
		for i := 4 * nt; i < n; i++ {
			qI8Decode(out, p, i, w, sc, bi, r0, r0, end)
		}
		r0 = end
	}
	qGemmAccs.Put(ab)
}

// qI8Decode is rows [r, end) of input i's output by the decode kernel
// (qDotRows4I8), four rows at a time, then one; sc and bi are the scales
// and biases (nil if none) of rows r0….
func qI8Decode(out []float32, p *qPrep, i int, w *qMatrix, sc, bi []float32, r0, r, end int) {
	K, G, wpr, bpg := w.Cols, w.groups(), w.wordsPerRow(), w.GroupSize/32
	nb, mode := K/32, qI8ModeOf(w)
	var acc [32]float32
	for r < end {
		m, ws, ss := 4, wpr, G
		if r+4 > end {
			m, ws, ss = 1, 0, 0
		}
		o := (r - r0) * G
		var rb []float32
		if bi != nil {
			rb = bi[o:]
		}
		qDotRows4I8(&acc, p.q8[i*K:(i+1)*K], p.d[i*nb:(i+1)*nb], p.xsv[i*8*G:(i+1)*8*G], w.Packed[r*wpr:], ws, sc[o:], rb, ss, G, bpg, w.Bits, mode)
		for j := 0; j < m; j++ {
			out[i*w.Rows+r+j] = hsum8((*[8]float32)(acc[8*j:]))
		}
		r += m
	}
}
