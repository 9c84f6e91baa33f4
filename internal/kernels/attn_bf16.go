package kernels

import "math"

// The bfloat16 attention on the pair kernel: on a CPU with AVX512_BF16,
// AttentionHalf and AttentionGradHalf with bfloat16 operands read q, k, v
// and dout as bfloat16 straight from the tensors through the GEMM's pair
// packers, and every product of the tiles (S = Q·Kᵀ, O += P·V, dV += Pᵀ·dO,
// dP = dO·Vᵀ, dQ += dS·K, dK += dSᵀ·Q) runs on VDPBF16PS with float32
// accumulation (GemmHalf's pair micro-kernel); on a CPU with AMX-BF16
// (HEADROOM_NO_AMX unset) the products of depth 32 or more (the head
// dimension for S and dP, the tile's rows or columns for the others) run
// on TDPBF16PS, GemmHalf's AMX kernel, as GemmHalf itself picks (see
// gemm_amx.go: amxDot is that instruction's rounding, the AMX kernel's
// Go twin amxGo). The probabilities P and the
// score gradients dS are rounded to bfloat16 (nearest even) to be an
// operand of the second product. The online-softmax statistics stay as in
// Attention: row maxima and exp in float32, row sums and log-sum-exp in
// float64, lse stored as float32; the gradients accumulate in float32
// heads and are narrowed once at the end.
//
// What rounds differently from the widened path (Attention in float32 on
// the widened operands, P and dS rounded to bfloat16 the same way):
//   - each product is the instruction's: per lane, a pair's two products
//     added one after the other, each rounded to float32, denormal inputs
//     and results flushed to zero (dotBF16Pair), in the pair kernel's
//     order, instead of float32 FMAs; on AMX, 16 pairs' low and high
//     products summed in two float32 lanes and added to C once per step
//     (amxDot);
//   - scale multiplies the float32 scores after Q·Kᵀ (one rounding)
//     instead of being folded into the packed Q, and multiplies dQ and
//     dK once after their sums instead of each dS·K and dSᵀ·Q product.
//
// Both paths (and the cuda device's attention) round P (in P·V and
// Pᵀ·dO) and dS (in dS·K and dSᵀ·Q) to bfloat16, a relative error of at
// most 2⁻⁹ per element, as PyTorch's flash attention does for 16-bit
// operands; each row's sum l is taken from the unrounded float32 P, so
// the output's normaliser is exact to float32 while its numerator
// carries P's rounding.
//
// Memory: per worker the float32 tiles of Attention (64×256 scores and
// 64×D output forward; two 64×64 tiles and T row statistics backward), a
// bfloat16 copy of one tile (32 KiB forward, two 8 KiB tiles backward)
// and, backward, three float32 heads (dq, dk, dv: 3·T·D·4 bytes, 384 KiB
// at most) and two float32 rows of D for δ: Go-heap scratch reused across
// calls; no float32 copy of q, k, v, dout or out exists.

// attnBF16 runs the bfloat16 attention with scale (the scores' factor)
// and its products on kn, a pair kernel (sbgemm, or its Go twin in the
// tests) or a float32 kernel whose packers widen (the same algorithm with
// float32 FMAs); products of depth amxMinK or more run on deep instead
// when it is not nil (the AMX kernel, or its Go twin), as GemmHalf picks.
type attnBF16 struct {
	kn, deep *gemmKernel[float32]
	scale    float32
}

// gemm is C = op(A)·op(B) + beta·C for bfloat16 a and b and float32 c.
func (a attnBF16) gemm(g GemmArgs, x, y []uint16, c []float32) {
	g.Alpha = 1
	kn := a.kn
	if a.deep != nil && g.K >= amxMinK {
		kn = a.deep
	}
	gemmBias(kn, &sgemmJobs, g, operand[float32]{h: x, bf16: true}, operand[float32]{h: y, bf16: true}, nil, c)
}

// forward is AttentionHalf for bfloat16: units are (head, query block)
// pairs, as in Attention.
func (a attnBF16) forward(out []uint16, lse []float32, q, k, v []uint16, b, h, t, d int, causal bool) {
	nq := ceilDiv(t, attnFQ)
	attnFor(b*h*nq, b*h*t*t*d, func(lo, hi int) {
		sc := attnScratches.get()
		defer attnScratches.put(sc)
		s := scratchView[float32](&sc.s, attnFQ*attnFK)
		p16 := scratchView[uint16](&sc.p, attnFQ*attnFK)
		acc := scratchView[float32](&sc.acc, attnFQ*d)
		st := scratchView[float64](&sc.row, 2*attnFQ)
		for u := lo; u < hi; u++ {
			a.forwardBlock(out, lse, q, k, v, s, acc, p16, st, u/nq, u%nq*attnFQ, t, d, causal)
		}
	})
}

// forwardBlock computes the output rows [i0, i0+attnFQ) ∩ [0, t) of head
// bh, as attnForwardBlock with bfloat16 operands.
func (a attnBF16) forwardBlock(out []uint16, lse []float32, q, k, v []uint16, s, acc []float32, p16 []uint16, st []float64, bh, i0, t, d int, causal bool) {
	base := bh * t * d
	mq, nk, m, l, acc := attnBlockStart(st, acc, i0, t, d, causal)
	for j0 := 0; j0 < nk; j0 += attnFK {
		nb := min(attnFK, nk-j0)
		// S = scale·(Q_i·K_jᵀ), (mq, nb) with row stride attnFK.
		a.gemm(GemmArgs{TransB: true, M: mq, N: nb, K: d,
			OffA: base + i0*d, OffB: base + j0*d, LdA: d, LdB: d, LdC: attnFK}, q, k, s)
		attnScaleTile(s, attnFK, mq, nb, a.scale)
		var c [attnFQ]float64
		attnSoftmaxTile(s, attnFK, i0, j0, mq, nb, causal, m, l, c[:mq])
		attnRescale(acc, d, c[:mq])
		// O_i += bf16(P)·V_j.
		attnNarrowTile(p16, s, attnFK, mq, nb)
		a.gemm(GemmArgs{M: mq, N: d, K: nb, Beta: 1,
			OffB: base + j0*d, LdA: attnFK, LdB: d, LdC: d}, p16, v, acc)
	}
	for r := range mq {
		inv := 1 / l[r]
		o := acc[r*d : (r+1)*d]
		for x, v := range o {
			o[x] = float32(float64(v) * inv)
		}
		f32ToBF16(out[base+(i0+r)*d:][:d], o)
		lse[bh*t+i0+r] = float32(m[r] + math.Log(l[r]))
	}
}

// attnScaleTile multiplies the (rows, cols) tile s (row stride ld) by
// scale (the vector kernels' scalePart: assembly where the CPU allows).
func attnScaleTile(s []float32, ld, rows, cols int, scale float32) {
	for r := range rows {
		row := s[r*ld : r*ld+cols]
		scalePart(row, row, scale, false)
	}
}

// attnNarrowTile rounds the (rows, cols) float32 tile src to bfloat16 in
// dst, both of row stride ld.
func attnNarrowTile(dst []uint16, src []float32, ld, rows, cols int) {
	for r := range rows {
		f32ToBF16(dst[r*ld:r*ld+cols], src[r*ld:r*ld+cols])
	}
}

// attnRescale multiplies row r of the accumulator acc (rows of d) by c[r]
// where c[r] ≠ 1: the online softmax's correction when a row's maximum
// grew.
func attnRescale[T Float](acc []T, d int, c []float64) {
	for r, cr := range c {
		if cr != 1 {
			cs := T(cr)
			row := acc[r*d : (r+1)*d]
			for x := range row {
				row[x] *= cs
			}
		}
	}
}
