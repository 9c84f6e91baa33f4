package kernels

import (
	"math"
)

// The attention kernels work on tiles of one (batch, head): a block of up
// to 64 query rows against a block of keys (256 in forward, 64 in
// backward), the products done by Gemm (the AVX2 micro-kernel for
// float32) into a worker's scratch tile of scores. With causal masking,
// key blocks entirely above the diagonal are skipped, and in the diagonal
// block each row's masked keys are neither exponentiated nor summed (set
// to 0 after). float32 inputs are computed in float32 (Gemm's float32
// accumulation, exp32 in assembly over whole tiles), with each row's
// softmax sum and log-sum-exp in float64; float64 inputs stay float64
// throughout (Gemm's float64 path, math.Exp).
//
// Memory: per worker a 64×256 score tile (forward) or two 64×64 tiles
// (backward), a 64×D output accumulator (forward) and T row statistics
// (backward): Go-heap scratch, reused across calls, independent of T² (no
// T×T score matrix exists at any point).
const (
	attnFQ = 64  // query rows per tile in forward
	attnFK = 256 // keys per tile in forward
	attnBQ = 64  // query rows per tile in backward
	attnBK = 64  // keys per tile in backward
	// attnSerial is the work (B·H·T²·D multiply-adds) below which a call
	// runs on the calling goroutine: waking a parked worker costs more.
	attnSerial = 1 << 20
)

// attnScratch is one worker's tiles, reused through attnScratches.
type attnScratch struct{ s, p, acc, row []byte }

var attnScratches freeList[attnScratch]

// attnFor runs f over [0, units) on the workers (claimed one unit at a
// time), or inline when the whole call is small.
func attnFor(units, work int, f func(lo, hi int)) {
	if work < attnSerial || units == 1 {
		f(0, units)
		return
	}
	claimFor(units, 1, f)
}

// Attention computes scaled-dot-product attention for contiguous q, k, v
// (b·h heads of (t, d) each): out_i = Σ_j softmax_j(scale·q_i·k_j)·v_j and
// lse_i = log Σ_j exp(scale·q_i·k_j), with j ≤ i when causal; lse (b·h·t)
// has the inputs' type, so float64 attention keeps float64 statistics.
//
// Each block of query rows walks the key blocks with an online softmax,
// FlashAttention style: S = scale·Q_i·K_jᵀ (one Gemm), a running maximum
// m and sum l per row, P = exp(S − m), the output accumulator rescaled by
// exp(m_old − m_new) when a row's maximum grows and then O += P·V_j (a
// second Gemm). Units of work are (head, query block) pairs, claimed by
// the workers.
func Attention[T Float](out, lse, q, k, v []T, b, h, t, d int, scale float64, causal bool) {
	attnRun(out, lse, q, k, v, b, h, t, d, scale, causal, nil)
}

// attnRun is Attention with rnd applied to each probability tile (see
// attnForwardBlock).
func attnRun[T Float](out, lse, q, k, v []T, b, h, t, d int, scale float64, causal bool, rnd attnTileRound[T]) {
	if b*h*t*d == 0 {
		return
	}
	nq := ceilDiv(t, attnFQ)
	attnFor(b*h*nq, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		s := scratchView[T](&sc.s, attnFQ*attnFK)
		acc := scratchView[T](&sc.acc, attnFQ*d)
		st := scratchView[float64](&sc.row, 2*attnFQ)
		for u := lo; u < hi; u++ {
			bh, qb := u/nq, u%nq
			attnForwardBlock(out, lse, q, k, v, s, acc, st, bh, qb*attnFQ, t, d, scale, causal, rnd)
		}
	})
}

// attnForwardBlock computes the output rows [i0, i0+attnFQ) ∩ [0, t) of
// head bh. A non-nil rnd rounds the probability tile in place after the
// row sums are taken and before P·V (the 16-bit attention's semantics,
// see attnTileRound).
func attnForwardBlock[T Float](out, lse, q, k, v, s, acc []T, st []float64, bh, i0, t, d int, scale float64, causal bool, rnd attnTileRound[T]) {
	base := bh * t * d
	mq, nk, m, l, acc := attnBlockStart(st, acc, i0, t, d, causal)
	for j0 := 0; j0 < nk; j0 += attnFK {
		nb := min(attnFK, nk-j0)
		// S = scale·Q_i·K_jᵀ, (mq, nb) with row stride attnFK.
		Gemm(GemmArgs{TransB: true, M: mq, N: nb, K: d, Alpha: scale,
			OffA: base + i0*d, OffB: base + j0*d, LdA: d, LdB: d, LdC: attnFK}, q, k, s)
		// P = exp(S − m) with the running maximum m updated first; the
		// factor by which each row's earlier sum and output shrink in c.
		var c [attnFQ]float64
		attnSoftmaxTile(s, attnFK, i0, j0, mq, nb, causal, m, l, c[:mq])
		attnRescale(acc, d, c[:mq])
		rnd.apply(s, attnFK, mq, nb)
		// O_i += P·V_j.
		Gemm(GemmArgs{M: mq, N: d, K: nb, Alpha: 1, Beta: 1,
			OffB: base + j0*d, LdA: attnFK, LdB: d, LdC: d}, s, v, acc)
	}
	for r := range mq {
		inv := 1 / l[r]
		o := out[base+(i0+r)*d:][:d]
		for x, a := range acc[r*d : (r+1)*d] {
			o[x] = T(float64(a) * inv)
		}
		lse[bh*t+i0+r] = T(m[r] + math.Log(l[r]))
	}
}

// attnBlockStart starts forward query block i0 of a head: its rows mq,
// the keys it sees nk, its running maxima m (−Inf) and sums l (0) in st,
// and its accumulator acc, cleared.
func attnBlockStart[T Float](st []float64, acc []T, i0, t, d int, causal bool) (mq, nk int, m, l []float64, a []T) {
	mq = min(attnFQ, t-i0)
	m, l = st[:mq], st[attnFQ:attnFQ+mq]
	for r := range mq {
		m[r], l[r] = math.Inf(-1), 0
	}
	a = acc[:mq*d]
	clear(a)
	nk = t
	if causal {
		nk = i0 + mq
	}
	return mq, nk, m, l, a
}

// attnSoftmaxTile is the online-softmax step on the (mq, nb) score tile
// s (row stride ld) of query rows i0… against keys j0…: for each row, the
// new maximum m_r (over the keys it may see), c_r = exp(m_old − m_new) (1
// when the maximum held or for the first block), s = exp(s − m_r) (0 for
// masked keys) and l_r = l_r·c_r + Σ s.
func attnSoftmaxTile[T Float](s []T, ld, i0, j0, mq, nb int, causal bool, m, l, c []float64) {
	var lens [rowsMax]int
	attnLens(lens[:mq], i0, j0, nb, causal)
	update := func(r int, mx float64) {
		c[r] = 1
		if j0 > 0 && mx > m[r] { // the maximum grew: rescale what was summed
			c[r] = math.Exp(m[r] - mx)
		}
		m[r] = max(m[r], mx)
	}
	if s32, ok := f32s(s); ok {
		var mx, shift [rowsMax]float32
		var sums [rowsMax]float64
		pad := attnPad(s32, ld, mq, lens[:mq])
		maxRows(s32, ld, mq, pad, mx[:mq])
		for r := range mq {
			update(r, float64(mx[r]))
			shift[r] = float32(m[r])
		}
		expRows(s32, ld, mq, pad, shift[:mq], sums[:mq])
		for r := range mq {
			l[r] = l[r]*c[r] + sums[r]
			clear(s32[r*ld+min(lens[r], nb) : r*ld+nb])
		}
		return
	}
	for r := range mq {
		row := s[r*ld : r*ld+lens[r]]
		update(r, attnRowMax(row))
		l[r] = l[r]*c[r] + attnExpShift(row, m[r])
		clear(s[r*ld+min(lens[r], nb) : r*ld+nb])
	}
}

// attnPad sets to −Inf the elements of each row of the tile s (row
// stride ld, a multiple of 8) from lens[r] up to the next multiple of 8,
// and returns those rounded lengths in place of lens: the assembly then
// handles whole rows, and the padding changes neither a row's maximum nor
// (exp(−Inf) = 0) its sum.
func attnPad(s []float32, ld, rows int, lens []int) []int {
	inf := float32(math.Inf(-1))
	for r := range rows {
		n := lens[r]
		up := min(ld, (n+7)&^7)
		for x := r*ld + n; x < r*ld+up; x++ {
			s[x] = inf
		}
		lens[r] = up
	}
	return lens
}

// attnLens sets lens[r] to the number of keys j0, j0+1, … (of nb) that
// query i0+r sees: nb, or when causal those up to i0+r.
func attnLens(lens []int, i0, j0, nb int, causal bool) {
	for r := range lens {
		lens[r] = nb
		if causal {
			lens[r] = max(0, min(nb, i0+r+1-j0))
		}
	}
}

// attnRowMax returns the largest element of row as float64 (−Inf when all
// are −Inf; the float64 path; float32 tiles take maxRows). A NaN element is
// skipped: exp(NaN − m) still carries it into the row's sum and output.
func attnRowMax[T Float](row []T) float64 {
	inf := T(math.Inf(-1))
	m0, m1, m2, m3 := inf, inf, inf, inf
	i := 0
	for ; i+4 <= len(row); i += 4 {
		r := row[i : i+4 : i+4]
		if r[0] > m0 {
			m0 = r[0]
		}
		if r[1] > m1 {
			m1 = r[1]
		}
		if r[2] > m2 {
			m2 = r[2]
		}
		if r[3] > m3 {
			m3 = r[3]
		}
	}
	for ; i < len(row); i++ {
		if row[i] > m0 {
			m0 = row[i]
		}
	}
	return float64(max(m0, m1, m2, m3))
}

// attnExpShift sets row = exp(row − shift) with math.Exp and returns the
// sum (the float64 path; float32 tiles take expRows).
func attnExpShift[T Float](row []T, shift float64) float64 {
	var sum float64
	for i, x := range row {
		e := math.Exp(float64(x) - shift)
		row[i] = T(e)
		sum += e
	}
	return sum
}

// AttentionGrad writes dq, dk, dv (each like q) from dout, recomputing each
// probability p_ij = exp(scale·q_i·k_j − lse_i) from q, k and the forward's
// lse, FlashAttention-2 style:
//
//	δ_i = dout_i·out_i
//	ds_ij = p_ij·(dout_i·v_j − δ_i)
//	dv_j = Σ_i p_ij·dout_i, dk_j = scale·Σ_i ds_ij·q_i, dq_i = scale·Σ_j ds_ij·k_j
//
// For each head, key blocks j in order and, inside, the query blocks i that
// see them: S = scale·Q_i·K_jᵀ, P = exp(S − lse_i), dV_j += Pᵀ·dO_i,
// dP = dO_i·V_jᵀ, dS = P∘(dP − δ_i), dQ_i += scale·dS·K_j and dK_j +=
// scale·dSᵀ·Q_i, five Gemms per tile pair, each accumulating straight into
// the output gradients (so no accumulator beyond the two tiles). A head is
// one unit of work, because its dq rows collect from every key block; the
// workers claim heads.
func AttentionGrad[T Float](dq, dk, dv, dout, q, k, v, out, lse []T, b, h, t, d int, scale float64, causal bool) {
	attnGradRun(dq, dk, dv, dout, q, k, v, out, lse, b, h, t, d, scale, causal, nil)
}

// attnGradRun is AttentionGrad with rnd applied to each P and dS tile
// (see attnBackwardHead).
func attnGradRun[T Float](dq, dk, dv, dout, q, k, v, out, lse []T, b, h, t, d int, scale float64, causal bool, rnd attnTileRound[T]) {
	if b*h*t*d == 0 {
		return
	}
	attnFor(b*h, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		s := scratchView[T](&sc.s, attnBQ*attnBK)
		p := scratchView[T](&sc.p, attnBQ*attnBK)
		delta := scratchView[float64](&sc.row, t)
		for bh := lo; bh < hi; bh++ {
			attnBackwardHead(dq, dk, dv, dout, q, k, v, out, lse, s, p, delta, bh, t, d, scale, causal, rnd)
		}
	})
}

// attnBackwardHead computes the gradients of head bh. A non-nil rnd
// rounds P (after dS is taken from the unrounded P) before Pᵀ·dO and dS
// before dS·K and dSᵀ·Q (see attnTileRound).
func attnBackwardHead[T Float](dq, dk, dv, dout, q, k, v, out, lse, s, p []T, delta []float64, bh, t, d int, scale float64, causal bool, rnd attnTileRound[T]) {
	base := bh * t * d
	for i := range t {
		delta[i] = attnDot(dout[base+i*d:][:d], out[base+i*d:][:d])
	}
	ls := lse[bh*t:][:t]
	attnTilePairs(t, causal, func(j0, nb, i0, mq int, first, betaQ float64) {
		// P = exp(scale·Q_i·K_jᵀ − lse_i) in s.
		Gemm(GemmArgs{TransB: true, M: mq, N: nb, K: d, Alpha: scale,
			OffA: base + i0*d, OffB: base + j0*d, LdA: d, LdB: d, LdC: attnBK}, q, k, s)
		attnProbTile(s, attnBK, i0, j0, mq, nb, causal, ls[i0:i0+mq])
		// dP = dO_i·V_jᵀ in p, then dS = P∘(dP − δ_i) in place.
		Gemm(GemmArgs{TransB: true, M: mq, N: nb, K: d, Alpha: 1,
			OffA: base + i0*d, OffB: base + j0*d, LdA: d, LdB: d, LdC: attnBK}, dout, v, p)
		attnDSTile(p, s, attnBK, mq, nb, delta[i0:i0+mq])
		rnd.apply(s, attnBK, mq, nb)
		rnd.apply(p, attnBK, mq, nb)
		// dV_j += Pᵀ·dO_i.
		Gemm(GemmArgs{TransA: true, M: nb, N: d, K: mq, Alpha: 1, Beta: first,
			OffB: base + i0*d, OffC: base + j0*d, LdA: attnBK, LdB: d, LdC: d}, s, dout, dv)
		// dQ_i += scale·dS·K_j (the first key block writes it).
		Gemm(GemmArgs{M: mq, N: d, K: nb, Alpha: scale, Beta: betaQ,
			OffB: base + j0*d, OffC: base + i0*d, LdA: attnBK, LdB: d, LdC: d}, p, k, dq)
		// dK_j += scale·dSᵀ·Q_i.
		Gemm(GemmArgs{TransA: true, M: nb, N: d, K: mq, Alpha: scale, Beta: first,
			OffB: base + i0*d, OffC: base + j0*d, LdA: attnBK, LdB: d, LdC: d}, p, q, dk)
	})
}

// attnTileRound rounds a (rows, cols) tile of row stride ld in place to
// the 16-bit operand type of the attention it serves; nil rounds nothing
// (float32 and float64 Attention).
type attnTileRound[T Float] func(s []T, ld, rows, cols int)

// apply runs r on the tile unless r is nil.
func (r attnTileRound[T]) apply(s []T, ld, rows, cols int) {
	if r != nil {
		r(s, ld, rows, cols)
	}
}

// attnTilePairs calls f for every pair of a key block (keys j0…, nb of
// them) and a query block that sees it (rows i0…, mq of them) in a
// head's backward, key blocks in order and query blocks in order inside
// each, with the betas of dK_j and dV_j (0 for a key block's first query
// block, so that it writes them) and of dQ_i (0 in the first key block).
func attnTilePairs(t int, causal bool, f func(j0, nb, i0, mq int, betaKV, betaQ float64)) {
	for j0 := 0; j0 < t; j0 += attnBK {
		i0 := 0
		if causal {
			i0 = j0 / attnBQ * attnBQ
		}
		betaKV, betaQ := 0.0, 1.0
		if j0 == 0 {
			betaQ = 0
		}
		for ; i0 < t; i0 += attnBQ {
			f(j0, min(attnBK, t-j0), i0, min(attnBQ, t-i0), betaKV, betaQ)
			betaKV = 1
		}
	}
}

// attnProbTile sets the (mq, nb) score tile s (row stride ld) of query
// rows i0… against keys j0… to the probabilities exp(s − lse_r), 0 for
// masked keys.
func attnProbTile[T Float](s []T, ld, i0, j0, mq, nb int, causal bool, lse []T) {
	var lens [rowsMax]int
	attnLens(lens[:mq], i0, j0, nb, causal)
	if s32, ok := f32s(s); ok {
		l32, _ := f32s(lse)
		expRows(s32, ld, mq, attnPad(s32, ld, mq, lens[:mq]), l32, nil)
	} else {
		for r := range mq {
			attnExpShift(s[r*ld:r*ld+lens[r]], float64(lse[r]))
		}
	}
	for r := range mq {
		clear(s[r*ld+min(lens[r], nb) : r*ld+nb])
	}
}

// attnDSTile sets dp = p∘(dp − δ_r) over the (mq, nb) tiles dp and p (row
// stride ld).
func attnDSTile[T Float](dp, p []T, ld, mq, nb int, delta []float64) {
	if dp32, ok := f32s(dp); ok {
		p32, _ := f32s(p)
		var d32 [rowsMax]float32
		for r := range mq {
			d32[r] = float32(delta[r])
		}
		// Whole groups of 8 in assembly, up to the row stride: the
		// columns past nb are scratch nobody reads.
		dsRows(dp32, p32, ld, mq, min(ld, (nb+7)&^7), d32[:mq])
		return
	}
	for r := range mq {
		row, pr, dl := dp[r*ld:r*ld+nb], p[r*ld:r*ld+nb], T(delta[r])
		for x, g := range row {
			row[x] = pr[x] * (g - dl)
		}
	}
}

// attnDot returns Σ a_i·b_i: for float32, eight float32 running sums
// (a product and a sum per element, no conversions) added in float64;
// for float64, accumulated in float64.
func attnDot[T Float](a, b []T) float64 {
	if a32, ok := f32s(a); ok {
		b32, _ := f32s(b)
		return dot32(a32, b32)
	}
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dot32 is attnDot for float32.
func dot32(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (float64(s0) + float64(s1) + float64(s2) + float64(s3)) + (float64(s4) + float64(s5) + float64(s6) + float64(s7))
}
