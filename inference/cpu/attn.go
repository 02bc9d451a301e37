package cpu

import (
	"fmt"
	"math"

	"etchat/inference/kvcache"
	g "etchat/inference/mlxgraph"
)

// addmm is out = alpha·(mat1 @ mat2) + beta·bias.
func (s *session) addmm(n *g.AddmmNode) error {
	a, err := s.get(n.Mat1)
	if err != nil {
		return err
	}
	b, err := s.get(n.Mat2)
	if err != nil {
		return err
	}
	if len(a.shape) < 1 || len(b.shape) < 2 {
		return fmt.Errorf("addmm: shapes %v @ %v", a.shape, b.shape)
	}
	K := a.shape[len(a.shape)-1]
	var out *tensor
	if len(b.shape) == 2 {
		if b.shape[0] != K {
			return fmt.Errorf("addmm: shapes %v @ %v", a.shape, b.shape)
		}
		N := b.shape[1]
		rows := a.numel() / max(K, 1)
		shape := append(s.tmp(0, a.shape[:len(a.shape)-1]...), N)
		s.scratch[0] = shape
		x := s.fl(a)
		if s.lastOnly && s.ip == s.m.headInst && rows > 1 && len(shape) >= 2 {
			// only the last position's logits are wanted
			x = x[(rows-1)*K:]
			rows = 1
			for i := range shape[:len(shape)-1] {
				shape[i] = 1
			}
		}
		cnt, err := checkElems(shape)
		if err != nil {
			return err
		}
		o, err := s.allocF(cnt)
		if err != nil {
			return err
		}
		s.wm = wmat{n: N, k: K}
		w := &s.wm
		if b.strides[0] == 1 && (b.strides[1] == K || N == 1) && b.i == nil {
			// a transposed [N, K] row-major weight: the common linear layer
			w.f, w.h, w.fp16, w.ld, w.off = b.f, b.h, b.dt == stF16, K, b.off
		} else {
			// anything else: materialise Wᵀ in fp32
			bf := s.fl(b)
			wt := make([]float32, N*K)
			for k := 0; k < K; k++ {
				for j := 0; j < N; j++ {
					wt[j*K+k] = bf[k*N+j]
				}
			}
			w.f, w.ld = wt, K
		}
		matmul(&s.mm, o, x, rows, w, s.threads)
		out = s.newF(stF32, shape, o)
		if a.dt == stBF16 || b.dt == stBF16 {
			out.dt = stBF16
		}
		if a.dt == stF32 || b.dt == stF32 {
			out.dt = stF32
		}
	} else {
		out, err = s.batchedMatmul(a, b)
		if err != nil {
			return err
		}
	}
	if n.Alpha != 1 {
		for i := range out.f {
			out.f[i] *= n.Alpha
		}
	}
	if n.Bias != nil {
		bias, err := s.get(*n.Bias)
		if err != nil {
			return err
		}
		bv, err := s.broadcastView(bias, out.shape)
		if err != nil {
			return fmt.Errorf("addmm bias: %w", err)
		}
		bf := s.fl(bv)
		for i := range out.f {
			out.f[i] += n.Beta * bf[i]
		}
	}
	return s.set(n.Out, out)
}

// batchedMatmul is matmul with broadcast batch dimensions ([..., M, K] @
// [..., K, N]); used for small tensors (the RoPE outer product).
func (s *session) batchedMatmul(a, b *tensor) (*tensor, error) {
	if len(a.shape) < 2 {
		a = s.view(a, append([]int{1}, a.shape...), append([]int{0}, a.strides...), a.off)
	}
	ra, rb := len(a.shape), len(b.shape)
	M, K := a.shape[ra-2], a.shape[ra-1]
	if b.shape[rb-2] != K {
		return nil, fmt.Errorf("addmm: shapes %v @ %v", a.shape, b.shape)
	}
	N := b.shape[rb-1]
	batch, err := broadcastShapesInto(s.scratch[0], a.shape[:ra-2], b.shape[:rb-2])
	if err != nil {
		return nil, fmt.Errorf("addmm: %w", err)
	}
	s.scratch[0] = batch
	sh := append(s.tmp(1, batch...), M, K)
	s.scratch[1] = sh
	av, err := s.broadcastView(a, sh)
	if err != nil {
		return nil, err
	}
	sh = append(s.tmp(1, batch...), K, N)
	s.scratch[1] = sh
	bv, err := s.broadcastView(b, sh)
	if err != nil {
		return nil, err
	}
	shape := append(s.tmp(1, batch...), M, N)
	s.scratch[1] = shape
	cnt, err := checkElems(shape)
	if err != nil {
		return nil, err
	}
	x, y := s.fl(av), s.fl(bv)
	o, err := s.allocF(cnt)
	if err != nil {
		return nil, err
	}
	nb := cnt / max(M*N, 1)
	for bi := 0; bi < nb; bi++ {
		xa, yb, ob := x[bi*M*K:], y[bi*K*N:], o[bi*M*N:]
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				var acc float32
				for k := 0; k < K; k++ {
					acc += xa[i*K+k] * yb[k*N+j]
				}
				ob[i*N+j] = acc
			}
		}
	}
	return s.newF(stF32, shape, o), nil
}

// kvRows is one layer's keys or values as attend reads them: head h's
// rows at h·hs, D apart, in f (fp32) or, when h is set, bf16.
type kvRows struct {
	f  []float32
	h  []uint16
	hs int
}

// attend computes softmax(q·kᵀ·scale)·v per query head over S keys.
// q is [Hq][T][D], k and v hold [Hkv][S][D]; query t sits at logical
// position qBase+t, key j at kBase+j; a query sees keys at positions ≤ its
// own and, with window > 0, greater than its position − window. bf16 rows
// are read only with the SIMD kernels (attendDirect reports whether they apply).
//
// With threads > 1 and enough work the heads are shared with the matmul
// workers through job (nil: a fresh one), each head computed as on one
// thread, so the bits do not depend on the split. scores is scratch: S
// floats on one thread, hq·S shared (allocated when shorter).
func attend(job *mmJob, out, q []float32, k, v kvRows, hq, hkv, T, S, D, qBase, kBase, window int, scale float32, threads int, scores []float32) {
	if threads <= 1 || hq == 1 || hq*T*S*D < attnParallelMin {
		if len(scores) < min(hq, 4)*S {
			scores = make([]float32, min(hq, 4)*S)
		}
		attendHeads(out, q, k, v, hq, hkv, T, S, D, qBase, kBase, window, scale, 0, hq, scores)
		return
	}
	if len(scores) < hq*S {
		scores = make([]float32, hq*S)
	}
	if job == nil {
		job = new(mmJob)
	}
	job.attn = attnArgs{out, q, k, v, hq, hkv, T, S, D, qBase, kBase, window, scale, scores}
	// whole groups of query heads that read one KV head, where there are
	// enough of them: a KV head read by two cores crosses between their
	// caches (its rows were just written by the calling one)
	block := hq / hkv
	if hkv < min(threads, hq) {
		block = max(1, hq/min(threads, hq))
	}
	parallel(job, &job.attn, hq, block, threads)
	job.attn = attnArgs{}
}

// attnParallelMin is the work (heads·queries·keys·head size) from which
// attention's heads are shared with the workers: a llama-bench decode
// step from 32 keys on (a head then takes ~0.3 µs, a join about as much).
const attnParallelMin = 1 << 14

// attnArgs is attend's work as a blockRunner over heads, each head with
// its own S scores.
type attnArgs struct {
	out, q                                 []float32
	k, v                                   kvRows
	hq, hkv, T, S, D, qBase, kBase, window int
	scale                                  float32
	scores                                 []float32
}

func (a *attnArgs) runBlocks(h0, h1 int) {
	attendHeads(a.out, a.q, a.k, a.v, a.hq, a.hkv, a.T, a.S, a.D, a.qBase, a.kBase, a.window, a.scale, h0, h1, a.scores[h0*a.S:h1*a.S])
}

// attendDirect reports whether attend's SIMD paths (AVX2, NEON: attendSIMD)
// apply to head size D: the scores by gemv (bit for bit dotF32) and the
// weighted sum by wsumRows (bit for bit axpy), reading bf16 rows in place.
func attendDirect(D int) bool { return D > 0 && attendSIMD(D) }

// attendHeads is attend for heads [h0, h1) with scores as scratch (S
// floats, or 2·S and 4·S where two and four heads can go together).
func attendHeads(out, q []float32, k, v kvRows, hq, hkv, T, S, D, qBase, kBase, window int, scale float32, h0, h1 int, scores []float32) {
	group := hq / hkv
	direct := attendDirect(D)
	// heads taken together (each K and V row read once for them, at
	// decode and for each query of a prefill chunk): fours where
	// attendGroup allows them (and the scratch holds them), else pairs
	n := 0
	if direct {
		n = attendGroup(k, v, D)
	}
	four, two := n == 4 && len(scores) >= 4*S, n >= 2 && len(scores) >= 2*S
	for h := h0; h < h1; h++ {
		kh := h / group
		m := 0
		switch {
		case four && h+4 <= h1 && (h+3)/group == kh:
			m = 4
		case two && h+2 <= h1 && (h+1)/group == kh:
			m = 2
		}
		if m > 0 {
			for t := 0; t < T; t++ {
				attendHeadsN(m, out, q, k, v, T, t, S, D, qBase, kBase, window, scale, h, kh, scores)
			}
			h += m - 1
			continue
		}
		ko, vo := kh*k.hs, kh*v.hs
		for t := 0; t < T; t++ {
			qp := qBase + t
			qv := q[(h*T+t)*D : (h*T+t+1)*D]
			o := out[(h*T+t)*D : (h*T+t+1)*D]
			lo := 0
			if window > 0 {
				lo = max(0, qp-window+1-kBase)
			}
			hi := min(S, qp-kBase+1)
			for i := range o {
				o[i] = 0
			}
			if hi <= lo {
				continue
			}
			m := float32(math.Inf(-1))
			if direct {
				w := wmat{f: k.f, h: k.h, n: S, k: D, ld: D, off: ko}
				if !gemv(scores, qv, &w, lo, hi, false) {
					dotRows(scores[lo:hi], qv, k, ko+lo*D, D)
				}
				mulScalar(scores[lo:hi], scale)
				m = maxF32(scores[lo:hi])
			} else {
				kk := k.f[ko : ko+S*D]
				for j := lo; j < hi; j++ {
					sc := dotF32(qv, kk[j*D:(j+1)*D]) * scale
					scores[j] = sc
					m = max(m, sc)
				}
			}
			var sum float32
			subScalar(scores[lo:hi], m)
			expF32(scores[lo:hi], scores[lo:hi])
			for j := lo; j < hi; j++ {
				sum += scores[j]
			}
			inv := 1 / sum
			if direct {
				mulScalar(scores[lo:hi], inv)
				if v.h != nil {
					wsumRows(o, nil, v.h[vo+lo*D:], D, scores[lo:hi])
				} else {
					wsumRows(o, v.f[vo+lo*D:], nil, D, scores[lo:hi])
				}
				continue
			}
			vv := v.f[vo : vo+S*D]
			for j := lo; j < hi; j++ {
				axpy(o, vv[j*D:(j+1)*D], scores[j]*inv)
			}
		}
	}
}

// dotRows sets out[j] = dotF32(q, row j) for the rows from at, D apart.
func dotRows(out, q []float32, k kvRows, at, D int) {
	var row []float32
	if k.h != nil {
		row = make([]float32, D)
	}
	for j := range out {
		p := at + j*D
		if k.h != nil {
			widenBF16(row, k.h[p:p+D])
			out[j] = dotF32(q, row)
		} else {
			out[j] = dotF32(q, k.f[p:p+D])
		}
	}
}

func (s *session) scores(n int) []float32 {
	if cap(s.scoreBuf) < n {
		s.scoreBuf = make([]float32, n)
	}
	return s.scoreBuf[:n]
}

func (s *session) sdpa(n *g.SdpaNode) error {
	if n.Mask != nil {
		return fmt.Errorf("SdpaNode with an explicit mask is not supported")
	}
	q, err := s.get(n.Q)
	if err != nil {
		return err
	}
	k, err := s.get(n.K)
	if err != nil {
		return err
	}
	v, err := s.get(n.V)
	if err != nil {
		return err
	}
	if len(q.shape) != 4 || len(k.shape) != 4 || len(v.shape) != 4 || q.shape[0] != 1 || k.shape[0] != 1 {
		return fmt.Errorf("sdpa: shapes q %v k %v v %v (want [1, H, T, D])", q.shape, k.shape, v.shape)
	}
	hq, T, D := q.shape[1], q.shape[2], q.shape[3]
	hkv, S := k.shape[1], k.shape[2]
	if hkv == 0 || hq%hkv != 0 || k.shape[3] != D || v.shape[1] != hkv || v.shape[2] != S || v.shape[3] != D {
		return fmt.Errorf("sdpa: shapes q %v k %v v %v", q.shape, k.shape, v.shape)
	}
	o, err := s.allocF(hq * T * D)
	if err != nil {
		return err
	}
	qBase := 0
	if n.Causal {
		qBase = S - T
	} else {
		qBase = 1 << 30 // sees every key
	}
	kr, vr := kvRows{f: s.fl(k), hs: S * D}, kvRows{f: s.fl(v), hs: S * D}
	attend(&s.mm, o, s.fl(q), kr, vr, hq, hkv, T, S, D, qBase, 0, 0, n.Scale, s.threads, s.scores(hq*S))
	return s.set(n.Out, s.newF(q.dt, []int{1, hq, T, D}, o))
}

// kvPool is one layer's K and V storage, [heads][rows][dim] each, in the
// configured dtype.
type kvPool struct {
	rows, heads, dim int
	dt               kvcache.DType
	kf, vf           []float32
	kh, vh           []uint16
}

func (p *kvPool) bytes() int64 {
	return int64(p.rows) * int64(p.heads) * int64(p.dim) * 2 * int64(p.dt.Size())
}

// grow makes room for rows rows, copying what is held.
func (p *kvPool) grow(rows int) {
	if rows <= p.rows {
		return
	}
	n := rows * p.heads * p.dim
	old := p.rows * p.dim
	nw := rows * p.dim
	if p.dt == kvcache.Float32 {
		kf, vf := make([]float32, n), make([]float32, n)
		for h := 0; h < p.heads; h++ {
			copy(kf[h*nw:], p.kf[h*old:(h+1)*old])
			copy(vf[h*nw:], p.vf[h*old:(h+1)*old])
		}
		p.kf, p.vf = kf, vf
	} else {
		kh, vh := make([]uint16, n), make([]uint16, n)
		for h := 0; h < p.heads; h++ {
			copy(kh[h*nw:], p.kh[h*old:(h+1)*old])
			copy(vh[h*nw:], p.vh[h*old:(h+1)*old])
		}
		p.kh, p.vh = kh, vh
	}
	p.rows = rows
}

func (p *kvPool) store(dstF []float32, dstH []uint16, at int, src []float32) {
	switch p.dt {
	case kvcache.Float32:
		copy(dstF[at:], src)
	case kvcache.Float16:
		for i, v := range src {
			dstH[at+i] = f32ToF16(v)
		}
	default:
		for i, v := range src {
			dstH[at+i] = f32ToBF16(v)
		}
	}
}

func (p *kvPool) load(dst []float32, srcF []float32, srcH []uint16, at int) {
	switch p.dt {
	case kvcache.Float32:
		copy(dst, srcF[at:at+len(dst)])
	case kvcache.Float16:
		src := srcH[at : at+len(dst)]
		for i, h := range src {
			dst[i] = f16ToF32(h)
		}
	default:
		widenBF16(dst, srcH[at:at+len(dst)])
	}
}

func (s *session) updateAndAttend(n *g.UpdateAndAttendNode) error {
	if s.seq == nil {
		return fmt.Errorf("UpdateAndAttend: the session has no off-graph cache")
	}
	if n.LayerID == nil || n.Scale == nil {
		return fmt.Errorf("UpdateAndAttend: layer_id or scale not set")
	}
	layer := int(*n.LayerID)
	if layer < 0 || layer >= len(s.kv) {
		return fmt.Errorf("UpdateAndAttend: cache %d (its layer_id) out of range (%d caches)", layer, len(s.kv))
	}
	q, err := s.get(n.Q)
	if err != nil {
		return err
	}
	k, err := s.get(n.K)
	if err != nil {
		return err
	}
	v, err := s.get(n.V)
	if err != nil {
		return err
	}
	pt, err := s.get(n.Position)
	if err != nil {
		return err
	}
	pool := &s.kv[layer]
	if len(q.shape) != 4 || len(k.shape) != 4 || len(v.shape) != 4 || q.shape[0] != 1 || k.shape[0] != 1 || v.shape[0] != 1 {
		return fmt.Errorf("UpdateAndAttend: shapes q %v k %v v %v (want [1, H, T, D])", q.shape, k.shape, v.shape)
	}
	hq, T, D := q.shape[1], q.shape[2], q.shape[3]
	if k.shape[1] != pool.heads || k.shape[3] != pool.dim || D != pool.dim || k.shape[2] != T ||
		v.shape[1] != pool.heads || v.shape[2] != T || v.shape[3] != pool.dim || hq%pool.heads != 0 {
		return fmt.Errorf("UpdateAndAttend on cache %d: q %v k %v v %v do not fit its %d heads × %d", layer, q.shape, k.shape, v.shape, pool.heads, pool.dim)
	}
	if pt.numel() < 1 {
		return fmt.Errorf("UpdateAndAttend: empty position tensor")
	}
	position := int(pt.ints()[0])
	plan, err := s.seq.Plan(layer, position, T)
	if err != nil {
		return err
	}
	need := 0
	for _, r := range plan.Writes() {
		need = max(need, r.Start+r.Len)
	}
	rows := s.cfg.PoolRows(s.cfg.Layers[layer], need)
	if rows < need {
		return fmt.Errorf("UpdateAndAttend on cache %d: %d rows needed, its pool holds at most %d", layer, need, rows)
	}
	pool.grow(rows)

	H := pool.heads
	kf, vf := s.fl(k), s.fl(v)
	off := 0
	for _, r := range plan.Writes() {
		for h := 0; h < H; h++ {
			src := (h*T + off) * D
			dst := (h*pool.rows + r.Start) * D
			pool.store(pool.kf, pool.kh, dst, kf[src:src+r.Len*D])
			pool.store(pool.vf, pool.vh, dst, vf[src:src+r.Len*D])
		}
		off += r.Len
	}
	S := plan.End() - plan.ReadBase
	o, err := s.allocF(hq * T * D)
	if err != nil {
		return err
	}
	window := 0
	if l := s.cfg.Layers[layer]; l.Kind == kvcache.Ring {
		window = l.Window
	}
	dt := q.dt
	if n.OutDType != nil && isFloatST(int(*n.OutDType)) {
		dt = int(*n.OutDType)
	}
	s.plans = append(s.plans, plan)
	if rd := plan.Reads(); len(rd) == 1 && rd[0].Len == S && pool.dt != kvcache.Float16 && attendDirect(D) {
		// one range of the pool: attend reads it in place
		at, hs := rd[0].Start*D, pool.rows*D
		kr, vr := kvRows{hs: hs}, kvRows{hs: hs}
		if pool.dt == kvcache.Float32 {
			kr.f, vr.f = pool.kf[at:], pool.vf[at:]
		} else {
			kr.h, vr.h = pool.kh[at:], pool.vh[at:]
		}
		attend(&s.mm, o, s.fl(q), kr, vr, hq, H, T, S, D, position, plan.ReadBase, window, *n.Scale, s.threads, s.scores(hq*S))
		return s.set(n.Out, s.newF(dt, []int{1, hq, T, D}, o))
	}
	need = H * S * D
	if cap(s.kbuf) < need {
		c := max(need, 2*cap(s.kbuf)) // grows with the context, doubling
		s.kbuf, s.vbuf = make([]float32, c), make([]float32, c)
	}
	kb, vb := s.kbuf[:need], s.vbuf[:need]
	j := 0
	for _, r := range plan.Reads() {
		for h := 0; h < H; h++ {
			src := (h*pool.rows + r.Start) * D
			dst := (h*S + j) * D
			pool.load(kb[dst:dst+r.Len*D], pool.kf, pool.kh, src)
			pool.load(vb[dst:dst+r.Len*D], pool.vf, pool.vh, src)
		}
		j += r.Len
	}
	kr, vr := kvRows{f: kb, hs: S * D}, kvRows{f: vb, hs: S * D}
	attend(&s.mm, o, s.fl(q), kr, vr, hq, H, T, S, D, position, plan.ReadBase, window, *n.Scale, s.threads, s.scores(hq*S))
	return s.set(n.Out, s.newF(dt, []int{1, hq, T, D}, o))
}
