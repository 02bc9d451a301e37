//go:build arm64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The pair layout's prefill tile with SMMLA (FEAT_I8MM: Apple M2 and
// later, Arm v8.6): one instruction multiplies a 2×8 matrix of signed
// bytes by an 8×2 one into a 2×2 int32 matrix, here two weight rows by two
// inputs over the eight products of one int32 lane (four bytes of low
// nibbles and their four of high nibbles), where SDOT gives one row and
// one input four products per lane. The nibbles are made signed (Q − 8),
// so the sums are Σ(Q−8)·q = Σ Q·q − 8·Σq: the lanes minus c exactly,
// as c16 is 8·Σq by construction (qPrepPairsRowGo; qI8Pairs takes only
// BiasMul −8), and the tile reads no c16. The lanes are then converted
// and multiplied in as qPairGo does (fma(lane, d·s, acc) per pair), so
// every lane has the other tiles' and decoding's bits. The weight bytes
// are rearranged for SMMLA in the tile (once per two rows for four
// inputs); the inputs are rearranged once, when packed
// (packPairsSMMLA).

// useI8MM switches the pair layout's prefill to the SMMLA tile (with
// useNEON and useDotProd; settable for the tests).
var useI8MM = cpu.ARM64.HasI8MM

// packPairsTiles packs the prepared inputs for prefill's tile: as the
// SMMLA tile reads them where it runs, else as packPairs does.
func (q *qPrep) packPairsTiles(n, K int) {
	q.smmla = useNEON && useDotProd && useI8MM
	if q.smmla {
		q.packPairsSMMLA(n, K)
		return
	}
	q.packPairs(n, K)
}

// qGemmPairsTile is the tile for the inputs p packs.
func qGemmPairsTile(p *qPrep) qGemmPairsFunc {
	if p.smmla {
		return qGemmPairsSMMLA
	}
	return qGemmPairs
}

// packPairsSMMLA is packPairs for the SMMLA tile: per four inputs and pair
// of blocks, 256 bytes of q — per input pair P (inputs 2P, 2P+1), block h
// and lane m < 4, 16 bytes: input 2P's four bytes of lane m's low-nibble
// partners (q[16h+4m:]) and its four of high-nibble partners
// (q[32+16h+4m:]), then input 2P+1's — and 32 floats of dv, per P and h
// (d_2P, d_2P+1, d_2P, d_2P+1) of block h, then 16 not read (the slots
// packPairs has, so that prefill slices both packings alike). pc16 is
// sized as packPairs sizes it and not written: the tile reads no c16.
func (q *qPrep) packPairsSMMLA(n, K int) {
	nt := n / 4
	q.pq8, q.pdv, q.pc16 = grow(q.pq8, nt*4*K), grow(q.pdv, nt*K/2), grow(q.pc16, nt*K)
	for t := 0; t < nt; t++ {
		q8, dv := q.pq8[t*4*K:], q.pdv[t*K/2:]
		for pr := 0; pr < K/64; pr++ {
			for P := 0; P < 2; P++ {
				for h := 0; h < 2; h++ {
					for c := 0; c < 2; c++ {
						in := 4*t + 2*P + c
						src := q.q8[in*K+64*pr:]
						for m := 0; m < 4; m++ {
							at := 256*pr + 128*P + 64*h + 16*m + 8*c
							copy(q8[at:at+4], src[16*h+4*m:])
							copy(q8[at+4:at+8], src[32+16*h+4*m:])
						}
						d := q.d[in*K/8+8*pr+4*h]
						dv[32*pr+8*P+4*h+c], dv[32*pr+8*P+4*h+2+c] = d, d
					}
				}
			}
			clear(dv[32*pr+16 : 32*pr+32])
		}
	}
}

//go:noescape
func qGemmPairsSMMLA2x4NEON(q8 *int8, dv *float32, words *uint32, wstride int, scales *float32, sstride, pairs, accum int, out *[64]float32)

// qGemmPairsSMMLA is qGemmPairs (its arguments, its lanes' bits) on
// inputs packed by packPairsSMMLA; c16 is not read.
func qGemmPairsSMMLA(acc *[64]float32, q8 []int8, dv []float32, c16 []int16, words []uint32, wstride int, scales []float32, sstride, pairs int, accum bool) {
	if pairs < 1 {
		if !accum {
			*acc = [64]float32{}
		}
		return
	}
	qGemmPairsOperands(q8, dv, c16, words, wstride, scales, sstride, pairs)
	qGemmPairsSMMLA2x4NEON(&q8[0], &dv[0], &words[0], 4*wstride, &scales[0], 4*sstride, pairs, b2i(accum), acc)
}
