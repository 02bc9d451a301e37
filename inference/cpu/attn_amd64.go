//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// useAttn4 and useAttn2 are settable for the tests (false: one head at a
// time).
var (
	useAttn4 = useAVX2 && cpu.X86.HasAVX512F
	useAttn2 = useAVX2
)

// attendSIMD says attend's direct paths run for head size D (attendDirect):
// gemv and wsumRows take rows of a multiple of 8.
func attendSIMD(D int) bool { return useAVX2 && D%8 == 0 }

//go:noescape
func attnScores4BF16AVX512(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)

//go:noescape
func attnWsum4BF16AVX512(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)

//go:noescape
func attnScores2BF16AVX2(q *float32, qs int, k *uint16, d, rows int, out *float32, os int)

//go:noescape
func attnWsum2BF16AVX2(o *float32, os int, v *uint16, d, rows int, p *float32, ps int)

// attendGroup reports how many query heads of one KV head attendHeadsN
// takes together at most at decode with these rows and head size: 4
// (AVX-512, head sizes of a multiple of 64; pairs where four do not fit),
// 2 (AVX2, of 32), or 0; bf16 rows only.
func attendGroup(k, v kvRows, D int) int {
	switch {
	case k.h == nil || v.h == nil || D <= 0:
		return 0
	case useAttn4 && D%64 == 0:
		return 4
	case useAttn2 && D%32 == 0:
		return 2
	}
	return 0
}

// attendHeadsN is attendHeads for query t (of T) of the n (attendGroup)
// heads h… of KV head kh with bf16 rows: their scores and weighted sums
// computed together (each row widened once, every head's sums kept as
// the per-row kernels add them), the softmax per head as attendHeads
// does it, so the bits are the same. The heads' queries and outputs are
// T·D apart (D at decode).
func attendHeadsN(n int, out, q []float32, k, v kvRows, T, t, S, D, qBase, kBase, window int, scale float32, h, kh int, scores []float32) {
	qp := qBase + t
	lo := 0
	if window > 0 {
		lo = max(0, qp-window+1-kBase)
	}
	hi := min(S, qp-kBase+1)
	first, last := (h*T+t)*D, ((h+n-1)*T+t+1)*D // the first head's row, one past the last head's
	o := out[first:last]
	for i := 0; i < n; i++ {
		clear(o[i*T*D : i*T*D+D])
	}
	if hi <= lo {
		return
	}
	ko, vo := kh*k.hs+lo*D, kh*v.hs+lo*D
	rows := hi - lo
	// bounds: n heads' queries, scores and outputs, rows rows of K and V
	qs, sc, kr, vr := q[first:last], scores[lo:(n-1)*S+hi], k.h[ko:ko+rows*D], v.h[vo:vo+rows*D]
	if n == 4 {
		attnScores4BF16AVX512(&qs[0], 4*T*D, &kr[0], D, rows, &sc[0], 4*S)
	} else {
		attnScores2BF16AVX2(&qs[0], 4*T*D, &kr[0], D, rows, &sc[0], 4*S)
	}
	for i := 0; i < n; i++ {
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
	if n == 4 {
		attnWsum4BF16AVX512(&o[0], 4*T*D, &vr[0], D, rows, &sc[0], 4*S)
	} else {
		attnWsum2BF16AVX2(&o[0], 4*T*D, &vr[0], D, rows, &sc[0], 4*S)
	}
}
