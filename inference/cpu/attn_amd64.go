//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// useAttn4 is settable for the tests (false: one head at a time).
var useAttn4 = useAVX2 && cpu.X86.HasAVX512F

//go:noescape
func attnScores4BF16AVX512(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)

//go:noescape
func attnWsum4BF16AVX512(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)

// attend4 reports whether four query heads of one KV head can be taken
// together at decode: bf16 rows, a head size of a multiple of 64, AVX-512.
func attend4(k, v kvRows, D int) bool {
	return useAttn4 && k.h != nil && v.h != nil && D > 0 && D%64 == 0
}

// attnScores4 sets sc[i][j] for heads i < 4 (queries q[i·D:], scores
// sc[i·S:]) and key rows j < n (k from at, D apart): gemv's dots, bit for bit.
func attnScores4(sc []float32, S int, q []float32, k []uint16, D, n int) {
	_, _, _ = sc[3*S+n-1], q[4*D-1], k[n*D-1]
	attnScores4BF16AVX512(&q[0], 4*D, &k[0], D, n, &sc[0], 4*S)
}

// attnWsum4 adds to o[i·D:] (i < 4) Σ_j p[i·S+j]·row j (j < n; bf16 rows
// D apart from v[0]): wsumRows per head, bit for bit.
func attnWsum4(o []float32, v []uint16, D, n int, p []float32, S int) {
	_, _, _ = o[4*D-1], v[n*D-1], p[3*S+n-1]
	attnWsum4BF16AVX512(&o[0], 4*D, &v[0], D, n, &p[0], 4*S)
}

// attendHeads4 is attendHeads for the four decode heads h…h+3 of KV head
// kh with bf16 rows: the scores and the weighted sums of the four are
// computed together (each row widened once), the softmax per head as
// attendHeads does it, so the bits are the same.
func attendHeads4(out, q []float32, k, v kvRows, S, D, qBase, kBase, window int, scale float32, h, kh int, scores []float32) {
	lo := 0
	if window > 0 {
		lo = max(0, qBase-window+1-kBase)
	}
	hi := min(S, qBase-kBase+1)
	o := out[h*D : (h+4)*D]
	clear(o)
	if hi <= lo {
		return
	}
	ko, vo := kh*k.hs+lo*D, kh*v.hs+lo*D
	n := hi - lo
	attnScores4(scores[lo:], S, q[h*D:], k.h[ko:], D, n)
	for i := 0; i < 4; i++ {
		sc := scores[i*S+lo : i*S+hi]
		for j := range sc {
			sc[j] *= scale
		}
		m := maxF32(sc)
		for j := range sc {
			sc[j] -= m
		}
		expF32(sc, sc)
		var sum float32
		for _, e := range sc {
			sum += e
		}
		inv := 1 / sum
		for j := range sc {
			sc[j] *= inv
		}
	}
	attnWsum4(o, v.h[vo:], D, n, scores[lo:], S)
}
