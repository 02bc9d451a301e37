//go:build arm64 && !purego

package cpu

// attendSIMD says attend reads the KV pool's fp32 and bf16 rows in place
// (attendDirect) for head sizes of a multiple of 16 (the NEON kernels'
// step; others are widened into copies as before): the scores by gemv
// (dotF32NEON, dotBF16NEON), the weighted sum by wsumRows (axpyNEON,
// axpyBF16NEON), each bit for bit the copy path's dotF32 and axpy. Heads
// of one KV head are taken two at a time where attendGroup allows it.
func attendSIMD(D int) bool { return useNEON && D%16 == 0 }

//go:generate env -u GOARCH -u GOOS go run attn_neon_gen.go

// useAttn4 and useAttn2 are settable for the tests, as on amd64; NEON has
// no four-head kernel (its 32 registers hold two heads' sixteen lanes).
var useAttn4, useAttn2 = false, useNEON

//go:noescape
func attnScores2BF16NEON(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)

//go:noescape
func attnWsum2BF16NEON(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)

// attendGroup reports how many query heads of one KV head attendHeadsN
// takes together: 2 for bf16 rows of a multiple of 16, else 0.
func attendGroup(k, v kvRows, D int) int {
	if !useAttn2 || !useNEON || k.h == nil || v.h == nil || D <= 0 || D%16 != 0 {
		return 0
	}
	return 2
}

// attendHeadsN is attendHeads for query t (of T) of the two heads h, h+1
// of KV head kh with bf16 rows: scores and weighted sums of both from one
// widening of each row, the softmax per head as attendHeads does it, so
// the bits of one head at a time (attn_amd64.go's, for two heads). The
// heads' queries and outputs are T·D apart.
func attendHeadsN(n int, out, q []float32, k, v kvRows, T, t, S, D, qBase, kBase, window int, scale float32, h, kh int, scores []float32) {
	if n != 2 {
		panic("cpu: attendHeadsN: NEON takes two heads")
	}
	qp := qBase + t
	lo := 0
	if window > 0 {
		lo = max(0, qp-window+1-kBase)
	}
	hi := min(S, qp-kBase+1)
	first, last := (h*T+t)*D, ((h+1)*T+t+1)*D // the first head's row, one past the second's
	o := out[first:last]
	clear(o[:D])
	clear(o[T*D : T*D+D])
	if hi <= lo {
		return
	}
	ko, vo := kh*k.hs+lo*D, kh*v.hs+lo*D
	rows := hi - lo
	// bounds: both heads' queries, scores and outputs, rows rows of K and V
	qs, sc, kr, vr := q[first:last], scores[lo:S+hi], k.h[ko:ko+rows*D], v.h[vo:vo+rows*D]
	attnScores2BF16NEON(&qs[0], 4*T*D, &kr[0], D, rows, &sc[0], 4*S)
	for i := 0; i < 2; i++ {
		sc := scores[i*S+lo : i*S+hi]
		mulScalar(sc, scale)
		subScalar(sc, maxF32(sc))
		expF32(sc, sc)
		var sum float32
		for _, e := range sc {
			sum += e
		}
		mulScalar(sc, 1/sum)
	}
	attnWsum2BF16NEON(&o[0], 4*T*D, &vr[0], D, rows, &sc[0], 4*S)
}
